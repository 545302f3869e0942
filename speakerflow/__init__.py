"""speakerflow: speaker-centred long-term memory for multi-party conversations and event streams."""
__version__ = "0.1.0"

"""speakerflow: speaker-centred long-term memory for multi-party conversations and event streams."""
__version__ = "0.1.0"

__all__ = ["Memory", "__version__"]


def __getattr__(name: str):
    # lazy: ``import speakerflow`` (the CLI's version flag) stays free of the store stack
    if name == "Memory":
        from speakerflow.memory import Memory

        return Memory
    raise AttributeError(f"module 'speakerflow' has no attribute {name!r}")

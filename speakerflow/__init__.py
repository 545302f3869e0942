"""speakerflow: speaker-centred long-term memory for multi-party conversations and event streams."""

__version__ = "0.1.0"

__all__ = ["Memory", "__version__"]


def __getattr__(name: str):
    # ``from speakerflow import Memory`` loads speakerflow.memory on first use only, so a plain
    # ``import speakerflow`` (the CLI's --version and --help) pulls in no store stack; the
    # import is a plain statement, which the layer contract (pyproject.toml) sees
    if name == "Memory":
        from speakerflow.memory import Memory

        return Memory
    raise AttributeError(f"module 'speakerflow' has no attribute {name!r}")

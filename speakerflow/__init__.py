"""speakerflow: speaker-centred long-term memory for multi-party conversations and event streams."""

__version__ = "0.1.0"

__all__ = ["Memory", "__version__"]


def __getattr__(name: str):
    # ``from speakerflow import Memory`` loads speakerflow.memory on first use only: a plain
    # ``import speakerflow`` (the CLI's --version, benchmarks reading __file__) pulls in no
    # store stack and no import from the top layer (the layers contract in pyproject.toml)
    if name == "Memory":
        import importlib

        return importlib.import_module("speakerflow.memory").Memory
    raise AttributeError(f"module 'speakerflow' has no attribute {name!r}")

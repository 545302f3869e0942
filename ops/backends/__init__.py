"""Chat-model backends behind one interface (see :mod:`.base`)."""
from .base import ChatBackend, ChatResult, ScriptedChat

__all__ = ["ChatBackend", "ChatResult", "ScriptedChat"]

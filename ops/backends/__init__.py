"""Chat-model backends behind one interface (see :mod:`.base`).

``make_backend(kind, **cfg)`` builds ``openai``, ``transformers`` or ``onnx`` backends
(heavy libraries are imported only for the kind asked for).
"""

from speakerflow.ops.backends.base import ChatBackend, ChatResult, ScriptedChat
from speakerflow.ops.backends.errors import (
    BackendConfigError,
    BackendError,
    BackendRequestError,
    BackendResponseError,
    BackendUnavailableError,
)
from speakerflow.ops.backends.factory import BACKENDS, make_backend
from speakerflow.ops.backends.json_repair import RepairResult, repair_json

__all__ = [
    "BACKENDS",
    "BackendConfigError",
    "BackendError",
    "BackendRequestError",
    "BackendResponseError",
    "BackendUnavailableError",
    "ChatBackend",
    "ChatResult",
    "RepairResult",
    "ScriptedChat",
    "make_backend",
    "repair_json",
]

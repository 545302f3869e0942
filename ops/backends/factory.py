"""``make_backend(kind, **cfg)``: build a chat backend by name from typed settings.

======== ======================================== ==========================
kind     class (module)                           settings
======== ======================================== ==========================
openai   :class:`~.openai.OpenAIChat`             :class:`~.openai.OpenAIConfig`
transformers :class:`~.transformers.TransformersChat` :class:`~.transformers.TransformersConfig`
onnx     :class:`~.onnx.OnnxChat`                 :class:`~.local.LocalModelConfig`
scripted :class:`~.base.ScriptedChat`             ``replies=[...]`` (tests)
======== ======================================== ==========================

Modules are imported only when their kind is asked for, so ``openai`` needs neither
torch nor onnxruntime. Unknown settings are refused with the list of valid ones.

>>> make_backend("scripted", replies=['{"actions": []}']).chat([]).text
'{"actions": []}'
"""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import ValidationError

from speakerflow.ops.backends.base import ChatBackend, ScriptedChat
from speakerflow.ops.backends.errors import BackendConfigError

#: kind -> (module under speakerflow.ops.backends, class name)
BACKENDS: dict[str, tuple[str, str]] = {
    "openai": ("openai", "OpenAIChat"),
    "transformers": ("transformers", "TransformersChat"),
    "onnx": ("onnx", "OnnxChat"),
}


def backend_class(kind: str) -> type:
    """The class implementing ``kind`` (imports its module)."""
    if kind not in BACKENDS:
        raise BackendConfigError(
            f"unknown chat backend {kind!r}; choose one of {sorted(BACKENDS) + ['scripted']}"
        )
    module, cls = BACKENDS[kind]
    return getattr(importlib.import_module(f"{__package__}.{module}"), cls)


def make_backend(kind: str, **cfg: Any) -> ChatBackend:
    """Build the chat backend ``kind`` with settings ``cfg`` (validated by its config model).

    Raises
    ------
    BackendConfigError
        For an unknown kind, an unknown or invalid setting, or a missing model/key.
    """
    if kind == "scripted":
        return ScriptedChat(cfg.get("replies", []))
    cls: Any = backend_class(kind)
    config_cls = cls.Config
    try:
        config = config_cls(**cfg)
    except ValidationError as exc:
        fields = sorted(config_cls.model_fields)
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise BackendConfigError(
            f"{kind} backend settings: {problems} (valid settings: {fields})"
        ) from None
    return cls(config)

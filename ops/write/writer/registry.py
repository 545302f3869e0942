"""Writer backends by name: ``rules`` (offline default), ``local`` (the learned small model:
:mod:`.local`), ``openai``, ``transformers``, ``onnx``, ``none``.

The model-based kinds are built by :func:`speakerflow.ops.write.writer.chat.make_chat_writer`,
imported only when asked for, so ``rules`` needs no model library.

>>> make_writer("rules").name
'rules'
>>> make_writer("none") is None
True
"""

from __future__ import annotations

from typing import Any

from speakerflow.ops.write.interfaces import WriterBackend

#: Names accepted by :func:`make_writer` (and by ``speakerflow ingest --writer``).
WRITER_KINDS: tuple[str, ...] = ("rules", "local", "openai", "transformers", "onnx", "none")
CHAT_KINDS: tuple[str, ...] = ("openai", "transformers", "onnx")


def make_writer(kind: str = "rules", **config: Any) -> WriterBackend | None:
    """Build the WriterBackend named ``kind``; ``"none"`` means "do not write derived records".

    ``config`` is passed to the backend (``model``, ``base_url``, ``device`` ... for chat
    kinds); ``None`` values are dropped so backend defaults apply.
    """
    config = {k: v for k, v in config.items() if v is not None}
    if kind == "none":
        return None
    if kind == "rules":
        from speakerflow.ops.write.writer.rules import RulesWriter

        return RulesWriter(**config)
    if kind == "local":
        from speakerflow.ops.write.writer.local import LocalWriter

        return LocalWriter(**{k: v for k, v in config.items() if k != "base_url"})
    if kind in CHAT_KINDS:
        try:
            from speakerflow.ops.write.writer.chat import make_chat_writer
        except ImportError as exc:
            raise ValueError(
                f"writer {kind!r} is not available in this build ({exc}); use --writer rules"
            ) from None
        return make_chat_writer(kind, **config)
    raise ValueError(f"unknown writer {kind!r}; choose one of {list(WRITER_KINDS)}")


#: The chat kinds that take a model folder after ``:`` in a spec.
_FOLDER_KINDS = ("transformers", "onnx")


def writer_from_spec(spec: str, **config: Any) -> WriterBackend | None:
    """:func:`make_writer` from one string: a kind, ``local:FOLDER`` (an adapter, a base such
    as ``smollm2-135m`` or an ONNX export), ``local@DECODING[:FOLDER]`` (the learned Writer
    with that decoding: ``free``, ``structured``, ``extract``) or ``transformers:FOLDER`` /
    ``onnx:FOLDER``; ``config`` as for :func:`make_writer`.

    >>> writer_from_spec("rules").name
    'rules'
    """
    kind, _, folder = spec.partition(":")
    if kind.startswith("local@"):
        kind, config = "local", {**config, "decoding": kind.split("@", 1)[1]}
    if folder and kind == "local":
        config = {**config, "model": folder}
    elif folder and kind in _FOLDER_KINDS:
        config = {**config, "model_dir": folder}
    elif folder:
        raise ValueError(
            f"writer {spec!r}: only local / {' / '.join(_FOLDER_KINDS)} take a model folder "
            "after ':' (e.g. onnx:runs/grpo-onnx)"
        )
    return make_writer(kind, **config)

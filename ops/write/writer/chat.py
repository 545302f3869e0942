"""The chat-model Writer: prompt -> chat backend -> JSON repair -> raw actions.

:class:`ChatWriter` implements :class:`~.base.WriterBackend` on top of any
:class:`~speakerflow.ops.backends.base.ChatBackend`. It never raises on bad model output:
unusable text becomes ``WriterOutput.parse_error`` (the segment is then one reject), and
items of the action list that are not JSON objects are passed on as
``{"_invalid": item}`` so that ``Validate`` rejects them with a reason. A per-call backend
failure (retries exhausted, a refused request) is reported the same way; configuration
errors (no model folder, no key) raise at construction.

>>> from speakerflow.ops.backends.base import ScriptedChat
>>> w = ChatWriter(ScriptedChat(['```json\\n{"actions": [{"action": "NOOP"},]}\\n```']))
>>> seg = Segment("s#0", "g", ("Ana",), ({"msg_id": "m1", "speaker": "Ana", "text": "hi",
...               "ts": "2026-01-01T00:00:00Z", "session_id": "s", "turn": 0},))
>>> out = w.propose(seg)
>>> out.actions, out.parse_error, out.model_calls
([{'action': 'NOOP'}], None, 1)
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from speakerflow.ops.backends.base import ChatBackend
from speakerflow.ops.backends.errors import BackendConfigError, BackendError
from speakerflow.ops.backends.json_repair import repair_json
from speakerflow.ops.write.interfaces import Segment, WriterOutput
from speakerflow.ops.write.writer.prompt import build_writer_messages


class ChatWriterConfig(BaseModel):
    """Generation settings of the chat Writer.

    ``max_tokens`` bounds the reply (tokens); ``temperature`` 0 means greedy decoding
    (the default, for repeatable writes); ``tokens_per_action`` raises ``max_tokens`` for
    segments that allow many actions (``max(max_tokens, tokens_per_action * max_actions)``,
    capped at ``max_tokens_cap``); ``max_heads`` bounds the current-memory entries shown
    in the prompt (None: all; see :func:`~.prompt.select_heads`), so that long-running
    groups still fit the model's context.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_tokens: int = Field(default=1024, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    tokens_per_action: int = Field(default=80, ge=0)
    max_tokens_cap: int = Field(default=4096, ge=1)
    max_heads: int | None = Field(default=200, ge=0)


def extract_actions(value: Any) -> tuple[list[dict[str, Any]], str | None]:
    """The action list inside decoded JSON, or an error naming the shape that was found.

    Accepted shapes: ``{"actions": [...]}``, a bare list of actions, or one action object
    (``{"action": ...}``). Non-object items come back as ``{"_invalid": item}``.
    """
    if isinstance(value, dict):
        if "actions" in value:
            value = value["actions"]
        elif "action" in value:
            value = [value]
        else:
            return [], f"JSON object without an 'actions' list (keys: {sorted(value)[:8]})"
    if not isinstance(value, list):
        return [], f"'actions' should be a list, got {type(value).__name__}"
    return [a if isinstance(a, dict) else {"_invalid": a} for a in value], None


def parse_writer_text(text: str) -> tuple[list[dict[str, Any]], str | None, tuple[str, ...]]:
    """Model text -> (raw action dicts, parse error or None, JSON repairs applied)."""
    repaired = repair_json(text)
    if not repaired.ok:
        return [], repaired.error, repaired.repairs
    actions, error = extract_actions(repaired.value)
    return actions, error, repaired.repairs


class ChatWriter:
    """A :class:`~.base.WriterBackend` that asks a chat model for the segment's actions.

    ``repairs`` counts JSON repairs by kind and ``parse_errors`` the segments whose reply
    was unusable, over the writer's life (for run metadata).
    """

    def __init__(
        self,
        backend: ChatBackend,
        config: ChatWriterConfig | None = None,
        **overrides: Any,
    ):
        base = config.model_dump() if config is not None else {}
        self.config = ChatWriterConfig(**{**base, **overrides})
        self.backend = backend
        self.name = f"chat:{getattr(backend, 'name', type(backend).__name__)}"
        self.repairs: dict[str, int] = {}
        self.parse_errors = 0

    def _budget(self, segment: Segment) -> int:
        cfg = self.config
        return min(
            cfg.max_tokens_cap, max(cfg.max_tokens, cfg.tokens_per_action * segment.max_actions)
        )

    def propose(self, segment: Segment) -> WriterOutput:
        """Ask the model once for ``segment``; never raises on bad output (see module doc)."""
        messages = build_writer_messages(segment, max_heads=self.config.max_heads)
        try:
            result = self.backend.chat(
                messages, max_tokens=self._budget(segment), temperature=self.config.temperature
            )
        except BackendConfigError:
            raise
        except BackendError as exc:
            self.parse_errors += 1
            return WriterOutput(
                actions=[], raw_text=None, model_calls=1, parse_error=f"backend failed: {exc}"
            )
        actions, error, repairs = parse_writer_text(result.text)
        for name in repairs:
            self.repairs[name] = self.repairs.get(name, 0) + 1
        if error:
            self.parse_errors += 1
        return WriterOutput(
            actions=actions,
            raw_text=result.text,
            parse_error=error,
            tokens=result.tokens,
            model_calls=1,
        )


#: Settings consumed by the Writer itself; every other key goes to the chat backend.
WRITER_KEYS = frozenset(ChatWriterConfig.model_fields)


def make_chat_writer(kind: str, **cfg: Any) -> ChatWriter:
    """A :class:`ChatWriter` over ``make_backend(kind, ...)``.

    ``cfg`` mixes Writer settings (:class:`ChatWriterConfig` fields) and backend settings
    (e.g. ``model_dir=...`` for ``transformers``/``onnx``, ``base_url``/``model`` for
    ``openai``); they are split by name.

    >>> make_chat_writer("scripted", replies=[]).name
    'chat:scripted'
    """
    from speakerflow.ops.backends.factory import make_backend

    writer_cfg = {k: v for k, v in cfg.items() if k in WRITER_KEYS}
    backend_cfg = {k: v for k, v in cfg.items() if k not in WRITER_KEYS}
    return ChatWriter(make_backend(kind, **backend_cfg), **writer_cfg)

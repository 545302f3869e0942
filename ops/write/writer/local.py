"""The learned local Writer: a small language model (SmolLM2-135M + a LoRA adapter by default)
run in-process through the ``transformers`` (torch) or ``onnx`` (onnxruntime) backend.

A segment (one session window of the write path, up to 25 messages) is cut into windows of
``window`` messages (default 4, as in training: :mod:`speakerflow.training.windows`); every
window gets the compact prompt
(:func:`~speakerflow.ops.write.writer.prompt.build_compact_messages`: the segment's heads,
short ``[n]`` / ``E<k>`` ids) and all windows of the segment are generated as one padded
batch (greedy by default; NOOP only above a calibrated probability when the model folder
says so: ``noop_min_p``). The replies are repaired and parsed like the chat Writer's, their
short ids are mapped back, and the actions of all windows go on, unvalidated, to ``Validate``
(nothing reaches the store without it). A window whose reply is not usable JSON adds one
``{"_invalid": ...}`` item, which Validate refuses with the reason; the other windows'
actions still count. Windows of one segment do not see each other's writes (they share the
heads from before the segment); Validate drops exact repeats. With ``decoding="structured"``
(torch only) each window is decoded alone by the schema walk of
:mod:`~speakerflow.ops.write.writer.structured` instead: the model only chooses, code writes
the JSON, so no reply needs repair.

``model`` is a LoRA adapter folder (its ``adapter_config.json`` names the base, e.g.
``smollm2-135m``), a base spec (:func:`~speakerflow.ops.backends.models.resolve_model`), or an
ONNX export folder (``model.onnx``: the ``onnx`` backend). Default: the adapter shipped in
:data:`SHIPPED_ADAPTER`.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from speakerflow.ops.write.interfaces import Segment, WriterOutput
from speakerflow.ops.write.writer.chat import parse_writer_text
from speakerflow.ops.write.writer.prompt import (
    REPLY_OPENING,
    CompactPrompt,
    build_compact_messages,
    unalias_actions,
)

#: The trained adapter committed with the repository (see its TRAINING_CARD.md).
SHIPPED_ADAPTER = Path(__file__).with_name("smollm2_writer")
#: Decoding settings calibrated for a model folder, read from beside its weights.
DECODING_FILE = "decoding.json"
#: How a reply is decoded: free text then JSON repair, or the schema walk of
#: :mod:`~speakerflow.ops.write.writer.structured` (``extract``: the walk with contents
#: chosen among the window's statements instead of written).
DECODINGS = ("free", "structured", "extract")
_WALKS = ("structured", "extract")
#: The largest ``more_bias`` (nats) a folder or a config may set.
MAX_BIAS = 100.0


def _folder_settings(model: str) -> tuple[Path, dict[str, Any]]:
    path = Path(model) / DECODING_FILE
    return path, (json.loads(path.read_text()) if path.is_file() else {})


def folder_noop_min_p(model: str) -> float:
    """The ``noop_min_p`` of ``model``'s :data:`DECODING_FILE` (0.0 when the folder has none)."""
    path, settings = _folder_settings(model)
    value = settings.get("noop_min_p", 0.0)
    if not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{path}: noop_min_p must be a number in [0, 1], got {value!r}")
    return float(value)


def folder_more_bias(model: str) -> float:
    """The ``more_bias`` of ``model``'s :data:`DECODING_FILE` (0.0 when the folder has none)."""
    path, settings = _folder_settings(model)
    value = settings.get("more_bias", 0.0)
    if not isinstance(value, int | float) or not -MAX_BIAS <= value <= MAX_BIAS:
        raise ValueError(f"{path}: more_bias must be a number in [-100, 100], got {value!r}")
    return float(value)


def folder_decoding(model: str) -> str:
    """The ``decoding`` of ``model``'s :data:`DECODING_FILE` (``free`` when it names none)."""
    path, settings = _folder_settings(model)
    value = settings.get("decoding", "free")
    if value not in DECODINGS:
        raise ValueError(f"{path}: decoding must be one of {list(DECODINGS)}, got {value!r}")
    return str(value)


class LocalWriterConfig(BaseModel):
    """Settings of :class:`LocalWriter`.

    ``backend`` ``auto`` picks ``onnx`` for a folder holding ``model.onnx``, else
    ``transformers``; ``window`` messages per prompt; ``max_heads`` current-memory entries
    shown; ``max_new_tokens`` per window; ``temperature`` 0 = greedy; ``batch`` windows per
    ``generate`` call; ``reply_prefix`` is forced as the start of every reply
    (:data:`~speakerflow.ops.write.writer.prompt.REPLY_OPENING`: the opening of the JSON the
    contract asks for, token for token as every training target starts), "" for none (free
    decoding only: a structured reply always opens so);
    ``noop_min_p``: a reply may open with NOOP only where the model gives NOOP at least this
    probability there (otherwise the best action opens it), None = the ``noop_min_p`` of the
    model folder's :data:`DECODING_FILE` (written by ``speakerflow train calibrate-noop`` on
    the training windows), else 0 (plain greedy); ``decoding`` ``free`` (generate, then
    repair and parse the JSON) or ``structured`` (the model only chooses where the contract
    leaves a choice, code writes the syntax: :mod:`~speakerflow.ops.write.writer.structured`;
    torch backend only, refused for ``onnx``) or ``extract`` (the same walk, each content
    chosen among the window's own statements and cited), None = the ``decoding`` of the folder's
    :data:`DECODING_FILE`, else ``free``; ``max_actions`` and ``content_tokens`` bound a
    structured reply (actions per window, tokens per content); ``more_bias`` is added to
    the log-probability of opening another action in a structured or extract reply (None =
    the folder's :data:`DECODING_FILE` value, written by ``speakerflow train calibrate-more``,
    else 0).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())

    model: str = Field(default_factory=lambda: str(SHIPPED_ADAPTER))
    backend: Literal["auto", "transformers", "onnx"] = "auto"
    device: Literal["auto", "cpu", "cuda"] = "auto"
    window: int = Field(default=4, ge=1)
    max_heads: int = Field(default=8, ge=0)
    max_new_tokens: int = Field(default=160, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    batch: int = Field(default=8, ge=1)
    reply_prefix: str = REPLY_OPENING
    noop_min_p: float | None = Field(default=None, ge=0.0, le=1.0)
    decoding: Literal["free", "structured", "extract"] | None = None
    max_actions: int = Field(default=6, ge=1)
    content_tokens: int = Field(default=48, ge=1)
    more_bias: float | None = Field(default=None, ge=-MAX_BIAS, le=MAX_BIAS)


def backend_kind(model: str, choice: str = "auto") -> str:
    """``onnx`` for an exported folder (``model.onnx``), else ``transformers`` (unless chosen)."""
    if choice != "auto":
        return choice
    return "onnx" if (Path(model) / "model.onnx").is_file() else "transformers"


class LocalWriter:
    """A :class:`~speakerflow.ops.write.interfaces.WriterBackend` on a local model.

    See the module docstring.

    Counters over the writer's life: ``windows``, ``parse_errors`` (windows whose reply was
    unusable), ``repairs`` (JSON repairs by kind), ``generate_s`` (seconds in generation) and
    ``messages`` (messages written), so callers can report messages per second.
    """

    def __init__(self, config: LocalWriterConfig | None = None, **overrides: Any):
        from speakerflow.ops.backends.errors import BackendConfigError
        from speakerflow.ops.backends.factory import make_backend

        base = config.model_dump() if config is not None else {}
        self.config = LocalWriterConfig(**{**base, **overrides})
        cfg = self.config
        kind = backend_kind(cfg.model, cfg.backend)
        self.decoding = cfg.decoding or folder_decoding(cfg.model)
        if self.decoding in _WALKS and kind != "transformers":
            raise BackendConfigError(
                f"{self.decoding} decoding needs the transformers (torch) backend, not {kind!r} "
                f"({cfg.model}); use decoding='free' for an ONNX export"
            )
        self.backend: Any = make_backend(
            kind, model_dir=cfg.model, device=cfg.device, max_batch=cfg.batch
        )
        self.noop_min_p = folder_noop_min_p(cfg.model) if cfg.noop_min_p is None else cfg.noop_min_p
        self.more_bias = folder_more_bias(cfg.model) if cfg.more_bias is None else cfg.more_bias
        self.name = f"local:{kind}" + (f"+{self.decoding}" if self.decoding in _WALKS else "")
        self.windows = self.parse_errors = self.messages = 0
        self.generate_s = 0.0
        self.repairs: dict[str, int] = {}
        self.endings: dict[str, int] = {}  # how structured contents ended (stop, cap, repeat)

    def _windows(self, segment: Segment) -> list[Segment]:
        size, msgs = self.config.window, segment.messages
        return [replace(segment, messages=msgs[i : i + size]) for i in range(0, len(msgs), size)]

    def propose(self, segment: Segment) -> WriterOutput:
        """Every window of ``segment`` in one batch; the actions of all windows, unvalidated."""
        cfg = self.config
        wins = self._windows(segment)
        prompts = [build_compact_messages(w, max_heads=cfg.max_heads) for w in wins]
        if self.decoding in _WALKS:
            return self._propose_structured(segment, wins, prompts)
        start = time.perf_counter()
        results = self.backend.chat_batch(
            [p.chat for p in prompts],
            max_tokens=cfg.max_new_tokens,
            temperature=cfg.temperature,
            prefix=cfg.reply_prefix,
            **({"gate": ("NOOP", self.noop_min_p)} if self.noop_min_p > 0 else {}),
        )
        self.generate_s += time.perf_counter() - start
        self.windows += len(wins)
        self.messages += len(segment.messages)
        actions: list[Any] = []
        texts, tokens = [], 0
        for i, (prompt, result) in enumerate(zip(prompts, results, strict=True)):
            tokens += result.tokens
            texts.append(result.text)
            found, error, repairs = parse_writer_text(result.text)
            for name in repairs:
                self.repairs[name] = self.repairs.get(name, 0) + 1
            if error:
                self.parse_errors += 1
                actions.append({"_invalid": f"window {i + 1}: {error}"})
                continue
            actions += unalias_actions(found, prompt)
        return WriterOutput(
            actions=actions,
            raw_text="\n".join(texts),
            tokens=tokens,
            model_calls=len(wins),
        )

    def _propose_structured(
        self, segment: Segment, wins: list[Segment], prompts: list[CompactPrompt]
    ) -> WriterOutput:
        """One window at a time: one prompt encoding, then the schema walk over its cache."""
        from speakerflow.ops.backends.structured import decoder_for
        from speakerflow.ops.write.writer.structured import StructuredSettings, structured_reply

        cfg = self.config
        settings = StructuredSettings(
            cfg.max_actions,
            cfg.content_tokens,
            self.noop_min_p,
            content="extract" if self.decoding == "extract" else "generate",
            more_bias=self.more_bias,
        )
        roster = list(segment.roster) or sorted({str(m["speaker"]) for m in segment.messages})
        actions: list[Any] = []
        texts, tokens = [], 0
        start = time.perf_counter()
        for win, prompt in zip(wins, prompts, strict=True):
            dec = decoder_for(self.backend, prompt.chat, REPLY_OPENING)
            reply = structured_reply(dec, prompt, roster, settings, win.messages)
            for why, n in reply.endings.items():
                self.endings[why] = self.endings.get(why, 0) + n
            texts.append(reply.text)
            tokens += dec.fed
            actions += unalias_actions(reply.actions, prompt)
        self.generate_s += time.perf_counter() - start
        self.windows += len(prompts)
        self.messages += len(segment.messages)
        return WriterOutput(
            actions=actions, raw_text="\n".join(texts), tokens=tokens, model_calls=len(prompts)
        )

    def throughput(self) -> dict[str, Any]:
        """Windows, messages and messages per second of generation so far (structured
        decoding: also how its contents ended, ``content_endings``)."""
        secs = self.generate_s or float("nan")
        extra = {"content_endings": dict(self.endings)} if self.decoding in _WALKS else {}
        return {
            **extra,
            "windows": self.windows,
            "messages": self.messages,
            "generate_s": round(self.generate_s, 3),
            "messages_per_s": round(self.messages / secs, 3) if self.generate_s else 0.0,
        }

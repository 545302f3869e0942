"""The Writer operator: messages (with ``segment_id``) -> raw proposals, one row per action.

For each segment it builds a :class:`~speakerflow.ops.writer.base.Segment` (roster and
aliases from the store, the current heads of the four derived layers), asks the
WriterBackend for actions and emits them *unvalidated*: ``payload`` is the action as JSON
text, ``position`` its index in the backend's output. A backend whose text was not usable
JSON yields one row with ``parse_error`` set (Validate turns it into a reject).

The segments it built are left in ``ctx.state["segments"]`` (id -> Segment) for Validate
and Upsert. Heads are read once per call, so give it one segment at a time when later
segments must see earlier writes (``write_group`` does).
"""
from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from speakerflow.ops.base import Context, Operator, OperatorConfig
from speakerflow.ops.registry import register
from speakerflow.ops.segment import build_segments

from .base import WriterBackend

#: One raw proposal per row.
PROPOSAL_SCHEMA = pa.schema([
    pa.field("segment_id", pa.string(), nullable=False),
    pa.field("position", pa.int64(), nullable=False),   # index in the backend output; -1 = whole output
    pa.field("payload", pa.string()),                   # the action as JSON text (may be any JSON value)
    pa.field("parse_error", pa.string()),               # set when the output was not usable JSON
])


def current_heads(store: Any) -> list[dict[str, Any]]:
    """Head records of the store, as the dicts a Segment carries."""
    if store is None:
        return []
    from speakerflow.graphs.records import heads

    keep = ("entry_id", "layer", "owner", "source", "utype", "content", "event", "valid_at")
    return [{k: h[k] for k in keep} for h in heads(store)]


@register
class Writer(Operator):
    """Ask a WriterBackend for ADD / UPDATE / NOOP actions per segment; meters tokens and calls."""

    name = "writer"
    consumes = ("msg_id", "session_id", "turn", "ts", "speaker", "text", "segment_id")
    produces = PROPOSAL_SCHEMA

    class Config(OperatorConfig):
        pass

    def __init__(self, backend: WriterBackend | None = None, config: OperatorConfig | dict | None = None, **kw: Any):
        super().__init__(config, **kw)
        self.backend = backend

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        backend = self.backend or ctx.backends.get("writer")
        if backend is None:
            raise ValueError("the writer operator needs a backend: Writer(backend) or ctx.backends['writer']")
        store = ctx.store
        roster = store.roster() if store is not None else ctx.state.get("roster", [])
        aliases = store.aliases() if store is not None else ctx.state.get("aliases", {})
        group_id = store.group_id if store is not None else ctx.state.get("group_id", "group")
        segments = build_segments(table, group_id, roster, current_heads(store), aliases)
        known = ctx.state.setdefault("segments", {})
        rows: list[dict[str, Any]] = []
        for seg in segments:
            known[seg.segment_id] = seg
            out = backend.propose(seg)
            self.stats.tokens += out.tokens
            self.stats.model_calls += out.model_calls
            if out.parse_error:
                rows.append({"segment_id": seg.segment_id, "position": -1, "payload": out.raw_text,
                             "parse_error": out.parse_error})
                continue
            for i, action in enumerate(out.actions):
                rows.append({"segment_id": seg.segment_id, "position": i,
                             "payload": json.dumps(action, ensure_ascii=False, default=str), "parse_error": None})
        self.stats.bump("segments", len(segments))
        return pa.Table.from_pylist(rows, schema=PROPOSAL_SCHEMA)

"""The Writer operator: messages (with ``segment_id``) -> raw proposals, one row per action.

For each segment it builds a :class:`~speakerflow.ops.write.interfaces.Segment` (roster and
aliases from the store, the current heads of the four derived layers), asks the
WriterBackend for actions and emits them *unvalidated*: ``payload`` is the action as JSON
text, ``position`` its index in the backend's output. A backend whose text was not usable
JSON yields one row with ``parse_error`` set (Validate turns it into a reject).

The segments it built are left in ``ctx.state["segments"]`` (id -> Segment) for Validate
and Upsert. Heads are read once per call, so give it one segment at a time when later
segments must see earlier writes: ``Segmenter() >> ForEach("segment_id", Writer(b) >>
Validate() >> Upsert())`` (``write_group`` runs exactly that).

Messages already in the store's watermark (:func:`~speakerflow.graphs.records.written_ids`)
are skipped (``stats.extra["skipped_written"]``), so running a pipeline twice writes
nothing new; the ids it does hand to the backend wait in ``ctx.state[PENDING_KEY]`` until
Upsert has written their records and adds them to the watermark.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from dataclasses import replace
from typing import Any

import pyarrow as pa
from pydantic import Field

from speakerflow.graphs.records import written_ids
from speakerflow.ops.core.base import Context, Operator, OperatorConfig
from speakerflow.ops.core.registry import register
from speakerflow.ops.write.interfaces import PENDING_KEY, WriterBackend
from speakerflow.ops.write.segment import build_segments
from speakerflow.ops.write.writer.registry import make_writer

#: One raw proposal per row.
PROPOSAL_SCHEMA = pa.schema(
    [
        pa.field("segment_id", pa.string(), nullable=False),
        pa.field(
            "position", pa.int64(), nullable=False
        ),  # index in the backend output; -1 = whole output
        pa.field("payload", pa.string()),  # the action as JSON text (may be any JSON value)
        pa.field("parse_error", pa.string()),  # set when the output was not usable JSON
    ]
)


def current_heads(store: Any) -> list[dict[str, Any]]:
    """Head records of the store, as the dicts a Segment carries."""
    if store is None:
        return []
    from speakerflow.graphs.records import heads

    keep = (
        "entry_id",
        "layer",
        "owner",
        "source",
        "utype",
        "content",
        "event",
        "valid_at",
        "from_ids",
    )
    return [{k: h[k] for k in keep} for h in heads(store)]


def earlier_messages(store: Any, before: Any, limit: int) -> tuple[dict[str, Any], ...]:
    """The group's last ``limit`` messages said before ``before`` (oldest first), as Writer dicts.

    The message table is converted once per store table (memoised on the store object)."""
    from speakerflow.ops.write.segment import MESSAGE_COLUMNS

    table = store.messages()
    memo = getattr(store, "_writer_history_memo", None)
    if memo is None or memo[0] is not table:
        cols = [c for c in MESSAGE_COLUMNS if c in table.column_names]
        rows = table.select(cols).to_pylist()
        memo = (table, rows, [r["ts"] for r in rows])
        try:
            store._writer_history_memo = memo
        except AttributeError:  # a store that takes no attributes: no memo
            pass
    _, rows, times = memo
    end = bisect_left(times, before)
    return tuple(rows[max(0, end - limit) : end])


@register
class Writer(Operator):
    """Ask a WriterBackend for ADD / UPDATE / NOOP actions per segment; meters tokens and calls."""

    name = "writer"
    consumes = ("msg_id", "session_id", "turn", "ts", "speaker", "text", "segment_id")
    produces = PROPOSAL_SCHEMA

    class Config(OperatorConfig):
        skip_written: bool = Field(
            default=True, description="skip messages already in the store's watermark"
        )
        history: int = Field(
            default=2000,
            ge=0,
            description="earlier group messages a segment carries (citable "
            "beside its own, so records can span sessions); 0 = none",
        )

    config: Config

    def __init__(
        self,
        backend: WriterBackend | str | None = None,
        config: OperatorConfig | dict | None = None,
        **kw: Any,
    ):
        super().__init__(config, **kw)
        self.backend = backend
        self._named: dict[str, WriterBackend | None] = {}

    def _backend(self, ctx: Context) -> WriterBackend | None:
        """The backend given, else ``ctx.backends["writer"]``; a name goes through ``make_writer``
        (built once per operator); ``"none"`` gives None (write nothing)."""
        backend = self.backend or ctx.backends.get("writer")
        if backend is None:
            raise ValueError(
                'the writer operator needs a backend: Writer(backend), Writer("rules") '
                "or ctx.backends['writer']"
            )
        if isinstance(backend, str):
            if backend not in self._named:
                self._named[backend] = make_writer(backend)
            return self._named[backend]
        return backend

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        backend = self._backend(ctx)
        if backend is None:  # "none": no derived records; the watermark is left alone
            self.stats.bump("segments", 0)
            return PROPOSAL_SCHEMA.empty_table()
        store = ctx.store
        if store is not None and self.config.skip_written and table.num_rows:
            done = written_ids(store)
            keep = [i for i, m in enumerate(table["msg_id"].to_pylist()) if m not in done]
            self.stats.bump("skipped_written", table.num_rows - len(keep))
            if len(keep) < table.num_rows:
                table = table.take(pa.array(keep, pa.int64()))
        if table.num_rows == 0:
            self.stats.bump("segments", 0)
            return PROPOSAL_SCHEMA.empty_table()
        roster = store.roster() if store is not None else ctx.state.get("roster", [])
        aliases = store.aliases() if store is not None else ctx.state.get("aliases", {})
        group_id = store.group_id if store is not None else ctx.state.get("group_id", "group")
        segments = build_segments(table, group_id, roster, current_heads(store), aliases)
        if store is not None and self.config.history:
            segments = [
                replace(
                    seg, history=earlier_messages(store, seg.messages[0]["ts"], self.config.history)
                )
                for seg in segments
            ]
        known = ctx.state.setdefault("segments", {})
        pending = ctx.state.setdefault(PENDING_KEY, [])
        rows: list[dict[str, Any]] = []
        for seg in segments:
            known[seg.segment_id] = seg
            out = backend.propose(seg)
            pending.extend(m["msg_id"] for m in seg.messages)  # only once the backend has answered
            self.stats.tokens += out.tokens
            self.stats.model_calls += out.model_calls
            if out.parse_error:
                rows.append(
                    {
                        "segment_id": seg.segment_id,
                        "position": -1,
                        "payload": out.raw_text,
                        "parse_error": out.parse_error,
                    }
                )
                continue
            for i, action in enumerate(out.actions):
                rows.append(
                    {
                        "segment_id": seg.segment_id,
                        "position": i,
                        "payload": json.dumps(action, ensure_ascii=False, default=str),
                        "parse_error": None,
                    }
                )
        self.stats.bump("segments", len(segments))
        return pa.Table.from_pylist(rows, schema=PROPOSAL_SCHEMA)

"""Segmentation: cut a group's messages into Writer segments.

A segment is a run of at most ``window`` consecutive messages of ONE session (sessions
are never mixed), in (ts, turn) order. Its id is ``"<session_id>#<k>"`` where ``k`` is the
window number inside the session, computed over the messages being written in that run,
so the id is deterministic for the same input. ``Segment.max_actions`` =
``max(8, 2 * len(messages))`` bounds what a Writer may propose for it.

>>> import pyarrow as pa
>>> t = pa.table({"msg_id": ["a", "b", "c"], "session_id": ["s1", "s1", "s2"], "turn": [0, 1, 0],
...               "ts": [1, 2, 3]})
>>> Segmenter(window=25)(t)["segment_id"].to_pylist()
['s1#0', 's1#0', 's2#0']
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from pydantic import Field

from speakerflow.ops.base import Context, Operator, OperatorConfig, put_columns
from speakerflow.ops.registry import register
from speakerflow.ops.writer.base import Segment

#: Columns a Writer needs from each message.
MESSAGE_COLUMNS = ("msg_id", "session_id", "turn", "ts", "speaker", "text", "reply_to")


def segment_ids(table: pa.Table, window: int = 25) -> list[str]:
    """The segment id of each row of a message table (rows keep their order)."""
    if window < 1:
        raise ValueError(f"window must be >= 1 message, got {window}")
    sessions, ts, turns = (table[c].to_pylist() for c in ("session_id", "ts", "turn"))
    order = sorted(range(table.num_rows), key=lambda i: (sessions[i], ts[i], turns[i]))
    out = [""] * table.num_rows
    seen: dict[str, int] = {}
    for i in order:
        n = seen.get(sessions[i], 0)
        seen[sessions[i]] = n + 1
        out[i] = f"{sessions[i]}#{n // window}"
    return out


def segment_order(table: pa.Table) -> list[str]:
    """Segment ids by the time of their first message (then id): the order they are written."""
    first: dict[str, tuple] = {}
    for sid, ts, turn in zip(table["segment_id"].to_pylist(), table["ts"].to_pylist(), table["turn"].to_pylist(),
                             strict=True):
        key = (ts, turn)
        if sid not in first or key < first[sid]:
            first[sid] = key
    return sorted(first, key=lambda s: (first[s], s))


@register
class Segmenter(Operator):
    """Adds a ``segment_id`` column (passthrough) and hands the rows on in write order.

    Every input column flows on. Rows come out grouped by segment, segments in the order
    they are written (:func:`segment_order`), messages of a segment in (ts, turn) order, so
    ``ForEach("segment_id", ...)`` visits the segments in write order.
    """

    name = "segment"
    consumes = ("msg_id", "session_id", "turn", "ts")
    produces = pa.schema([("msg_id", pa.string()), ("session_id", pa.string()), ("turn", pa.int64()),
                          ("segment_id", pa.string())])
    passthrough = True

    class Config(OperatorConfig):
        window: int = Field(default=25, ge=1, description="messages per segment window")

    config: Config

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        table = put_columns(table, {"segment_id": segment_ids(table, self.config.window)}, self.produces)
        rank = {sid: i for i, sid in enumerate(segment_order(table))}
        sids, ts, turns = (table[c].to_pylist() for c in ("segment_id", "ts", "turn"))
        rows = sorted(range(table.num_rows), key=lambda i: (rank[sids[i]], ts[i], turns[i], i))
        return table.take(pa.array(rows, pa.int64())) if rows != list(range(table.num_rows)) else table


def build_segments(
    table: pa.Table,
    group_id: str,
    roster: Sequence[str],
    heads: Sequence[Mapping[str, Any]] = (),
    aliases: Mapping[str, Sequence[str]] | None = None,
    window: int = 25,
) -> list[Segment]:
    """Segments of a message table in write order (by first message time, then id).

    ``heads`` are attached to every segment as given; a caller that writes segment after
    segment should rebuild them (see :func:`speakerflow.pipelines.write_path.write_group`).
    """
    ids = table["segment_id"].to_pylist() if "segment_id" in table.column_names else segment_ids(table, window)
    cols = [c for c in MESSAGE_COLUMNS if c in table.column_names]
    rows = table.select(cols).to_pylist()
    grouped: dict[str, list[dict[str, Any]]] = {}
    for sid, row in zip(ids, rows, strict=True):
        grouped.setdefault(sid, []).append(row)
    out = []
    for sid, msgs in grouped.items():
        msgs.sort(key=lambda m: (m["ts"], m["turn"]))
        out.append(Segment(
            segment_id=sid, group_id=group_id, roster=tuple(roster), messages=tuple(msgs),
            heads=tuple(dict(h) for h in heads),
            aliases={k: tuple(v) for k, v in (aliases or {}).items() if v},
        ))
    out.sort(key=lambda s: (s.messages[0]["ts"], s.segment_id))
    return out

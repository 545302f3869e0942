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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from speakerflow.ops.core.base import Context, Operator, OperatorConfig, put_columns
from speakerflow.ops.core.registry import register
from speakerflow.ops.write.interfaces import Segment

#: Columns a Writer needs from each message.
MESSAGE_COLUMNS = ("msg_id", "session_id", "turn", "ts", "speaker", "text", "reply_to")


def _session_runs(table: pa.Table) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """Rows in (session, ts, turn) order (ties by row), each row's session in that order,
    and its position inside its session's run (column-wise: one Arrow sort)."""
    order = pc.sort_indices(
        table, sort_keys=[("session_id", "ascending"), ("ts", "ascending"), ("turn", "ascending")]
    ).to_numpy()
    sessions = table["session_id"].take(pa.array(order)).combine_chunks()
    codes = pc.dictionary_encode(sessions).indices.to_numpy()
    at = np.arange(len(order))
    start = np.ones(len(order), dtype=bool)
    start[1:] = codes[1:] != codes[:-1]
    position = at - np.maximum.accumulate(np.where(start, at, 0))
    return order, sessions, position


def segment_ids(table: pa.Table, window: int = 25) -> list[str]:
    """The segment id of each row of a message table (rows keep their order)."""
    if window < 1:
        raise ValueError(f"window must be >= 1 message, got {window}")
    if not table.num_rows:
        return []
    order, sessions, position = _session_runs(table)
    ids = pc.binary_join_element_wise(sessions, pa.array(position // window).cast(pa.string()), "#")
    out = np.empty(table.num_rows, dtype=object)
    out[order] = ids.to_numpy(zero_copy_only=False)
    return out.tolist()


@register
class Segmenter(Operator):
    """Adds a ``segment_id`` column (passthrough) and hands the rows on in write order.

    Every input column flows on. Rows come out grouped by segment, segments in the order
    they are written (by the (ts, turn) of their first message, then id), messages of a
    segment in (ts, turn) order, so
    ``ForEach("segment_id", ...)`` visits the segments in write order.
    """

    name = "segment"
    consumes = ("msg_id", "session_id", "turn", "ts")
    produces = pa.schema(
        [
            ("msg_id", pa.string()),
            ("session_id", pa.string()),
            ("turn", pa.int64()),
            ("segment_id", pa.string()),
        ]
    )
    passthrough = True

    class Config(OperatorConfig):
        window: int = Field(default=25, ge=1, description="messages per segment window")

    config: Config

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        table = put_columns(
            table, {"segment_id": segment_ids(table, self.config.window)}, self.produces
        )
        if not table.num_rows:
            return table
        # write order, column-wise: a segment's first message in (ts, turn) order is the first
        # row of its run in (session, ts, turn) order; rows sort by that message's (ts, turn),
        # then segment id, then their own (ts, turn), then row
        order, _, _ = _session_runs(table)
        seg = table["segment_id"].take(pa.array(order)).combine_chunks()
        codes = pc.dictionary_encode(seg).indices.to_numpy()
        first = np.ones(len(order), dtype=bool)
        first[1:] = codes[1:] != codes[:-1]
        head = order[np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))]
        lead = np.empty(len(order), dtype=np.int64)
        lead[order] = head  # each row -> the row of its segment's first message
        keys = pa.table(
            {
                "first_ts": table["ts"].take(pa.array(lead)),
                "first_turn": table["turn"].take(pa.array(lead)),
                "segment_id": table["segment_id"],
                "ts": table["ts"],
                "turn": table["turn"],
                "row": pa.array(np.arange(table.num_rows)),
            }
        )
        rows = pc.sort_indices(
            keys, sort_keys=[(c, "ascending") for c in keys.column_names]
        ).to_numpy()
        return table.take(pa.array(rows)) if np.any(rows != np.arange(len(rows))) else table


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
    ids = (
        table["segment_id"].to_pylist()
        if "segment_id" in table.column_names
        else segment_ids(table, window)
    )
    cols = [c for c in MESSAGE_COLUMNS if c in table.column_names]
    rows = table.select(cols).to_pylist()
    grouped: dict[str, list[dict[str, Any]]] = {}
    for sid, row in zip(ids, rows, strict=True):
        grouped.setdefault(sid, []).append(row)
    out = []
    for sid, msgs in grouped.items():
        msgs.sort(key=lambda m: (m["ts"], m["turn"]))
        out.append(
            Segment(
                segment_id=sid,
                group_id=group_id,
                roster=tuple(roster),
                messages=tuple(msgs),
                heads=tuple(dict(h) for h in heads),
                aliases={k: tuple(v) for k, v in (aliases or {}).items() if v},
            )
        )
    out.sort(key=lambda s: (s.messages[0]["ts"], s.segment_id))
    return out

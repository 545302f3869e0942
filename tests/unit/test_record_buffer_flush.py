"""RecordBuffer flushes at session ends, so a Writer run resumed after a crash starts at a
session start and cuts the same segments (the same record ids) as an uninterrupted run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa

from speakerflow.graphs import GroupStore
from speakerflow.graphs.records import SESSION_FLUSH_CAP, WRITTEN_KEY, RecordBuffer
from speakerflow.schemas import MESSAGE_SCHEMA


def _store(sessions: dict[str, int]) -> GroupStore:
    store = GroupStore("/unused", "team", in_memory=True)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [
        {
            "msg_id": f"{s}-{i}",
            "group_id": "team",
            "session_id": s,
            "turn": i,
            "ts": t0 + timedelta(minutes=i),
            "speaker": "Ana",
            "text": f"message {i}",
        }
        for s, n in sessions.items()
        for i in range(n)
    ]
    store.append_messages(pa.Table.from_pylist(rows, schema=MESSAGE_SCHEMA))
    return store


def test_auto_flush_waits_for_the_end_of_the_session():
    store = _store({"s1": 30, "s2": 10})
    buf = RecordBuffer(store, flush_every=1)
    buf.mark_written([f"s1-{i}" for i in range(25)])  # first window of s1: no flush yet
    assert store.meta(WRITTEN_KEY, []) == []
    buf.mark_written([f"s1-{i}" for i in range(25, 30)])  # s1 complete: flushed
    assert len(store.meta(WRITTEN_KEY)) == 30
    buf.mark_written([f"s2-{i}" for i in range(10)])
    assert len(store.meta(WRITTEN_KEY)) == 40


def test_a_very_long_session_is_flushed_at_the_cap():
    store = _store({"s1": 25 * (SESSION_FLUSH_CAP + 2)})
    buf = RecordBuffer(store, flush_every=1)
    for k in range(SESSION_FLUSH_CAP):
        buf.mark_written([f"s1-{i}" for i in range(25 * k, 25 * (k + 1))])
    assert len(store.meta(WRITTEN_KEY)) == 25 * SESSION_FLUSH_CAP

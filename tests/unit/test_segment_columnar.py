"""The column-wise Segmenter gives exactly what the row-at-a-time version gave (kept here as
the reference): segment ids and write order, with ties, interleaved sessions and chunked input."""

import random
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from speakerflow.ops.core.base import Context
from speakerflow.ops.write.segment import Segmenter, segment_ids


def _ids_rows(table, window):
    sessions, ts, turns = (table[c].to_pylist() for c in ("session_id", "ts", "turn"))
    order = sorted(range(table.num_rows), key=lambda i: (sessions[i], ts[i], turns[i]))
    out, seen = [""] * table.num_rows, {}
    for i in order:
        n = seen.get(sessions[i], 0)
        seen[sessions[i]] = n + 1
        out[i] = f"{sessions[i]}#{n // window}"
    return out


def _order_rows(table, ids):
    first = {}
    for sid, ts, turn in zip(ids, table["ts"].to_pylist(), table["turn"].to_pylist(), strict=True):
        if sid not in first or (ts, turn) < first[sid]:
            first[sid] = (ts, turn)
    rank = {s: i for i, s in enumerate(sorted(first, key=lambda s: (first[s], s)))}
    ts, turns = table["ts"].to_pylist(), table["turn"].to_pylist()
    return sorted(range(table.num_rows), key=lambda i: (rank[ids[i]], ts[i], turns[i], i))


def _table(rng, n, chunks):
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    rows = {
        "msg_id": [f"m{i}" for i in range(n)],
        "session_id": [rng.choice(["s1", "s2", "s10", "sé", "a"]) for _ in range(n)],
        "turn": [rng.randint(0, 5) for _ in range(n)],  # repeated turns: ties
        "ts": [t0 + timedelta(minutes=rng.randint(0, 30)) for _ in range(n)],
    }
    table = pa.table(rows)
    cut = sorted(rng.sample(range(1, n), chunks - 1)) if chunks > 1 and n > chunks else []
    parts = [table.slice(a, b - a) for a, b in zip([0, *cut], [*cut, n], strict=True)]
    return pa.concat_tables(parts)


@pytest.mark.parametrize("seed", range(12))
def test_columnar_segmenter_equals_the_row_version(seed):
    rng = random.Random(seed)
    table = _table(rng, rng.randint(1, 400), rng.randint(1, 4))
    window = rng.choice([1, 3, 25])
    ids = _ids_rows(table, window)
    assert segment_ids(table, window) == ids
    out = Segmenter(window=window)(table, Context())
    want = table.take(pa.array(_order_rows(table, ids), pa.int64()))
    assert out["msg_id"].to_pylist() == want["msg_id"].to_pylist()
    assert out["segment_id"].to_pylist() == [ids[i] for i in _order_rows(table, ids)]


def test_empty_table():
    empty = _table(random.Random(0), 3, 1).slice(0, 0)
    assert segment_ids(empty) == [] and Segmenter()(empty, Context()).num_rows == 0

"""System 1 ingest throughput: Kuzu + Tantivy + Parquet vs a Tantivy-only ingest.

Both runs index the same synthetic multi-party messages in the same process, one after the
other, so the ratio is robust to a noisy shared machine while the absolute rates are not.
"""

from __future__ import annotations

import random
import resource
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from speakerflow.graphs import Home, TantivyIndex
from speakerflow.schemas import MESSAGE_SCHEMA

WORDS = (
    "budget venue flight hotel decision plan team dinner vegetarian train porto lisbon "
    "deadline review launch client meeting agreed prefer think moved weekend report "
    "design bug release coffee running weather project risk market price"
).split()


def synthetic_messages(n: int, speakers: int = 8, group: str = "bench", seed: int = 7) -> pa.Table:
    """``n`` messages from ``speakers`` people in sessions of 50 turns (deterministic)."""
    rng = random.Random(seed)
    names = [f"person{i}" for i in range(speakers)]
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    cols: dict[str, list[Any]] = {
        k: [] for k in ("msg_id", "session_id", "turn", "ts", "speaker", "text")
    }
    for i in range(n):
        cols["msg_id"].append(f"m{i:08d}")
        cols["session_id"].append(f"s{i // 50:06d}")
        cols["turn"].append(i % 50)
        cols["ts"].append(t0 + timedelta(seconds=30 * i))
        cols["speaker"].append(names[rng.randrange(speakers)])
        cols["text"].append(" ".join(rng.choices(WORDS, k=rng.randint(6, 18))))
    table = pa.table(cols)
    table = table.append_column("group_id", pa.array([group] * n))
    return table.select([c for c in MESSAGE_SCHEMA.names if c in table.column_names])


def _folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run(n: int = 100_000, speakers: int = 8) -> dict:
    """Ingest ``n`` messages both ways and return the report dict."""
    table = synthetic_messages(n, speakers)
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        start = time.perf_counter()
        with home.open("bench", writable=True) as store:
            store.append_messages(table)
        full_s = time.perf_counter() - start
        disk = _folder_bytes(home.group_path("bench"))

        start = time.perf_counter()
        columns = {
            "doc_id": table["msg_id"].to_pylist(),
            "kind": ["message"] * n,
            **{
                c: table[c].to_pylist() for c in ("group_id", "speaker", "session_id", "text", "ts")
            },
        }
        TantivyIndex(Path(tmp) / "tantivy-only").add_columns(columns)
        tantivy_s = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "messages": n,
        "messages_per_s": round(n / full_s, 1),
        "seconds": round(full_s, 3),
        "bytes_per_message": round(disk / n, 1),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "tantivy_only_messages_per_s": round(n / tantivy_s, 1),
        "ratio_vs_tantivy_only": round(tantivy_s / full_s, 3),
        "note": "full = validation + Kuzu COPY (beside the Tantivy indexing) + Tantivy commit + "
        "Parquet "
        "part, all-or-nothing; tantivy-only = the same column extraction and Tantivy commit alone",
    }

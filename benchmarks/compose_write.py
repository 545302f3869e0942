"""The write path composed by hand against ``write_group`` (baseline), side by side.

For each LoCoMo conversation (or any loader input), in fresh on-disk homes, one after the
other in the same process: ``write_group`` (RecordBuffer, one Kuzu transaction + Tantivy
commit per ``flush_every`` segments) and ``Segmenter >> ForEach(Writer >> Validate >>
Upsert)`` run with ``ctx.store`` = the GroupStore itself (a transaction, a commit and a
``group.json`` update per segment), plus the same pipeline over ``RecordBuffer(store,
flush_every=64)``. Prints seconds, the ratio to ``write_group`` and whether the record
sets (entry_id, layer, owner, source, content, supersedes) are equal.

    .venv/bin/python -m speakerflow.benchmarks.compose_write [--data
    ../shared/data/locomo/locomo10.json]
        [--format locomo] [--limit 10]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

KEYS = ["entry_id", "layer", "owner", "source", "content", "supersedes"]
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"


def _keys(store) -> set[tuple]:
    return {tuple(r.values()) for r in store.records().select(KEYS).to_pylist()}


def run(data: Path, fmt: str, limit: int) -> dict[str, float]:
    """Time the three paths per group; returns total seconds per path."""
    from speakerflow.graphs import Home
    from speakerflow.graphs.records import RecordBuffer
    from speakerflow.ops.core.base import Context
    from speakerflow.ops.loaders import load
    from speakerflow.ops.write.writer.operator import Writer
    from speakerflow.pipelines.write_path import write_group, write_pipeline

    totals = {"write_group": 0.0, "composed_direct": 0.0, "composed_buffered": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        for gid, table in load(data, fmt)[:limit]:
            secs, sets = {}, {}
            for path in totals:
                with Home(Path(tmp) / path).open(gid, writable=True) as store:
                    store.append_messages(table)
                    start = time.perf_counter()
                    if path == "write_group":
                        write_group(store, "rules", progress=False)
                    else:
                        target = (
                            RecordBuffer(store, flush_every=64)
                            if path == "composed_buffered"
                            else store
                        )
                        write_pipeline(writer=Writer("rules"))(
                            store.messages(), Context(store=target)
                        )
                        if isinstance(target, RecordBuffer):
                            target.flush()
                    secs[path] = time.perf_counter() - start
                    sets[path] = _keys(store)
                    totals[path] += secs[path]
            same = sets["composed_direct"] == sets["write_group"] == sets["composed_buffered"]
            print(
                f"{gid}: {table.num_rows} msgs, {len(sets['write_group'])} records | "
                + " | ".join(f"{k} {v:.2f}s" for k, v in secs.items())
                + f" | same records: {same}"
            )
    base = totals["write_group"]
    print("total: " + ", ".join(f"{k} {v:.1f}s ({v / base:.2f}x)" for k, v in totals.items()))
    return totals


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--format", default="locomo")
    ap.add_argument("--limit", type=int, default=10, help="groups to run")
    args = ap.parse_args()
    run(args.data, args.format, args.limit)


if __name__ == "__main__":
    main()

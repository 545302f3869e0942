"""CPU per small write into a warm group, as the server's background queue does it.

``python -m speakerflow.benchmarks.write_cost [--appends 80] [--embedder hashing|minilm]``
seeds two groups of one :class:`~speakerflow.memory.Memory` with the bundled sample, then
appends 5 new messages at a time to each (``--appends`` times, alternating the two groups,
so machine noise hits both alike) and runs :meth:`Memory.write` after each append: Writer,
embeddings and the read snapshot, what the HTTP server's write queue runs. It reports the
process CPU time (every thread) per append + write of each group:

- ``cached``: the store as it is (an append extends the open store's message table);
- ``reread`` (the baseline): the same, but the message table is dropped after each append,
  so the write re-reads every Parquet part of the group, one part per append (what every
  append did before).

The ratio ``cached / reread`` is the figure; both groups see the same messages.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from typing import Any

from speakerflow.settings import BUNDLED_SAMPLE

from .serve_load import PEOPLE, TOPICS, VERBS


def _batch(rng: random.Random, n: int, size: int = 5) -> list[dict[str, Any]]:
    return [
        {
            "msg_id": f"w{n}-m{j}",
            "session_id": f"bench-{n % 8}",
            "ts": f"2026-04-{1 + n % 28:02d}T{8 + n % 10:02d}:{j * 7 + n % 7:02d}:00Z",
            "speaker": rng.choice(PEOPLE),
            "text": f"{rng.choice(VERBS)} {rng.choice(TOPICS)}.",
        }
        for j in range(size)
    ]


def run(appends: int = 80, embedder: str = "hashing", seed: int = 0) -> dict[str, Any]:
    from speakerflow import Memory

    cpu = {"cached": 0.0, "reread": 0.0}
    with tempfile.TemporaryDirectory(prefix="speakerflow-write-cost-") as home:
        with Memory(home=home, embedder=embedder) as mem:
            for g in cpu:
                mem.add(g, BUNDLED_SAMPLE)
            rngs = {g: random.Random(seed) for g in cpu}  # the same messages in both groups
            for n in range(appends):
                for g in cpu:
                    batch = _batch(rngs[g], n)
                    t0 = time.process_time()
                    mem.append(g, batch)
                    if g == "reread":
                        with mem.use(g) as store:
                            store._messages = None  # the baseline: drop the table
                    mem.write(g)
                    cpu[g] += time.process_time() - t0
            rows = {g: mem.stats(g)["messages"] for g in cpu}
    per = {g: round(1000 * s / appends, 2) for g, s in cpu.items()}
    return {
        "benchmark": "write_cost",
        "appends": appends,
        "messages_per_append": 5,
        "embedder": embedder,
        "messages_at_end": rows,
        "cpu_ms_per_write": per,
        "ratio_cached_to_reread": round(per["cached"] / per["reread"], 3),
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--appends", type=int, default=80, help="appends per group (default 80)")
    p.add_argument("--embedder", default="hashing", choices=["hashing", "minilm", "none"])
    p.add_argument("--out", default=None, help="write the report JSON here")
    args = p.parse_args(argv)
    report = run(args.appends, args.embedder)
    text = json.dumps(report, indent=2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()

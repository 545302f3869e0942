"""CPU per ask on one warm LoCoMo-sized group, in one process: where an ask's time goes.

``python -m speakerflow.benchmarks.ask_cpu --home H --group conv-26`` opens (or first builds,
from ``--locomo``) a store home holding the conversation, warms it, then asks the
conversation's own questions through :meth:`Memory.ask_cited` and reports the process CPU
time per ask (``time.process_time``: every thread of this process, so a loaded machine
changes it little) in two conditions:

- ``memo``: each question asked before, so its vector comes from the embedder's query memo
  and the figure is the query path itself (projection, recall, select, resolve, compose,
  answer, cited messages);
- ``fresh``: the memo cleared before each ask, so each question is encoded once (one model
  call per question, as for a question never seen).

``--rounds`` rounds of both conditions. An ask runs the one query path, the composed operator
pipeline with typed batches between its stages (until 2026-05 ``Memory`` also had a direct
path of plain stage calls; the last side-by-side run of both is
docs/results/serve/ask_cpu-one-path.json). ``--profile N`` prints cProfile's top ``N``
functions by own time over one ``memo`` pass.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import time
from pathlib import Path
from typing import Any


def locomo_questions(path: Path, group: str, limit: int) -> list[str]:
    data = json.loads(Path(path).read_text())
    qs = [q["question"] for c in data if c["sample_id"] == group for q in c["qa"]]
    if not qs:
        raise SystemExit(f"{path}: no conversation {group!r}")
    return qs[:limit]


def build_home(home: Path, locomo: Path, group: str, embedder: str) -> None:
    """Ingest one LoCoMo conversation into ``home`` (Writer and embeddings included)."""
    from speakerflow import Memory
    from speakerflow.ops.loaders import load

    loaded = dict(load(locomo, "locomo"))
    rows = loaded[group].to_pylist()
    for r in rows:
        r["ts"] = r["ts"].isoformat()
    with Memory(home=home, embedder=embedder) as mem:
        mem.add(group, rows)


def cpu_per_ask(mem: Any, group: str, questions: list[str], fresh: bool) -> float:
    """Process CPU milliseconds per ask over ``questions``."""
    from speakerflow.ops.text.embed import clear_query_memo

    emb = mem.embedder
    if not fresh:
        for q in questions:  # every vector memoised first
            mem.ask_cited(group, q)
    start = time.process_time()
    for q in questions:
        if fresh:
            clear_query_memo(emb)
            clear_query_memo(getattr(emb, "inner", None))
        mem.ask_cited(group, q)
    return (time.process_time() - start) * 1000 / len(questions)


def run(
    home: Path,
    group: str,
    questions: list[str],
    embedder: str = "minilm",
    rounds: int = 2,
    profile: int = 0,
) -> dict[str, Any]:
    from speakerflow import Memory

    out: dict[str, Any] = {
        "group": group,
        "questions": len(questions),
        "embedder": embedder,
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }
    with Memory(home=home, embedder=embedder) as mem:
        for q in questions[:10]:  # model loaded, snapshot and caches warm
            mem.ask_cited(group, q)
        runs: dict[str, list[float]] = {"memo": [], "fresh": []}
        for _ in range(rounds):
            for cond in ("memo", "fresh"):
                runs[cond].append(round(cpu_per_ask(mem, group, questions, cond == "fresh"), 2))
        out["cpu_ms_per_ask"] = runs
        if profile:
            for q in questions:
                mem.ask_cited(group, q)
            prof = cProfile.Profile()
            prof.enable()
            for q in questions:
                mem.ask_cited(group, q)
            prof.disable()
            text = io.StringIO()
            pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(profile)
            out["profile"] = text.getvalue()
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, required=True, help="store home (built if missing)")
    ap.add_argument("--group", default="conv-26", help="LoCoMo conversation (a dev one)")
    ap.add_argument(
        "--locomo",
        type=Path,
        default=Path("../shared/data/locomo/locomo10.json"),
        help="locomo10.json",
    )
    ap.add_argument("--questions", type=int, default=200, help="questions asked per pass")
    ap.add_argument("--embedder", default="minilm", help="minilm (default), hashing ...")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of both conditions")
    ap.add_argument("--profile", type=int, default=0, help="print cProfile's top N functions")
    ap.add_argument("--out", type=Path, help="write the report JSON here")
    args = ap.parse_args(argv)
    from speakerflow.graphs import Home

    if not Home(args.home).group_path(args.group).exists():
        build_home(args.home, args.locomo, args.group, args.embedder)
    report = run(
        args.home,
        args.group,
        locomo_questions(args.locomo, args.group, args.questions),
        args.embedder,
        args.rounds,
        args.profile,
    )
    profile = report.pop("profile", None)
    print(json.dumps(report, indent=1))
    if profile:
        print(profile)
    if args.out:
        args.out.write_text(json.dumps({**report, "profile": profile}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

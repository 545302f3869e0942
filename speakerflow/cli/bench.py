"""``speakerflow bench ...``: benchmarks that print ratios against a baseline run side by side."""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run a benchmark")
    bsub = p.add_subparsers(dest="bench", required=True, metavar="BENCH")
    ing = bsub.add_parser("ingest", help="System 1 ingest throughput vs a Tantivy-only ingest")
    ing.add_argument("--messages", type=int, default=100_000, help="synthetic messages to ingest (default 100000)")
    ing.add_argument("--speakers", type=int, default=8, help="speakers in the synthetic group (default 8)")
    ing.add_argument("--out", default=None, help="write the report JSON here")
    ing.set_defaults(func=run_ingest)
    har = bsub.add_parser("harness", help="InKH Stage A benchmark: six baselines on real components")
    har.add_argument("--seeds", type=int, default=24, help="generated worlds (seeds) to run (default 24)")
    har.add_argument("--rounds", type=int, default=4, help="rounds per world (default 4)")
    har.add_argument("--episodes", type=int, default=80, help="episodes per round (default 80)")
    har.add_argument("--workers", type=int, default=2, help="worlds run in parallel processes (default 2)")
    har.add_argument("--injection-edges", type=int, default=100_000, help="graph size of the injection benchmark (0: skip)")
    har.add_argument("--holdout", type=float, default=0.0, help="share of statements in held-out phrasings (robustness)")
    har.add_argument("--out", default=None, help="write the report JSON here (plots next to it)")
    har.add_argument("--both", action="store_true",
                     help="run the standard suite and --holdout 1.0 (every statement held out) and print both headlines "
                          "(--out gets a _holdout suffix for the second report)")
    har.set_defaults(func=run_harness)
    fau = bsub.add_parser("faults", help="SIGKILL writer processes (ingest + Writer + entity path), check recovery")
    fau.add_argument("--kills", type=int, default=100, help="kills: half at named step boundaries, half at random times")
    fau.add_argument("--seed", type=int, default=0, help="seed of the kill schedule (default 0)")
    fau.add_argument("--jobs", type=int, default=2, help="kills run at a time (default 2)")
    fau.add_argument("--data", default="socialmem", choices=["socialmem", "locomo", "sample", "events"],
                     help="input: a SocialMemBench network (default), the first LoCoMo conversation, the bundled "
                          "sample, or generated InKH agent events (exercises the entity path's facts)")
    fau.add_argument("--out", default=None, help="write the report JSON here")
    fau.set_defaults(func=run_faults)
    par = bsub.add_parser("paraphrase", help="InKH reader on the frozen paraphrase set: extraction P/R, request intent/needs")
    par.add_argument("--split", choices=["dev", "test", "both"], default="both", help="which half of the frozen set (default both)")
    par.add_argument("--errors", action="store_true", help="list every statement/request scored wrong")
    par.add_argument("--out", default=None, help="write the report JSON here")
    par.set_defaults(func=run_paraphrase)
    from .serve import add_bench

    add_bench(bsub)  # bench serve
    from speakerflow.benchmarks.scale import add_bench as add_scale

    add_scale(bsub)  # bench scale
    from speakerflow.benchmarks.backfill import add_bench as add_backfill

    add_backfill(bsub)  # bench backfill


def run_harness(args: argparse.Namespace) -> int:
    from speakerflow.benchmarks.harness import run

    if args.both:
        out2 = None if not args.out else str(Path(args.out).with_name(Path(args.out).stem + "_holdout.json"))
        ho = run(seeds=args.seeds, out=out2, rounds=args.rounds, episodes=args.episodes, workers=args.workers,
                 injection_edges=0, holdout=1.0)
        std = run(seeds=args.seeds, out=args.out, rounds=args.rounds, episodes=args.episodes, workers=args.workers,
                  injection_edges=args.injection_edges, holdout=0.0)
        print(json.dumps({"headline": {"holdout_1.0": ho["headline"], "standard": std["headline"]},
                          "injection": std.get("injection")}, indent=2, default=str))
        return 0
    report = run(seeds=args.seeds, out=args.out, rounds=args.rounds, episodes=args.episodes,
                 workers=args.workers, injection_edges=args.injection_edges, holdout=args.holdout)
    print(json.dumps({"headline": report["headline"], **report}, indent=2, default=str))
    return 0


def run_paraphrase(args: argparse.Namespace) -> int:
    from speakerflow.benchmarks.harness.paraphrase_eval import run

    splits = ("dev", "test") if args.split == "both" else (args.split,)
    report = run(splits=splits, with_errors=args.errors)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


def run_faults(args: argparse.Namespace) -> int:
    from speakerflow.benchmarks.faults import run

    report = run(kills=args.kills, out=args.out, seed=args.seed, jobs=args.jobs, data=args.data)
    print(json.dumps({k: v for k, v in report.items() if k != "per_kill"}, indent=2, default=str))
    return 0


def run_ingest(args: argparse.Namespace) -> int:
    from speakerflow.benchmarks.ingest import run

    report = run(args.messages, speakers=args.speakers)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0

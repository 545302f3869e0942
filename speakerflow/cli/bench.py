"""``speakerflow bench ...``: benchmarks that print ratios against a baseline run side by side."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .common import add_json, print_json, print_text, table


def register(sub: argparse._SubParsersAction) -> None:
    """``speakerflow bench``: one subcommand per benchmark."""
    p = sub.add_parser("bench", help="run a benchmark")
    bsub = p.add_subparsers(dest="bench", required=True, metavar="BENCH")
    _add_ingest(bsub)
    _add_harness(bsub)
    _add_faults(bsub)
    _add_paraphrase(bsub)
    from .serve import add_bench

    add_bench(bsub)  # bench serve
    from speakerflow.benchmarks.scale import add_bench as add_scale

    add_scale(bsub)  # bench scale
    from speakerflow.benchmarks.backfill import add_bench as add_backfill

    add_backfill(bsub)  # bench backfill


def _add_ingest(bsub: argparse._SubParsersAction) -> None:
    """``bench ingest``: System 1 ingest throughput."""
    ing = bsub.add_parser("ingest", help="System 1 ingest throughput vs a Tantivy-only ingest")
    ing.add_argument(
        "--messages",
        type=int,
        default=100_000,
        help="synthetic messages to ingest (default 100000)",
    )
    ing.add_argument(
        "--speakers", type=int, default=8, help="speakers in the synthetic group (default 8)"
    )
    ing.add_argument("--out", default=None, help="write the report JSON here")
    add_json(ing)
    ing.set_defaults(func=run_ingest)


def _add_harness(bsub: argparse._SubParsersAction) -> None:
    """``bench harness``: the InKH Stage A benchmark."""
    har = bsub.add_parser(
        "harness", help="InKH Stage A benchmark: six baselines on real components"
    )
    har.add_argument(
        "--seeds", type=int, default=24, help="generated worlds (seeds) to run (default 24)"
    )
    har.add_argument("--rounds", type=int, default=4, help="rounds per world (default 4)")
    har.add_argument("--episodes", type=int, default=80, help="episodes per round (default 80)")
    har.add_argument(
        "--workers", type=int, default=2, help="worlds run in parallel processes (default 2)"
    )
    har.add_argument(
        "--injection-edges",
        type=int,
        default=100_000,
        help="graph size of the injection benchmark (0: skip)",
    )
    har.add_argument(
        "--holdout",
        type=float,
        default=0.0,
        help="share of statements in the frozen held-out phrasings (tests/data/inkh_heldout, "
        "written without reading ops/); 1.0: every statement",
    )
    har.add_argument("--out", default=None, help="write the report JSON here (plots next to it)")
    har.add_argument(
        "--both",
        action="store_true",
        help="run the standard suite and --holdout 1.0 (every statement held out) and print both "
        "headlines "
        "(--out gets a _holdout suffix for the second report)",
    )
    add_json(har)
    har.set_defaults(func=run_harness)


def _add_faults(bsub: argparse._SubParsersAction) -> None:
    """``bench faults``: kill writer processes, check recovery."""
    fau = bsub.add_parser(
        "faults", help="SIGKILL writer processes (ingest + Writer + entity path), check recovery"
    )
    fau.add_argument(
        "--kills",
        type=int,
        default=100,
        help="kills: half at named step boundaries, half at random times",
    )
    fau.add_argument("--seed", type=int, default=0, help="seed of the kill schedule (default 0)")
    fau.add_argument("--jobs", type=int, default=2, help="kills run at a time (default 2)")
    fau.add_argument(
        "--data",
        default="socialmem",
        choices=["socialmem", "locomo", "sample", "events"],
        help="input: a SocialMemBench network (default), the first LoCoMo conversation, the "
        "bundled "
        "sample, or generated InKH agent events (exercises the entity path's facts)",
    )
    fau.add_argument("--out", default=None, help="write the report JSON here")
    add_json(fau)
    fau.set_defaults(func=run_faults)


def _add_paraphrase(bsub: argparse._SubParsersAction) -> None:
    """``bench paraphrase``: the InKH reader on the frozen paraphrase set."""
    par = bsub.add_parser(
        "paraphrase",
        help="InKH reader on the frozen paraphrase set: extraction P/R, request intent/needs",
    )
    par.add_argument(
        "--split",
        choices=["dev", "test", "all"],
        default="dev",
        help="dev (default): the tuning splits dev, dev2 and dev3 (the round-1 test split, "
        "scored while tuning); test: the held-out round-3 split (report only, never tune on "
        "it); all: both",
    )
    par.add_argument(
        "--errors", action="store_true", help="list every statement/request scored wrong"
    )
    par.add_argument("--out", default=None, help="write the report JSON here")
    add_json(par)
    par.set_defaults(func=run_paraphrase)


def harness_table(report: dict) -> str:
    """One line per baseline of a harness report: measured figures, then the derived ones."""
    from speakerflow.benchmarks.harness.report import table_rows

    columns, rows = table_rows(report)
    return table(rows, columns)


def _headline_text(h: dict) -> str:
    from speakerflow.benchmarks.harness.report import headline_lines

    return "\n".join(headline_lines(h))


def _injection_text(inj: dict | None) -> str:
    if not inj:
        return ""
    nums = {k: v for k, v in inj.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    return "injection: " + ", ".join(f"{k} {v}" for k, v in list(nums.items())[:8])


def run_harness(args: argparse.Namespace) -> int:
    from speakerflow.benchmarks.harness import run

    progress = not args.json
    if args.both:
        out2 = (
            None
            if not args.out
            else str(Path(args.out).with_name(Path(args.out).stem + "_holdout.json"))
        )
        ho = run(
            seeds=args.seeds,
            out=out2,
            rounds=args.rounds,
            episodes=args.episodes,
            workers=args.workers,
            injection_edges=0,
            holdout=1.0,
            progress=progress,
        )
        std = run(
            seeds=args.seeds,
            out=args.out,
            rounds=args.rounds,
            episodes=args.episodes,
            workers=args.workers,
            injection_edges=args.injection_edges,
            holdout=0.0,
            progress=progress,
        )
        if args.json:
            print_json(
                {
                    "headline": {"holdout_1.0": ho["headline"], "standard": std["headline"]},
                    "injection": std.get("injection"),
                }
            )
            return 0
        for name, rep in (("held-out wordings (holdout 1.0)", ho), ("standard suite", std)):
            print(f"{name}:\n{harness_table(rep)}\n{_headline_text(rep['headline'])}\n")
        print(_injection_text(std.get("injection")))
        _print_outputs(args.out, std, out2, ho)
        return 0
    report = run(
        seeds=args.seeds,
        out=args.out,
        rounds=args.rounds,
        episodes=args.episodes,
        workers=args.workers,
        injection_edges=args.injection_edges,
        holdout=args.holdout,
        progress=progress,
    )
    if args.json:
        print_json({"headline": report["headline"], **report})
        return 0
    print(harness_table(report))
    print(_headline_text(report["headline"]))
    if report.get("injection"):
        print(_injection_text(report["injection"]))
    _print_outputs(args.out, report)
    return 0


def _print_outputs(out, report: dict, out2=None, report2: dict | None = None) -> None:
    for path, rep in ((out, report), (out2, report2)):
        if path and rep is not None:
            print(f"wrote {path}" + "".join(f", {p}" for p in rep.get("meta", {}).get("plots", [])))


def run_paraphrase(args: argparse.Namespace) -> int:
    from speakerflow.benchmarks.harness.paraphrase_eval import DEV, TEST, run

    splits = {"dev": DEV, "test": TEST, "all": DEV + TEST}[args.split]
    report = run(splits=splits, with_errors=args.errors)
    text = json.dumps(report, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    if args.json:
        print(text)
        return 0
    print_text(report)
    if args.out:
        print(f"wrote {args.out}")
    return 0


def run_faults(args: argparse.Namespace) -> int:
    from speakerflow.benchmarks.faults import run

    report = run(kills=args.kills, out=args.out, seed=args.seed, jobs=args.jobs, data=args.data)
    summary = {k: v for k, v in report.items() if k != "per_kill"}
    if args.json:
        print_json(summary)
        return 0
    print_text(summary)
    if args.out:
        print(f"wrote {args.out}")
    return 0


def run_ingest(args: argparse.Namespace) -> int:
    from speakerflow.benchmarks.ingest import run

    report = run(args.messages, speakers=args.speakers)
    text = json.dumps(report, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    if args.json:
        print(text)
        return 0
    print_text(report)
    if args.out:
        print(f"wrote {args.out}")
    return 0

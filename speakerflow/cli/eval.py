"""``speakerflow eval DATA --format locomo|socialmem --system ... --out report.json``: judge-free
evaluation (evidence recall@k, token-F1, latency, context size); and
``speakerflow eval writer DATA --backend B [--out]``: Writer fidelity (helper module
``speakerflow.training.writer_eval``).

``--system`` takes one system or a comma-separated list (``bm25,hybrid,speakerflow``): the
systems then run side by side in one process and the Markdown summary and plot show them
together (the JSON holds a list of reports). ``--ablate`` takes one ablation or a list and
adds one ``speakerflow`` run per ablation after the systems asked for (so the full system
and its ablations are reported side by side). ``--groups`` restricts the run to some
conversations/networks (``dev`` / ``test`` name the LoCoMo halves); LoCoMo reports carry a
``splits`` block (dev and test half) and every report a ``by_group`` block.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from . import CliError
from .ask import add_reader_option
from .common import print_json, print_text, table


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval", help="evidence-recall evaluation on LoCoMo / SocialMemBench (or: eval writer DATA)"
    )
    p.add_argument("data", help="a file or a folder of network files (or the word 'writer')")
    p.add_argument("writer_data", nargs="?", default=None, help=argparse.SUPPRESS)
    p.add_argument(
        "--format",
        choices=["locomo", "socialmem"],
        default=None,
        help="input format of DATA (required unless DATA is 'writer')",
    )
    p.add_argument(
        "--system",
        default="speakerflow",
        help="speakerflow|bm25|bm25-plain|dense|hybrid, or a comma-separated list",
    )
    p.add_argument(
        "--ablate", default=None, help="s1|s2|s2-group|s2-person, or a comma-separated list"
    )
    p.add_argument(
        "--k", type=int, nargs="+", default=[5, 10, 20], help="recall budgets (default 5 10 20)"
    )
    p.add_argument(
        "--out",
        default=None,
        help="report JSON (a .md summary and a .png plot are written beside it)",
    )
    p.add_argument(
        "--home", default=None, help="store home to ingest into (default: a temporary folder)"
    )
    p.add_argument(
        "--embedder", default="minilm", choices=["minilm", "hashing"], help="dense recall embedder"
    )
    p.add_argument(
        "--groups",
        default=None,
        help="only these conversations/networks, comma-separated (dev / test: the LoCoMo halves)",
    )
    p.add_argument(
        "--limit", type=int, default=None, help="only the first N questions (smoke runs)"
    )
    p.add_argument("--backend", default="rules", help="eval writer: the Writer backend")
    p.add_argument(
        "--writer",
        default="rules",
        help="--system speakerflow: the Writer of its records (rules, local, local:SPEC for "
        "an adapter / base / ONNX folder, local@DECODING:SPEC with decoding free, structured "
        "or extract)",
    )
    p.add_argument(
        "--networks",
        default=None,
        help="eval writer: comma-separated network ids to evaluate (e.g. the held-out ones)",
    )
    p.add_argument(
        "--segments",
        type=int,
        default=None,
        help="eval writer: only the first N sessions of each network (cheaper for slow Writers)",
    )
    add_reader_option(p)
    p.add_argument("--json", action="store_true", help="print the full report JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.data == "writer":
        return run_writer(args)
    if args.format is None:
        raise CliError("--format locomo|socialmem is required")
    if not Path(args.data).exists():
        raise CliError(f"{args.data}: no such file or folder")
    from speakerflow.benchmarks.evaluate import (
        ablation_gain,
        ablation_line,
        run_eval,
        write_outputs,
    )

    plan = [(s.strip(), None) for s in args.system.split(",") if s.strip()]
    for ab in args.ablate.split(",") if args.ablate else []:
        plan.append(("speakerflow", ab.strip()))
    writer: object = args.writer
    if args.writer.startswith(("local:", "local@")):  # the learned Writer, built once
        from speakerflow.ops.write.writer.registry import writer_from_spec

        writer = writer_from_spec(args.writer)
    config = None
    if args.reader:
        from speakerflow.ops.query.answer_config import AnswerConfig
        from speakerflow.pipelines.query_path import QueryConfig

        config = QueryConfig(answer=AnswerConfig(reader=args.reader))
    reports = []
    for system, ablate in plan:
        try:
            report = run_eval(
                args.data,
                args.format,
                system,
                ablate=ablate,
                k=tuple(args.k),
                home=args.home,
                embedder=args.embedder,
                limit=args.limit,
                groups=args.groups,
                progress=not args.json,
                writer=writer,
                config=config,
            )
        except ValueError as exc:
            raise CliError(str(exc)) from None
        reports.append(report)
        if args.json:
            continue
        rec = ", ".join(f"@{b} {v:.3f}" for b, v in report["evidence_recall"].items())
        print(
            f"{system}{' -' + ablate if ablate else ''}: {report['questions']} questions; evidence "
            f"recall {rec}; "
            f"token-F1 {report['token_f1']:.3f}; latency p50 {report['latency_ms']['p50']:.1f} ms, "
            f"p95 {report['latency_ms']['p95']:.1f} ms; context "
            f"{report['context_tokens']['mean']:.0f} tokens",
            flush=True,
        )
        for name, sp in report.get("splits", {}).items():
            cats = ", ".join(
                f"{c} {v['evidence_recall'].get('10', 0):.3f}" for c, v in sp["by_category"].items()
            )
            print(
                f"  {name} half ({sp['questions']} q): "
                + ", ".join(f"@{b} {v:.3f}" for b, v in sp["evidence_recall"].items())
                + f"; @10 by category: {cats}",
                flush=True,
            )
    full = next((r for r in reports if r["system"] == "speakerflow" and not r.get("ablate")), None)
    for r in reports:
        if full is not None and r.get("ablate"):
            r["vs_full"] = ablation_gain(full, r)
            if not args.json:
                print(ablation_line(r), flush=True)
    paths = (
        write_outputs(reports[0] if len(reports) == 1 else reports, args.out) if args.out else {}
    )
    if args.json:
        print_json([{k: v for k, v in r.items() if k != "per_question"} for r in reports])
        return 0
    print()
    print(summary_table(reports))
    if paths:
        print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


def summary_table(reports: list[dict]) -> str:
    """One line per system run: questions, evidence recall at each budget, token-F1, latency,
    context."""
    rows = []
    for r in reports:
        row = {
            "system": r["system"] + (f" -{r['ablate']}" if r.get("ablate") else ""),
            "questions": r["questions"],
        }
        row.update({f"recall@{b}": round(v, 3) for b, v in r["evidence_recall"].items()})
        row.update(
            {
                "token_f1": round(r["token_f1"], 3),
                "p50_ms": round(r["latency_ms"]["p50"], 1),
                "p95_ms": round(r["latency_ms"]["p95"], 1),
                "context_tokens": round(r["context_tokens"]["mean"]),
            }
        )
        rows.append(row)
    return table(rows)


def run_writer(args: argparse.Namespace) -> int:
    if not args.writer_data:
        raise CliError("usage: speakerflow eval writer DATA --backend B [--out report.json]")
    try:
        from speakerflow.training.writer_eval import run as writer_eval
    except ImportError as exc:
        raise CliError(
            f"Writer evaluation is not available ({exc}); it lives in "
            "speakerflow.training.writer_eval"
        ) from None
    nets = [x.strip() for x in (args.networks or "").split(",") if x.strip()] or None
    report = writer_eval(
        args.writer_data, args.backend, args.out, networks=nets, segments=args.segments
    )
    if args.json:
        print(json.dumps(report, indent=1, default=str))
        return 0
    print_text(report)
    return 0

"""``speakerflow serve`` (HTTP API), ``speakerflow mcp`` (MCP over stdio) and
``speakerflow bench serve`` (load test of a real server on 127.0.0.1): docs/serving.md."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import CliError
from .common import add_home


def _memory_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--embedder",
        default="minilm",
        choices=["minilm", "hashing", "none"],
        help="dense recall embedder, loaded once at start (default minilm)",
    )
    p.add_argument(
        "--writer",
        default="rules",
        help="Writer backend run after each ingest (default rules; none: verbatim only)",
    )
    add_home(p)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the memory over HTTP (keys from $SPEAKERFLOW_API_KEYS)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8750, help="port (default 8750)")
    p.add_argument(
        "--no-auth", action="store_true", help="no API keys; allowed on a loopback host only"
    )
    p.add_argument(
        "--max-body-mb", type=float, default=8.0, help="largest request body in MiB (default 8)"
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="processes serving the port: 1 (default) does reads and writes; N > 1 runs N "
        "reader processes and one writer process behind them (docs/serving.md)",
    )
    p.add_argument(
        "--writers",
        type=int,
        default=2,
        help="background write threads (groups written in parallel)",
    )
    p.add_argument(
        "--max-open-groups",
        type=int,
        default=64,
        help="groups kept open and warm at most (least recently used idle ones are closed; default "
        "64)",
    )
    p.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="intra-op threads of the embedder (default 1: requests run side by side; 0 = torch's "
        "default)",
    )
    p.add_argument(
        "--reads",
        default="snapshot",
        choices=["snapshot", "locked"],
        help="snapshot (default): ask/search read the group's last complete write without waiting "
        "for writes; locked: they wait for the group's lock (the old path, for comparison)",
    )
    p.add_argument(
        "--ask-threads",
        type=int,
        default=32,
        help="asks answered at once; the others wait for a slot (default 32)",
    )
    p.add_argument(
        "--write-nice",
        type=int,
        default=10,
        help="nice value added to the background write threads (Linux; default 10: asks get the "
        "cores first; 0 = same priority)",
    )
    p.add_argument(
        "--no-query-batching",
        action="store_true",
        help="encode each ask's question alone (by default concurrent asks share one model call)",
    )
    p.add_argument(
        "--log-level",
        default="warning",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn log level (default warning)",
    )
    _memory_options(p)
    p.set_defaults(func=run_serve)

    m = sub.add_parser(
        "mcp",
        help="serve the memory to an MCP client over stdio (tools remember, ask, search, memory, "
        "inject)",
    )
    _memory_options(m)
    m.set_defaults(func=run_mcp)


def add_bench(bsub: argparse._SubParsersAction) -> None:
    """``speakerflow bench serve``: registered by ``cli/bench.py``."""
    b = bsub.add_parser(
        "serve", help="load test: a real server on 127.0.0.1, ingest + ask over several groups"
    )
    b.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    b.add_argument(
        "--seconds", type=float, default=60.0, help="length of the measured run (default 60)"
    )
    b.add_argument(
        "--groups", type=int, default=8, help="groups the clients spread over (default 8)"
    )
    b.add_argument(
        "--ingest-share",
        type=float,
        default=0.1,
        help="share of requests that ingest (default 0.1)",
    )
    b.add_argument(
        "--embedder",
        default="minilm",
        choices=["minilm", "hashing", "none"],
        help="server embedder",
    )
    b.add_argument(
        "--reads",
        default="snapshot",
        choices=["snapshot", "locked"],
        help="the server's read path (serve --reads; default snapshot)",
    )
    b.add_argument("--no-query-batching", action="store_true", help="serve --no-query-batching")
    b.add_argument("--ask-threads", type=int, default=32, help="serve --ask-threads (default 32)")
    b.add_argument("--write-nice", type=int, default=10, help="serve --write-nice (default 10)")
    b.add_argument(
        "--workers",
        type=int,
        nargs="+",
        default=[1],
        help="serve --workers; several values (e.g. 1 2) run one after the other, reported side "
        "by side",
    )
    b.add_argument("--out", default=None, help="write the report JSON here")
    b.add_argument("--json", action="store_true", help="print the report as JSON")
    b.set_defaults(func=run_bench)
    f = bsub.add_parser(
        "first-ask",
        help="the first ask and inject after a fresh server reports ready, over several starts",
    )
    f.add_argument(
        "--home",
        required=True,
        help="store home to serve (one LoCoMo conversation is ingested first if it is empty)",
    )
    f.add_argument("--starts", type=int, default=10, help="fresh server starts (default 10)")
    f.add_argument("--workers", type=int, default=1, help="serve --workers (default 1)")
    f.add_argument(
        "--embedder", default="minilm", choices=["minilm", "hashing"], help="server embedder"
    )
    f.add_argument("--data", default=None, help="LoCoMo file (default ../shared/data/locomo)")
    f.add_argument("--out", default=None, help="write the report JSON here")
    f.add_argument("--json", action="store_true", help="print the report as JSON")
    f.set_defaults(func=run_first_ask)
    o = bsub.add_parser(
        "serve-overhead", help="CPU per request of the HTTP app, per route, in one process"
    )
    o.add_argument("--requests", type=int, default=300, help="requests per route and round")
    o.add_argument("--rounds", type=int, default=3, help="rounds (the median is reported)")
    o.add_argument("--out", default=None, help="write the report JSON here")
    o.add_argument(
        "--json", action="store_true", help="print the report as JSON (it is either way)"
    )
    o.set_defaults(func=run_overhead)


def run_serve(args: argparse.Namespace) -> int:
    from speakerflow.server import ConfigError, serve

    try:
        serve(
            args.home,
            host=args.host,
            port=args.port,
            no_auth=args.no_auth,
            embedder=args.embedder,
            writer=args.writer,
            max_body=int(args.max_body_mb * 1024 * 1024),
            writers=args.writers,
            log_level=args.log_level,
            torch_threads=args.torch_threads or None,
            max_open=args.max_open_groups,
            reads=args.reads,
            batch_queries=not args.no_query_batching,
            ask_threads=args.ask_threads,
            write_nice=args.write_nice,
            workers=args.workers,
        )
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    return 0


def run_first_ask(args: argparse.Namespace) -> int:
    from speakerflow.benchmarks.first_ask import LOCOMO, format_report, run

    data = Path(args.data) if args.data else LOCOMO
    if not data.is_file() and not any(Path(args.home).glob("groups/*")):
        raise CliError(f"{data} not found: pass --data locomo10.json (or a home with a group)")
    report = run(
        Path(args.home),
        starts=args.starts,
        workers=args.workers,
        embedder=args.embedder,
        data=data,
        progress=not args.json,
    )
    text = json.dumps(report, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text if args.json else format_report(report))
    return 0


def run_overhead(args: argparse.Namespace) -> int:
    from speakerflow.server.overhead import run

    text = json.dumps(run(args.requests, args.rounds), indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


def run_mcp(args: argparse.Namespace) -> int:
    from speakerflow.mcp_server import run_stdio

    run_stdio(args.home, embedder=args.embedder, writer=args.writer)
    return 0


def run_bench(args: argparse.Namespace) -> int:
    from speakerflow.benchmarks.serve import format_comparison, format_report, run, run_many

    if any(n < 1 for n in args.workers):
        raise CliError("--workers values must be at least 1")
    options: dict[str, Any] = {
        "clients": args.clients,
        "seconds": args.seconds,
        "groups": args.groups,
        "ingest_share": args.ingest_share,
        "embedder": args.embedder,
        "progress": not args.json,
        "reads": args.reads,
        "batch_queries": not args.no_query_batching,
        "ask_threads": args.ask_threads,
        "write_nice": args.write_nice,
    }
    formatted: Callable[[dict[str, Any]], str]
    if len(args.workers) > 1:
        report, formatted = run_many(args.workers, **options), format_comparison
    else:
        report, formatted = run(workers=args.workers[0], **options), format_report
    text = json.dumps(report, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text if args.json else formatted(report))
    return 0 if report["errors"] == 0 else 1

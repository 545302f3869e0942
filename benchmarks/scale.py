"""How the system grows with the number of messages: ``speakerflow bench scale``.

For each size (1k, 10k, 100k; 1M when asked) and each shape (one big group; many groups of
1,000 messages) a fresh subprocess (so peak RSS is that size's own) generates a synthetic
multi-party stream, ingests it into a home (Parquet + Kuzu + Tantivy; the big group in one
append as ``speakerflow ingest`` of a file does, or in appends of ``--ingest-batch``), runs
the rules Writer (on a bounded sample of the stream when the size is larger than
``writer_sample``: the report says so), times the rules query path
(``answer_question`` with ``embedder="none"``: BM25, windows, session prior, System 2
records, rules answerer), the dense channel where embeddings exist (question encode + top-k
over the group's message embeddings: the ANN index of :mod:`speakerflow.graphs.ann` above
its threshold, brute force below) and passive injection on the fact graph that the entity
path builds from the same stream (on the same bounded sample).

The stream: message texts are one to three sentences drawn from LoCoMo conversations when
``../shared/data/locomo/locomo10.json`` exists (real lengths and wording; the bundled team
chat otherwise), about 5 % are statements about assets and copy traders in the InKH
harness's phrasings (so the entity path has facts to read), speakers follow a Zipf-like
activity over the group's roster (30 people in the big group, 3-10 in a group of 1,000),
sessions are 20-120 turns with hours to days between them, and a fifth of the messages
reply to an earlier turn of their session. Everything is deterministic for a seed; the
stream of ``n`` messages is a prefix of the stream of ``m > n`` messages.

    speakerflow bench scale --messages 100000 --out report.json        # 1k, 10k, 100k
    speakerflow bench scale --messages 1000000 --out report.json       # ... and 1M
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .scale_dense import ann_sweep, dense_ab
from .scale_ingest_ab import INGEST_AB_REV, ingest_ab
from .scale_parts import entities_and_injection, hot_paths, ingest, queries_of, write
from .scale_plot import plot
from .scale_stream import (
    GROUP_SIZE,
    WHOLE,
    embed_stream,
    synthetic_stream,
)

#: rows of the row-at-a-time vs columnar comparison of :func:`hot_paths`
HOT_PATH_BATCH = 10_000


def measure(
    n: int,
    shape: str,
    workdir: str | Path,
    seed: int = 7,
    batch: int = WHOLE,
    writer_sample: int = 10_000,
    entity_sample: int = 10_000,
    queries: int = 40,
    query_groups: int = 10,
    embed_cache: str | None = None,
    dense_max: int = 0,
    injections: int = 100,
    exact_queries: int = 20,
) -> dict[str, Any]:
    """Measure one size and shape in this process (see the module doc); returns one report row."""
    from speakerflow.graphs import Home

    row: dict[str, Any] = {
        "messages": n,
        "shape": shape,
        "seed": seed,
        "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
    }
    t0 = time.perf_counter()
    table = synthetic_stream(n, shape, seed)
    row["generate_s"] = round(time.perf_counter() - t0, 2)
    home = Home(Path(workdir) / "home")
    gids = table["group_id"].unique().to_pylist()
    row["groups"] = len(gids)
    row.update(ingest(home, table, shape, n, batch))
    row.update(write(home, gids, shape, n, writer_sample))
    # the entity path (facts) on a bounded sample, then passive injection on that fact graph
    row.update(
        entities_and_injection(home, gids, shape, n, min(n, entity_sample), injections, seed)
    )

    row.update(
        queries_of(
            home,
            table,
            gids,
            shape,
            n,
            queries,
            query_groups,
            seed,
            embed_cache,
            dense_max,
            exact_queries,
        )
    )
    if shape == "one":
        with home.open(gids[0]) as store:
            row["hot_paths"] = hot_paths(store, table, HOT_PATH_BATCH)
    row["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return row


def _child_main(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--shape", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--opts", default="{}")
    a = p.parse_args(argv)
    row = measure(a.n, a.shape, a.workdir, **json.loads(a.opts))
    Path(a.out).write_text(json.dumps(row))


#: what the report's figures mean (written into every report)
NOTES = [
    "each size and shape ran in its own subprocess; peak_rss_mb is that process's maximum "
    "resident set (the synthetic stream it generated included)",
    "writer_messages_per_s is measured on writer_sample messages (the newest of the big "
    "group, or the "
    "last whole groups of 1,000); where writer_sample < messages the Writer did not see "
    "the whole stream",
    "query_*: answer_question with embedder='none' (BM25, window and session channels, "
    "System 2 records, "
    "rules answerer) on read-only stores after one warm-up query per store (query_cold_ms)",
    "dense_query_*: a fresh MiniLM encode of the question (1 thread) + the dense channel "
    "(ops/text/dense_index.py: the group's faiss HNSW top-k above its threshold, brute "
    "force "
    "below); "
    "dense_encode_* is the encode alone, dense_channel_* the channel alone; null where not "
    "run",
    "injection_*: PassiveInjector on the fact graph the rules entity path built from "
    "entity_sample "
    "messages of the same stream",
]


def run(
    messages: int = 100_000,
    out: str | Path | None = None,
    shapes: tuple[str, ...] = ("one", "many"),
    sizes: list[int] | None = None,
    timeout_s: int = 3600,
    workdir: str | Path | None = None,
    log=print,
    keep: list[dict[str, Any]] | None = None,
    threads: int | None = 1,
    **opts: Any,
) -> dict[str, Any]:
    """Measure every size of 1k, 10k, 100k, 1M up to ``messages`` (or ``sizes``) in both
    shapes, each in a fresh subprocess; write ``out`` (JSON) and a log-log plot beside it.

    ``threads``: OpenMP / BLAS threads of each child (1 by default: on a shared machine a
    second spinning thread per matrix product costs more than it gives; ``None`` leaves them)."""
    env = _child_env(threads)
    sizes = sizes or [s for s in (1_000, 10_000, 100_000, 1_000_000) if s <= messages] or [messages]
    rows: list[dict[str, Any]] = []
    for n in sizes:
        for shape in shapes:
            if shape == "many" and n <= GROUP_SIZE:
                continue  # one group of 1,000 is the "one" shape
            rows.append(_run_child(n, shape, workdir, opts, timeout_s, env))
            log(json.dumps(rows[-1]))
    done = {(r["messages"], r["shape"]) for r in rows}
    rows = sorted(
        [r for r in keep or [] if (r["messages"], r["shape"]) not in done] + rows,
        key=lambda r: (r["messages"], r["shape"] != "one"),
    )
    report = {
        "sizes": rows,
        "machine": {
            "cpus": os.cpu_count(),
            "threads_per_child": threads,
            "load_avg_at_end": [round(x, 2) for x in os.getloadavg()],
        },
        "notes": list(NOTES),
    }
    if out:
        out = Path(out)
        out.write_text(json.dumps(report, indent=2) + "\n")
        plot(report, out.with_suffix(".png"))
    return report


def _child_env(threads: int | None) -> dict[str, str]:
    """The children's environment: no tokenizer parallelism, ``threads`` OpenMP / BLAS
    threads (``None``: as inherited)."""
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    if threads:
        env.update(
            {
                k: str(threads)
                for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
            }
        )
    return env


def _run_child(
    n: int,
    shape: str,
    workdir: str | Path | None,
    opts: dict[str, Any],
    timeout_s: int,
    env: dict[str, str],
) -> dict[str, Any]:
    """Measure one size and shape in a fresh subprocess (its own temporary folder); its row."""
    with tempfile.TemporaryDirectory(prefix="speakerflow-scale-", dir=workdir) as tmp:
        res = Path(tmp) / "row.json"
        cmd = [
            sys.executable,
            "-m",
            "speakerflow.benchmarks.scale",
            "--child",
            "--n",
            str(n),
            "--shape",
            shape,
            "--workdir",
            tmp,
            "--out",
            str(res),
            "--opts",
            json.dumps(opts),
        ]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"scale child {n} {shape} failed:\n{proc.stderr[-4000:]}")
        row = json.loads(res.read_text())
        row["child_wall_s"] = round(time.perf_counter() - t0, 1)
    return row


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        _child_main(argv[1:])
        return
    if argv and argv[0] == "embed":
        p = argparse.ArgumentParser()
        p.add_argument("--messages", type=int, default=100_000)
        p.add_argument("--cache", required=True)
        p.add_argument("--threads", type=int, default=1)
        p.add_argument("--precision", default=None, help="torch, fp32 or int8 (default: the env's)")
        a = p.parse_args(argv[1:])
        print(
            json.dumps(embed_stream(a.messages, a.cache, threads=a.threads, precision=a.precision))
        )
        return
    if argv and argv[0] == "ingest-ab":
        p = argparse.ArgumentParser()
        p.add_argument("--messages", type=int, default=100_000)
        p.add_argument(
            "--rev",
            default=INGEST_AB_REV,
            help="git revision of the ingest path (graphs/store.py and siblings) to compare with",
        )
        p.add_argument("--rounds", type=int, default=2)
        p.add_argument(
            "--batch", type=int, default=WHOLE, help="messages per append (0: all in one)"
        )
        a = p.parse_args(argv[1:])
        print(json.dumps(ingest_ab(a.messages, a.rev, batch=a.batch, rounds=a.rounds)))
        return
    if argv and argv[0] == "dense":
        p = argparse.ArgumentParser()
        p.add_argument("--messages", type=int, default=100_000)
        p.add_argument(
            "--cache",
            action="append",
            required=True,
            help="PRECISION=PATH (torch, fp32 or int8 = the stream's vectors); repeatable",
        )
        p.add_argument("--queries", type=int, default=40)
        a = p.parse_args(argv[1:])
        caches = dict(c.split("=", 1) for c in a.cache)
        print(json.dumps(dense_ab(a.messages, caches, a.queries), indent=2))
        return
    if argv and argv[0] == "ann":
        p = argparse.ArgumentParser()
        p.add_argument("--messages", type=int, default=100_000)
        p.add_argument("--cache", required=True)
        p.add_argument("--params", default="32:100,48:200", help="M:efConstruction pairs")
        p.add_argument("--efs", default="128,256,512,1024", help="efSearch values")
        a = p.parse_args(argv[1:])
        params = tuple(
            (int(m), int(efc)) for m, efc in (x.split(":") for x in a.params.split(",") if x)
        )
        efs = tuple(int(x) for x in a.efs.split(",") if x)
        for row in ann_sweep(a.messages, a.cache, params, efs):
            print(json.dumps(row), flush=True)
        return
    raise SystemExit("use: speakerflow bench scale --messages N --out report.json")


if __name__ == "__main__":
    main()


def add_bench(bsub: argparse._SubParsersAction) -> None:
    """``speakerflow bench scale`` (registered by ``speakerflow/cli/bench.py``)."""
    p = bsub.add_parser(
        "scale",
        help="cost against size (1k..1M messages): ingest, Writer, disk, RSS, query, "
        "dense, injection; one big group and groups of 1,000",
    )
    p.add_argument(
        "--messages", type=int, default=100_000, help="largest size: 1k, 10k, 100k, 1M up to it"
    )
    p.add_argument(
        "--out", default=None, help="write the report JSON here (the log-log plot beside it, .png)"
    )
    p.add_argument(
        "--shapes", default="one,many", help="one (one big group), many (groups of 1,000), or both"
    )
    p.add_argument(
        "--writer-sample",
        type=int,
        default=10_000,
        help="messages the rules Writer runs on per size",
    )
    p.add_argument(
        "--entity-sample", type=int, default=10_000, help="messages the entity path reads per size"
    )
    p.add_argument("--queries", type=int, default=40, help="timed questions per size and shape")
    p.add_argument(
        "--embed-cache",
        default=None,
        help="MiniLM vectors of the stream (built by python -m speakerflow.benchmarks.scale "
        "embed); "
        "enables the dense columns (big group only)",
    )
    p.add_argument("--dense-max", type=int, default=100_000, help="largest size with dense queries")
    p.add_argument("--seed", type=int, default=7, help="seed of the synthetic stream (default 7)")
    p.add_argument(
        "--ingest-batch",
        type=int,
        default=WHOLE,
        help="messages per append into the big group (default 0: the whole stream in one "
        "append, as speakerflow ingest of a file does; N: appends of N, an incremental ingest)",
    )
    p.add_argument(
        "--exact-queries",
        type=int,
        default=20,
        help="questions timed on both the exact and the bounded query path, big group only (0: "
        "skip)",
    )
    p.add_argument(
        "--threads", type=int, default=1, help="OpenMP/BLAS threads per child (0: library default)"
    )
    p.add_argument(
        "--sizes",
        default=None,
        help="comma-separated sizes to measure instead of 1k, 10k ... --messages",
    )
    p.add_argument(
        "--append",
        action="store_true",
        help="keep the rows of an existing --out report for the sizes and shapes not measured now",
    )
    p.add_argument(
        "--json", action="store_true", help="print the report as JSON instead of a table"
    )
    p.set_defaults(func=_run_cli)


def _run_cli(args: argparse.Namespace) -> int:
    keep = (
        json.loads(Path(args.out).read_text())["sizes"]
        if args.append and args.out and Path(args.out).exists()
        else []
    )
    report = run(
        args.messages,
        out=args.out,
        shapes=tuple(s for s in args.shapes.split(",") if s),
        sizes=[int(x) for x in args.sizes.split(",")] if args.sizes else None,
        keep=keep,
        threads=args.threads or None,
        batch=args.ingest_batch,
        writer_sample=args.writer_sample,
        entity_sample=args.entity_sample,
        queries=args.queries,
        embed_cache=args.embed_cache,
        dense_max=args.dense_max if args.embed_cache else 0,
        seed=args.seed,
        exact_queries=args.exact_queries,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    cols = [
        "shape",
        "messages",
        "groups",
        "ingest_batch",
        "ingest_messages_per_s",
        "writer_messages_per_s",
        "bytes_per_message",
        "peak_rss_mb",
        "query_p50_ms",
        "query_p95_ms",
        "dense_query_p50_ms",
    ]
    rows = [[str(r.get(c, "-")) for c in cols] for r in report.get("sizes", [])]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    for line in [cols, *rows]:
        print("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())
    if args.out:
        print(f"wrote {args.out}")
    return 0

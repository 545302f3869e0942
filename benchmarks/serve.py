"""``speakerflow bench serve``: a real ``speakerflow serve`` on 127.0.0.1 under a mixed load.

The server runs as its own process (the CLI, on a free loopback port, a fresh temporary
home, one API key per group). Every group is seeded with the bundled sample conversation
and written (Writer + embeddings) before the clock starts; one client then asks alone
(up to 100 asks or 10 s: the warm latency without queueing). Then ``clients`` concurrent
clients (asyncio + httpx, one process) send requests for ``seconds``: each request is an
ingest of a few new messages (``ingest_share`` of them) or an ask, to a random group. The
report counts errors (any non-2xx answer or transport error; background write failures
separately), ask and ingest latencies as the client sees them (p50/p95/p99, ms), the
query-path and in-server times the server reports, requests/s, and the server's RSS (now
and peak). Client and server share this machine's cores: the latencies include that.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from speakerflow.benchmarks.percentiles import pct

from .serve_load import run_load
from .serve_server import Server


def _summary(values: list[float]) -> dict[str, Any]:
    return {
        "count": len(values),
        "p50_ms": pct(values, 50, 2),
        "p95_ms": pct(values, 95, 2),
        "p99_ms": pct(values, 99, 2),
        "mean_ms": round(statistics.fmean(values), 2) if values else None,
    }


def run(
    clients: int = 32,
    seconds: float = 60.0,
    groups: int = 8,
    ingest_share: float = 0.1,
    embedder: str = "minilm",
    progress: bool = True,
    seed: int = 0,
    reads: str = "snapshot",
    batch_queries: bool = True,
    ask_threads: int = 32,
    write_nice: int = 10,
    workers: int = 1,
) -> dict[str, Any]:
    """Start a server, load it, stop it; returns the report (see the module docstring).
    ``workers``: ``serve --workers`` (reader processes; above 1 with a writer process).
    ``reads``: the server's read path (``serve --reads``: ``snapshot`` or ``locked``);
    ``batch_queries=False``: ``serve --no-query-batching``; ``ask_threads``: ``serve
    --ask-threads``; ``write_nice``: ``serve --write-nice``. ``reads="locked",
    batch_queries=False, ask_threads=40, write_nice=0`` is the server as it was before the
    four (the baseline: 40 is the thread pool that ran every ask)."""
    if clients < 1 or groups < 1 or seconds <= 0 or not 0 <= ingest_share <= 1:
        raise ValueError("clients and groups >= 1, seconds > 0, 0 <= ingest_share <= 1")
    options = {
        "reads": reads,
        "batch_queries": batch_queries,
        "ask_threads": ask_threads,
        "write_nice": write_nice,
        "workers": workers,
    }
    measured = _serve(clients, seconds, groups, ingest_share, embedder, progress, seed, options)
    return {
        "benchmark": "serve",
        "clients": clients,
        "seconds": seconds,
        "groups": groups,
        "ingest_share": ingest_share,
        "embedder": embedder,
        "reads": reads,
        "query_batching": batch_queries,
        "ask_threads": ask_threads,
        "write_nice": write_nice,
        "workers": workers,
        "cpus": os.cpu_count(),
        **measured,
    }


def _serve(
    clients: int,
    seconds: float,
    groups: int,
    ingest_share: float,
    embedder: str,
    progress: bool,
    seed: int,
    options: dict[str, Any],
) -> dict[str, Any]:
    """Start a server (``options``: its keyword options), load it, stop it; the measured part
    of the report."""
    names = [f"bench-{i}" for i in range(groups)]
    api_keys = {f"bench-key-{i:04d}-{os.urandom(6).hex()}": [g] for i, g in enumerate(names)}
    by_group = {groups_[0]: {"Authorization": f"Bearer {k}"} for k, groups_ in api_keys.items()}
    with tempfile.TemporaryDirectory(prefix="speakerflow-bench-serve-") as tmp:
        t0 = time.perf_counter()
        with Server(Path(tmp), api_keys, embedder, **options) as server:
            start_s = time.perf_counter() - t0
            if progress:
                print(
                    f"server up on {server.url} in {start_s:.1f}s; seeding {groups} group(s), then "
                    f"{clients} client(s) for {seconds:g}s",
                    file=sys.stderr,
                    flush=True,
                )
            load_before = os.getloadavg()[0]
            res = asyncio.run(
                run_load(
                    server.url,
                    clients,
                    seconds,
                    names,
                    by_group,
                    ingest_share,
                    seed,
                    progress,
                    cpu_probe=server.cpu_by_process,
                )
            )
            load_after = os.getloadavg()[0]
            rss, peak = server.rss_mb()
            alive = server.proc.poll() is None
    return {
        "server_start_s": round(start_s, 2),
        "load_avg_1m": [round(load_before, 1), round(load_after, 1)],
        **_results(res, alive),
        "server_rss_mb": rss,
        "server_peak_rss_mb": peak,
        "writes": res["writes"],
    }


def _results(res: dict[str, Any], alive: bool) -> dict[str, Any]:
    """The load's figures: CPU, requests, errors, ask / ingest latencies, busy clients."""
    write_errors = [f"{g}: {w['last_error']}" for g, w in res["writes"].items() if w["last_error"]]
    requests = res["counts"]["requests"]
    return {
        # CPU seconds used during the concurrent phase: by the server process, by the clients
        **res["cpu"],
        "elapsed_s": res["elapsed_s"],
        "requests": requests,
        "requests_per_s": round(requests / res["elapsed_s"], 1) if res["elapsed_s"] else None,
        "errors": len(res["errors"]) + len(write_errors) + (0 if alive else 1),
        "error_samples": (res["errors"] + write_errors)[:5] + ([] if alive else ["server died"]),
        "ask": {
            **_summary(res["ask_ms"]),
            "query_path_p50_ms": pct(res["ask_query_ms"], 50, 2),
            "query_path_p95_ms": pct(res["ask_query_ms"], 95, 2),
            "server_p50_ms": pct(res["ask_server_ms"], 50, 2),
            "server_p95_ms": pct(res["ask_server_ms"], 95, 2),
            "group_wait_p50_ms": pct(res["ask_wait_ms"], 50, 2),
            "group_wait_p95_ms": pct(res["ask_wait_ms"], 95, 2),
            "with_citations": res["counts"]["asks_with_citations"],
        },
        "ingest": {**_summary(res["ingest_ms"]), "messages": res["counts"]["ingested_messages"]},
        "ask_one_client": {
            **_summary(res["solo"]["ask_ms"]),
            "server_p50_ms": pct(res["solo"]["server_ms"], 50, 2),
            "query_path_p50_ms": pct(res["solo"]["query_ms"], 50, 2),
        },
        # where the clients' time went (Little's law: the mean number of clients in each kind
        # of request = its requests/s x its mean latency); clients parked on ingests do not ask
        "clients_asking_mean": _busy(res["ask_ms"], res["elapsed_s"]),
        "clients_ingesting_mean": _busy(res["ingest_ms"], res["elapsed_s"]),
        "server_cpu_ms_per_request": round(1000 * res["cpu"]["server_cpu_s"] / requests, 2)
        if res["cpu"].get("server_cpu_s") and requests
        else None,
    }


def _busy(latencies_ms: list[float], elapsed_s: float) -> float | None:
    """Mean number of clients inside such a request over the run."""
    return round(sum(latencies_ms) / 1000 / elapsed_s, 1) if elapsed_s else None


def format_report(report: dict[str, Any]) -> str:
    """The report as a few lines for people."""
    a, i, s = report["ask"], report["ingest"], report["ask_one_client"]
    lines = [
        f"bench serve: {report['clients']} clients, {report['groups']} groups, "
        f"{report['elapsed_s']}s, "
        f"embedder {report['embedder']}, workers {report.get('workers', 1)}, "
        f"reads {report.get('reads', 'locked')}, query batching "
        f"{report.get('query_batching', False)}, ask threads {report.get('ask_threads')}, "
        f"write nice {report.get('write_nice', 0)}, "
        f"{report['cpus']} CPU(s), "
        f"load average {report.get('load_avg_1m')}",
        f"  requests     {report['requests']} ({report['requests_per_s']}/s), errors "
        f"{report['errors']}",
        f"  ask          {a['count']}: p50 {a['p50_ms']} ms, p95 {a['p95_ms']} ms, p99 "
        f"{a['p99_ms']} ms "
        f"(in server p50 {a['server_p50_ms']} ms, of it waiting for the group p50 "
        f"{a['group_wait_p50_ms']} ms; "
        f"query path p50 {a['query_path_p50_ms']} ms); "
        f"{a['with_citations']} with cited ids",
        f"  ask, 1 client {s['count']} before the load: p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms "
        f"(in server p50 {s['server_p50_ms']} ms; query path p50 {s['query_path_p50_ms']} ms)",
        f"  ingest       {i['count']} requests, {i['messages']} messages: p50 {i['p50_ms']} ms, "
        f"p95 {i['p95_ms']} ms",
        f"  clients      {report.get('clients_asking_mean')} asking and "
        f"{report.get('clients_ingesting_mean')} ingesting on average; server CPU "
        f"{report.get('server_cpu_ms_per_request')} ms per request",
        f"  server RSS   {report['server_rss_mb']} MiB (peak {report['server_peak_rss_mb']} MiB); "
        "CPU seconds "
        f"used meanwhile: server {report.get('server_cpu_s')}, "
        f"clients {report.get('client_cpu_s')}",
    ]
    if len(report.get("server_cpu_by_process") or {}) > 1:
        by = report["server_cpu_by_process"]
        lines.append("  server CPU s  " + ", ".join(f"{k} {v}" for k, v in sorted(by.items())))
    lines += [f"  error: {e}" for e in report["error_samples"]]
    return "\n".join(lines)


def run_many(workers: list[int], **kw: Any) -> dict[str, Any]:
    """:func:`run` once per ``workers`` value, one after the other (same load, same seed):
    ``{"benchmark": "serve", "runs": [report, ...]}``; ``errors`` is their sum."""
    runs: list[dict[str, Any]] = []
    for n in workers:
        if kw.get("progress", True):
            print(f"-- workers {n}", file=sys.stderr, flush=True)
        try:
            runs.append(run(workers=n, **kw))
        except RuntimeError as exc:  # the server did not start: reported, the others still run
            runs.append({"workers": n, "errors": 1, "error": str(exc)[-2000:]})
    return {"benchmark": "serve", "runs": runs, "errors": sum(r["errors"] for r in runs)}


def format_comparison(result: dict[str, Any]) -> str:
    """Each run's report, then one line per run side by side."""
    runs = [r for r in result["runs"] if "error" not in r]
    out = [format_report(r) for r in runs]
    out += [f"workers {r['workers']}: failed: {r['error']}" for r in result["runs"] if "error" in r]
    out.append(
        "workers  load avg      req/s  ask p50 / p95 ms   ask alone p50  ingest p50  "
        "CPU ms/req  errors"
    )
    for r in runs:
        a, s, i = r["ask"], r["ask_one_client"], r["ingest"]
        out.append(
            f"{r['workers']:>7}  {str(r['load_avg_1m']):<12}  {r['requests_per_s']:>5}  "
            f"{a['p50_ms']} / {a['p95_ms']}  {s['p50_ms']:>13}  {i['p50_ms']:>10}  "
            f"{r.get('server_cpu_ms_per_request')!s:>10}  {r['errors']}"
        )
    return "\n".join(out)

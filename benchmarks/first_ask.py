"""``speakerflow bench first-ask``: what the first requests cost after a fresh server start.

A store home with one LoCoMo conversation (ingested once with MiniLM, Writer and embeddings,
when the home has no group yet) is served ``starts`` times by a fresh ``speakerflow serve``
process (the CLI, on a free loopback port). Each time, once the server reports ready, the
client times its first ask, a second ask and its first inject. The report gives each
start's figures and their median (p50), and the seconds from the process start to ready:
a server that warms before it reports ready pays at start what the first requests paid.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from .serve_server import Server

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
#: questions of no particular conversation (the clock, not the answer, is measured)
QUESTIONS = ("What are their plans for next month?", "Who talked about their family?")
EVENT = {"content": "anything new about the trip?", "ts": "2026-06-01T10:00:00Z"}


def prepare(home: Path, data: Path = LOCOMO, conversation: int = 0, embedder: str = "minilm"):
    """The group the benchmark asks: the home's first group, or LoCoMo conversation
    ``conversation`` of ``data`` ingested into it first (append, Writer, embeddings)."""
    from speakerflow.memory import Memory
    from speakerflow.ops.loaders import load

    with Memory(home=home, embedder=embedder) as mem:
        if mem.groups():
            return mem.groups()[0]
        group, table = load(data, "locomo")[conversation]
        with mem.use(group, create=True) as store:
            store.append_messages(table)
        mem.write(group)
        return group


def _timed(client: httpx.Client, path: str, body: dict) -> tuple[float, httpx.Response]:
    t0 = time.perf_counter()
    r = client.post(path, json=body)
    return (time.perf_counter() - t0) * 1000, r


def run(
    home: Path,
    starts: int = 10,
    workers: int = 1,
    embedder: str = "minilm",
    data: Path = LOCOMO,
    progress: bool = True,
) -> dict[str, Any]:
    """Start and stop ``starts`` fresh servers on ``home``; the report (module docstring)."""
    if starts < 1:
        raise ValueError("starts >= 1")
    group = prepare(home, data, embedder=embedder)
    key = f"bench-first-{os.urandom(6).hex()}"
    headers = {"Authorization": f"Bearer {key}"}
    rows = []
    for n in range(starts):
        with (
            tempfile.TemporaryDirectory(prefix="speakerflow-bench-first-") as tmp,
            Server(Path(tmp), {key: [group]}, embedder, workers=workers, store=home) as server,
            httpx.Client(base_url=server.url, timeout=300, headers=headers) as c,
        ):
            path = f"/v1/groups/{group}"
            first, r1 = _timed(c, f"{path}/ask", {"question": QUESTIONS[0]})
            second, r2 = _timed(c, f"{path}/ask", {"question": QUESTIONS[1]})
            inject, r3 = _timed(c, f"{path}/inject", {"event": EVENT})
            for r in (r1, r2, r3):
                r.raise_for_status()
            row = {
                "ready_s": round(server.ready_s, 2),
                "first_ask_ms": round(first, 1),
                "first_ask_server_ms": r1.json()["server_ms"],
                "second_ask_ms": round(second, 1),
                "first_inject_ms": round(inject, 1),
                "load_avg_1m": round(os.getloadavg()[0], 1),
            }
            rows.append(row)
            if progress:
                print(f"  start {n + 1}/{starts}: {row}", flush=True)
    med = {k: round(statistics.median(r[k] for r in rows), 1) for k in rows[0]}
    return {
        "benchmark": "first-ask",
        "group": group,
        "workers": workers,
        "embedder": embedder,
        "starts": starts,
        "cpus": os.cpu_count(),
        "p50": med,
        "runs": rows,
    }


def format_report(report: dict[str, Any]) -> str:
    m = report["p50"]
    return (
        f"bench first-ask: {report['starts']} fresh starts, group {report['group']}, workers "
        f"{report['workers']}, embedder {report['embedder']}, {report['cpus']} CPU(s)\n"
        f"  p50: ready {m['ready_s']} s after the start; first ask {m['first_ask_ms']} ms (in "
        f"server {m['first_ask_server_ms']} ms), second ask {m['second_ask_ms']} ms, first "
        f"inject {m['first_inject_ms']} ms; load average {m['load_avg_1m']}"
    )

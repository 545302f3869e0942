"""``speakerflow bench serve-overhead``: CPU per request of the HTTP app, per route, in one
process (it lives beside the app, which the benchmarks layer may not import): the ASGI app
called through httpx's ASGI transport (the guard, routing, validation, the handler,
rendering; no sockets; the client's own CPU is counted too), one request at a time, on a
group of the bundled sample (hashing embedder, so no model time is counted). ``/healthz``
and ``/status`` are nearly all framework; ``/memory`` and ``/search`` add rendering their
rows; ``/ask`` repeats one question (its vector memoised), so it is the query path plus the
framework. CPU is ``time.process_time`` (all threads), so the load of the machine changes
it little.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from typing import Any

import httpx

from speakerflow.memory import Memory
from speakerflow.settings import BUNDLED_SAMPLE

from .access import Access
from .app import create_app

KEY = "bench-overhead-key"
ROUTES = {
    "healthz": ("GET", "/healthz", None),
    "status": ("GET", "/v1/groups/team/status", None),
    "memory": ("GET", "/v1/groups/team/memory", None),
    "search": ("GET", "/v1/groups/team/search?q=offsite&k=10", None),
    "ask": ("POST", "/v1/groups/team/ask", {"question": "Where will the offsite be?"}),
}


async def _measure(app: Any, requests: int, rounds: int) -> dict[str, Any]:
    rows = [
        {k: v for k, v in json.loads(line).items() if k != "group_id"}
        for line in BUNDLED_SAMPLE.read_text().splitlines()
        if line.strip()
    ]
    headers = {"Authorization": f"Bearer {KEY}"}
    transport = httpx.ASGITransport(app=app)
    out: dict[str, list[float]] = {name: [] for name in ROUTES}
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", headers=headers) as c,
    ):
        (await c.post("/v1/groups/team/messages", json=rows)).raise_for_status()
        await asyncio.to_thread(app.state.queue.wait_idle, 120)
        for _ in range(rounds):
            for name, (method, path, body) in ROUTES.items():
                for _ in range(20):  # warm: caches, the route's first call
                    (await c.request(method, path, json=body)).raise_for_status()
                t0 = time.process_time()
                for _ in range(requests):
                    r = await c.request(method, path, json=body)
                out[name].append((time.process_time() - t0) * 1000 / requests)
                r.raise_for_status()
    return {
        name: {
            "cpu_ms_per_request": round(statistics.median(v), 3),
            "rounds": [round(x, 3) for x in v],
        }
        for name, v in out.items()
    }


def run(requests: int = 300, rounds: int = 3) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="speakerflow-overhead-") as tmp:
        app = create_app(
            Memory(home=tmp, embedder="hashing"), Access({KEY: ["*"]}), coalesce=0.0, mcp=False
        )
        load = os.getloadavg()[0]
        routes = asyncio.run(_measure(app, requests, rounds))
    return {
        "benchmark": "serve_overhead",
        "requests": requests,
        "rounds": rounds,
        "load_avg_1m": [round(load, 1), round(os.getloadavg()[0], 1)],
        "routes": routes,
    }

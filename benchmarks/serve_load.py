"""The clients of ``speakerflow bench serve`` (:mod:`.serve`): seed every group, ask alone,
then ``clients`` concurrent asyncio + httpx clients for ``seconds``, each sending an ingest
of five new messages (``ingest_share`` of its requests) or an ask to a random group;
:func:`run_load` returns the raw latencies, errors, counts and CPU seconds."""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from speakerflow.settings import BUNDLED_SAMPLE

QUESTIONS = [
    "Where will the offsite be?",
    "Who prefers Lisbon?",
    "What is the budget per person?",
    "When is the offsite?",
    "What did Ben say about the flights?",
    "Who will book the hotel?",
    "What does Chloe think about Porto?",
    "What did Dev decide?",
]
TOPICS = [
    "the hotel booking",
    "the train to Porto",
    "the workshop agenda",
    "dinner on Tuesday",
    "the budget sheet",
    "the client demo",
    "the flight times",
    "the team photo",
    "the venue",
    "the catering order",
    "the slides",
    "the travel refunds",
    "the museum visit",
    "the late checkout",
    "the airport transfer",
    "the boat trip",
    "the wine tasting",
    "the room list",
    "the name badges",
    "the projector",
    "the rain plan",
    "the visa letters",
    "the vegan menu",
    "the bus schedule",
]
TEMPLATES = [
    "What did {p} say about {t}?",
    "Who mentioned {t}?",
    "When was {t} discussed?",
    "What does {p} think about {t}?",
    "Did {p} agree to {t}?",
    "What was decided about {t}?",
]
PEOPLE = ["Ana", "Ben", "Chloe", "Dev"]


def question(rng: random.Random) -> str:
    """A question from the sample's own, or one of 576 templated ones (so most asks encode a
    question the embedder has not memoised)."""
    if rng.random() < 0.25:
        return rng.choice(QUESTIONS)
    return rng.choice(TEMPLATES).format(p=rng.choice(PEOPLE), t=rng.choice(TOPICS))


VERBS = [
    "I will handle",
    "Can someone check",
    "I prefer to postpone",
    "Good news about",
    "I am worried about",
]


def _sample_rows() -> list[dict]:
    rows = [json.loads(line) for line in BUNDLED_SAMPLE.read_text().splitlines() if line.strip()]
    for r in rows:
        r.pop("group_id", None)
    return rows


async def _wait_written(
    client: httpx.AsyncClient, groups: list[str], keys: dict[str, dict[str, str]], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = []
        for g in groups:
            r = await client.get(f"/v1/groups/{g}/status", headers=keys[g])
            r.raise_for_status()
            states.append(r.json()["write"]["state"])
        if all(s == "idle" for s in states):
            return
        await asyncio.sleep(0.2)
    raise RuntimeError(f"background writes did not finish within {timeout:.0f}s")


@dataclass
class _Tally:
    """What the concurrent clients saw: latencies (ms), errors and counts."""

    ask_ms: list[float] = field(default_factory=list)
    ask_query_ms: list[float] = field(default_factory=list)
    ask_server_ms: list[float] = field(default_factory=list)
    ask_wait_ms: list[float] = field(default_factory=list)
    ingest_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(
        default_factory=lambda: {"requests": 0, "ingested_messages": 0, "asks_with_citations": 0}
    )


async def run_load(
    url: str,
    clients: int,
    seconds: float,
    groups: list[str],
    keys: dict[str, dict[str, str]],
    ingest_share: float,
    rng_seed: int,
    progress: bool,
    solo_asks: int = 100,
    cpu_probe=lambda: None,
) -> dict[str, Any]:
    """Seed the groups, ask alone, then run ``clients`` concurrent clients for ``seconds``;
    the raw measurements."""
    tally = _Tally()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=60.0, limits=limits) as client:
        await _seed(client, groups, keys)
        solo = await _solo(client, groups, keys, rng_seed, seconds, solo_asks, tally.errors)
        start = time.perf_counter()
        deadline = start + seconds
        cpu_start, own_start = cpu_probe(), time.process_time()
        tasks = [
            _worker(client, i, rng_seed, deadline, groups, keys, ingest_share, tally)
            for i in range(clients)
        ] + ([_ticker(start, deadline, tally)] if progress else [])
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
        cpu_end, own_end = cpu_probe(), time.process_time()
        cpu = {
            "server_cpu_s": round(sum(cpu_end.values()) - sum(cpu_start.values()), 1)
            if cpu_start and cpu_end
            else None,
            # per process of the server (--workers N: supervisor, writer, each reader)
            "server_cpu_by_process": {
                k: round(v - (cpu_start or {}).get(k, 0.0), 1) for k, v in (cpu_end or {}).items()
            },
            "client_cpu_s": round(own_end - own_start, 1),
        }
        await _wait_written(client, groups, keys, timeout=600)
        writes = {}
        for g in groups:
            st = (await client.get(f"/v1/groups/{g}/status", headers=keys[g])).json()
            writes[g] = {
                "writes": st["write"]["writes"],
                "last_error": st["write"]["last_error"],
                "messages": st["stats"]["messages"],
                "records": st["stats"]["records"],
            }
    return {
        "elapsed_s": round(elapsed, 2),
        "ask_ms": tally.ask_ms,
        "ask_query_ms": tally.ask_query_ms,
        "ask_server_ms": tally.ask_server_ms,
        "ask_wait_ms": tally.ask_wait_ms,
        "ingest_ms": tally.ingest_ms,
        "errors": tally.errors,
        "counts": tally.counts,
        "writes": writes,
        "solo": solo,
        "cpu": cpu,
    }


async def _seed(
    client: httpx.AsyncClient, groups: list[str], keys: dict[str, dict[str, str]]
) -> None:
    """Seed and write every group before the clock starts, then one warm ask per group."""
    for g in groups:
        r = await client.post(f"/v1/groups/{g}/messages", json=_sample_rows(), headers=keys[g])
        r.raise_for_status()
    await _wait_written(client, groups, keys, timeout=600)
    for g in groups:
        (
            await client.post(
                f"/v1/groups/{g}/ask", json={"question": QUESTIONS[0]}, headers=keys[g]
            )
        ).raise_for_status()


async def _solo(
    client: httpx.AsyncClient,
    groups: list[str],
    keys: dict[str, dict[str, str]],
    rng_seed: int,
    seconds: float,
    solo_asks: int,
    errors: list[str],
) -> dict[str, list[float]]:
    """One client, one ask at a time (up to ``solo_asks`` or 10 s): the warm latency without
    queueing."""
    solo: dict[str, list[float]] = {"ask_ms": [], "server_ms": [], "query_ms": []}
    rng = random.Random(rng_seed)
    solo_deadline = time.perf_counter() + min(10.0, seconds)
    for n in range(solo_asks):
        if time.perf_counter() > solo_deadline:
            break
        g = groups[n % len(groups)]
        t0 = time.perf_counter()
        r = await client.post(
            f"/v1/groups/{g}/ask", json={"question": question(rng)}, headers=keys[g]
        )
        if r.status_code != 200:
            errors.append(f"{r.status_code} {r.text[:200]}")
            continue
        solo["ask_ms"].append((time.perf_counter() - t0) * 1000)
        solo["server_ms"].append(r.json()["server_ms"])
        solo["query_ms"].append(r.json()["latency_ms"] + r.json()["answer_ms"])
    return solo


async def _worker(
    client: httpx.AsyncClient,
    i: int,
    rng_seed: int,
    deadline: float,
    groups: list[str],
    keys: dict[str, dict[str, str]],
    ingest_share: float,
    tally: _Tally,
) -> None:
    """Client ``i``: an ingest (``ingest_share`` of its requests) or an ask to a random group,
    one after the other until ``deadline``."""
    rng = random.Random(rng_seed * 1000 + i)
    n = 0
    while time.perf_counter() < deadline:
        g = rng.choice(groups)
        n += 1
        t0 = time.perf_counter()
        try:
            if rng.random() < ingest_share:
                r = await _ingest(client, g, keys[g], _batch(rng, i, n), t0, tally)
            else:
                r = await _ask(client, g, keys[g], question(rng), t0, tally)
            if r.status_code != 200:
                tally.errors.append(f"{r.status_code} {r.text[:200]}")
        except httpx.HTTPError as exc:
            tally.errors.append(f"{type(exc).__name__}: {exc}")
        tally.counts["requests"] += 1


def _batch(rng: random.Random, i: int, n: int) -> list[dict[str, Any]]:
    """Five new messages of client ``i``'s ``n``-th request, at one random working time."""
    hour, minute = rng.randrange(8, 19), rng.randrange(60)
    ts = f"2026-04-{1 + n % 28:02d}T{hour:02d}:{minute:02d}:00Z"
    return [
        {
            "msg_id": f"c{i}-r{n}-m{j}",
            "session_id": f"bench-{i}",
            "ts": ts,
            "speaker": rng.choice(PEOPLE),
            "text": f"{rng.choice(VERBS)} {rng.choice(TOPICS)}.",
        }
        for j in range(5)
    ]


async def _ingest(
    client: httpx.AsyncClient,
    g: str,
    headers: dict[str, str],
    batch: list[dict[str, Any]],
    t0: float,
    tally: _Tally,
) -> httpx.Response:
    """Ingest ``batch`` into ``g``; a success's latency (since ``t0``) and messages counted."""
    r = await client.post(f"/v1/groups/{g}/messages", json=batch, headers=headers)
    ms = (time.perf_counter() - t0) * 1000
    if r.status_code == 200:
        tally.ingest_ms.append(ms)
        tally.counts["ingested_messages"] += r.json()["ingested"]
    return r


async def _ask(
    client: httpx.AsyncClient,
    g: str,
    headers: dict[str, str],
    text: str,
    t0: float,
    tally: _Tally,
) -> httpx.Response:
    """Ask ``g``; a success's latency (since ``t0``) and the server's own times counted."""
    r = await client.post(f"/v1/groups/{g}/ask", json={"question": text}, headers=headers)
    ms = (time.perf_counter() - t0) * 1000
    if r.status_code == 200:
        body = r.json()
        tally.ask_ms.append(ms)
        tally.ask_query_ms.append(body["latency_ms"] + body["answer_ms"])
        tally.ask_server_ms.append(body["server_ms"])
        tally.ask_wait_ms.append(body.get("wait_ms", 0.0))
        tally.counts["asks_with_citations"] += bool(body["cited_ids"])
    return r


async def _ticker(start: float, deadline: float, tally: _Tally) -> None:
    """Progress on stderr every 10 s until ``deadline``."""
    while time.perf_counter() < deadline:
        await asyncio.sleep(min(10.0, max(0.0, deadline - time.perf_counter())))
        print(
            f"  {time.perf_counter() - start:5.1f}s  {tally.counts['requests']} requests, "
            f"{len(tally.errors)} errors",
            file=sys.stderr,
            flush=True,
        )

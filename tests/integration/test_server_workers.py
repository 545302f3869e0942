"""``speakerflow serve --workers 2``: two reader processes and a writer process on one port.
Writes go through a reader to the writer; a snapshot the writer publishes reaches every
reader without a restart; a forget reaches them too (a real server, real stores)."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from speakerflow.benchmarks.serve_server import Server
from speakerflow.settings import BUNDLED_SAMPLE

ROWS = [
    {k: v for k, v in json.loads(line).items() if k != "group_id"}
    for line in BUNDLED_SAMPLE.read_text().splitlines()
    if line.strip()
]
KEY = "key-team-000001"
H = {"Authorization": f"Bearer {KEY}"}


def _idle(client: httpx.Client, group: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = client.get(f"/v1/groups/{group}/status", headers=H).json()
        if st["write"]["state"] in ("idle", "failed"):
            return st
        time.sleep(0.1)
    raise AssertionError(f"the write of {group} did not finish")


def _per_reader(url: str, query: str, readers: int = 2, tries: int = 60) -> dict[int, list]:
    """Search ``query`` on fresh connections (the kernel spreads them over the readers) until
    every reader answered; {reader pid: hit ids}."""
    seen: dict[int, list] = {}
    for _ in range(tries):
        with httpx.Client(base_url=url, timeout=60) as c:  # one connection: one reader
            pid = c.get("/healthz").json()["pid"]
            r = c.get("/v1/groups/team/search", params={"q": query}, headers=H)
            assert r.status_code == 200, r.text
            seen[pid] = [h["msg_id"] for h in r.json()["hits"]]
        if len(seen) == readers:
            break
    return seen


@pytest.mark.timeout(600)
def test_two_readers_serve_what_the_writer_publishes(tmp_path):
    with Server(tmp_path, {KEY: ["team"]}, embedder="hashing", workers=2) as server:
        health = httpx.get(server.url + "/healthz").json()
        assert health["role"] == "reader" and health["ready"]
        with httpx.Client(base_url=server.url, timeout=60) as c:
            r = c.post("/v1/groups/team/messages", json=ROWS, headers=H)  # forwarded
            assert r.status_code == 200 and r.json()["ingested"] == len(ROWS)
            assert c.post("/v1/groups/team/messages", json=ROWS, headers={}).status_code == 401
            st = _idle(c, "team")
            assert st["write"]["last_error"] is None and st["stats"]["messages"] == len(ROWS)
            ask = c.post(
                "/v1/groups/team/ask", json={"question": "Where will the offsite be?"}, headers=H
            )
            assert ask.status_code == 200 and "s2-t05" in ask.json()["cited_ids"]
            assert c.get("/v1/groups/team/memory", headers=H).json()["records"]
            wc = c.post("/v1/groups/team/inject", json={"event": {"content": "Porto?"}}, headers=H)
            assert wc.status_code == 200 and "text" in wc.json()
            # maintain is forwarded to the writer, which owns the group's Kuzu file
            r = c.post("/v1/groups/team/maintain", json={"now": "2026-05-01T00:00:00Z"}, headers=H)
            assert r.status_code == 200 and r.json()["entity_path"]["events"] == len(ROWS), r.text
            # a later write: every reader serves it, without a restart
            new = {"msg_id": "late-1", "ts": "2026-06-01T10:00:00Z", "speaker": "Ana"}
            new["text"] = "The zeppelin tour is booked for the whole team."
            assert c.post("/v1/groups/team/messages", json=[new], headers=H).status_code == 200
            _idle(c, "team")
        deadline = time.monotonic() + 10  # each reader polls its manifest every 0.25 s
        while True:
            seen = _per_reader(server.url, "zeppelin")
            if all(ids == ["late-1"] for ids in seen.values()) or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert len(seen) == 2 and all(ids == ["late-1"] for ids in seen.values()), seen
        # a forget: no reader finds the message afterwards
        with httpx.Client(base_url=server.url, timeout=60) as c:
            r = c.post("/v1/groups/team/forget", json={"message_ids": ["late-1"]}, headers=H)
            assert r.status_code == 200, r.text
        deadline = time.monotonic() + 10
        while True:
            seen = _per_reader(server.url, "zeppelin")
            if all(ids == [] for ids in seen.values()) or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert len(seen) == 2 and all(ids == [] for ids in seen.values()), seen
    log = server.log.read_text()
    assert "speakerflow serve: ready on" in log and "Traceback" not in log, log[-3000:]

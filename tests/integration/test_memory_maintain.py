"""``Memory.maintain`` and ``POST /v1/groups/{group}/maintain``: the entity path and one
maintenance tick on the open store (what ``speakerflow maintain --group`` runs), after which
``inject`` reads the new facts (from a new read snapshot where the snapshot carries them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import speakerflow
from speakerflow.cli import main
from speakerflow.memory import Memory
from speakerflow.server import Access, create_app

SAMPLE = Path(speakerflow.__file__).parent / "data" / "sample_events.jsonl"
NOW = "2026-05-14T09:00:00Z"
EVENT = {"content": "Buy XBT now? fees and my position size", "ts": NOW}
KEY = {"Authorization": "Bearer key-desk-000001"}


def _knowledge(context: dict) -> list[dict]:
    return [line for line in context["lines"] if line["kind"] == "knowledge"]


@pytest.fixture()
def home(tmp_path: Path, capsys) -> Path:
    ingest = ["ingest", str(SAMPLE), "--format", "events", "--writer", "none"]
    assert main([*ingest, "--embedder", "none", "--home", str(tmp_path)]) == 0
    capsys.readouterr()
    return tmp_path


def test_memory_maintain_then_inject_reads_the_new_facts(home: Path):
    from datetime import datetime

    with Memory(home=home, embedder="hashing") as mem:
        mem.snapshot_knowledge = True  # as the servers run it
        assert not _knowledge(mem.inject("desk", EVENT, user="ana").as_dict())
        before = mem.snapshot("desk")
        report = mem.maintain("desk", now=datetime.fromisoformat(NOW))
        assert report["entity_path"]["events"] == 8 and report["entity_path"]["facts"] > 0
        assert report["tick"]["probes_run"][0] == "stale_sweep"
        assert mem.current_snapshot("desk") is not before  # a new snapshot, with the facts
        lines = _knowledge(mem.inject("desk", EVENT, user="ana").as_dict())
        assert lines and all(line["kind"] == "knowledge" for line in lines)
        again = mem.maintain("desk", now=datetime.fromisoformat(NOW))
        assert again["entity_path"]["events"] == 0
        assert again["entity_path"]["facts"] == report["entity_path"]["facts"]
    with Memory(home=home, read_only=True) as ro, pytest.raises(PermissionError):
        ro.maintain("desk")


def test_maintain_over_http(home: Path):
    app = create_app(
        Memory(home=home, embedder="hashing"), Access({"key-desk-000001": ["desk"]}), coalesce=0.0
    )
    with TestClient(app) as c:
        inject = {"event": EVENT, "user": "ana"}
        assert not _knowledge(c.post("/v1/groups/desk/inject", json=inject, headers=KEY).json())
        r = c.post("/v1/groups/desk/maintain", json={"now": NOW, "seed": 1}, headers=KEY)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["entity_path"]["events"] == 8
        assert json.loads(body["tick"]["log_lines"][-1])["at"].startswith("2026-05-14T09:00:00")
        assert _knowledge(c.post("/v1/groups/desk/inject", json=inject, headers=KEY).json())
        r = c.post("/v1/groups/desk/maintain", json={"now": "not a time"}, headers=KEY)
        assert r.status_code == 422 and "now" in r.json()["message"], r.text
        r = c.post("/v1/groups/nowhere/maintain", json={}, headers={"Authorization": "Bearer x"})
        assert r.status_code == 401

"""Frozen IT-operations domain data (tests/data/domains/itops): hashes and shape.

The test stream and probes are never edited; errata go into the folder's README.md.
Standard library only.
"""

import hashlib
import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "domains" / "itops"

SHA256 = {
    "spec.md": "b76477278d20a342eed19e8edb017088780dffa6167e68f247ea69e4d5eeb0f1",
    "dev_events.jsonl": "f4cc3e6f7efc1968c4fe5cb140e0a67e174f7c0c169aefc32acd541af81821e5",
    "test_events.jsonl": "59ec247a819ee5ffbbfafbf7bc9d5cc01769200c513b17c7505b96e208b7d5fc",
    "test_probes.jsonl": "81e1e58bb61e5979a7afe8b4625f015a5b51f5f99bc628e5efba5cc75368bc0b",
}

EVENT_FIELDS = ("event_id", "group_id", "ts", "source_type", "source", "trust_tier", "content")
SOURCE_TYPES = {"user_turn", "tool_observation", "market_update", "portfolio_change", "risk_signal"}
PROBE_FIELDS = (
    "probe_id",
    "ts",
    "user",
    "request",
    "intent",
    "expect",
    "stale",
    "rumour",
    "evidence",
)
INTENTS = {
    "incident_triage",
    "deploy_check",
    "on_call_lookup",
    "capacity_review",
    "postmortem_prep",
    "other",
}
FACT_KEYS = {"entity", "relation", "value"}


def _rows(name):
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    assert lines, name
    return [json.loads(line) for line in lines]


def test_sha256():
    for name, digest in SHA256.items():
        got = hashlib.sha256((DATA / name).read_bytes()).hexdigest()
        assert got == digest, f"{name} changed: frozen data must not be edited (add errata)"


def _check_events(name):
    rows = _rows(name)
    ids = set()
    prev = ""
    for row in rows:
        for field in EVENT_FIELDS:
            assert field in row, (name, row.get("event_id"), field)
        assert row["group_id"] == "itops"
        assert row["source_type"] in SOURCE_TYPES, row["event_id"]
        assert row["trust_tier"] in (1, 2, 3), row["event_id"]
        assert isinstance(row["content"], str) and row["content"].strip()
        assert row["ts"].endswith("Z") and len(row["ts"]) == 20, row["ts"]
        assert row["ts"] > prev, (name, row["event_id"], "ts not increasing")
        prev = row["ts"]
        assert row["event_id"] not in ids, (name, row["event_id"], "duplicate")
        ids.add(row["event_id"])
        if "reply_to" in row:
            assert row["reply_to"] in ids, (name, row["event_id"], "reply_to unknown/later")
    return rows


def test_dev_events():
    _check_events("dev_events.jsonl")


def test_test_events():
    rows = _check_events("test_events.jsonl")
    assert len(rows) >= 150


def test_streams_share_no_line():
    dev = set((DATA / "dev_events.jsonl").read_text(encoding="utf-8").splitlines())
    test = set((DATA / "test_events.jsonl").read_text(encoding="utf-8").splitlines())
    assert not dev & test
    dev_ids = {r["event_id"] for r in _rows("dev_events.jsonl")}
    assert not dev_ids & {r["event_id"] for r in _rows("test_events.jsonl")}


def test_probes():
    events = {r["event_id"]: r for r in _rows("test_events.jsonl")}
    first = min(r["ts"] for r in events.values())
    probes = _rows("test_probes.jsonl")
    assert len(probes) >= 35
    seen = set()
    for probe in probes:
        for field in PROBE_FIELDS:
            assert field in probe, (probe.get("probe_id"), field)
        pid = probe["probe_id"]
        assert pid not in seen, pid
        seen.add(pid)
        assert probe["intent"] in INTENTS, pid
        assert probe["ts"] > first, pid
        assert probe["expect"], pid
        for key in ("expect", "stale", "rumour"):
            for fact in probe[key]:
                assert set(fact) == FACT_KEYS, (pid, key, fact)
        assert probe["evidence"], pid
        for eid in probe["evidence"]:
            assert eid in events, (pid, eid, "evidence not in test stream")
            assert events[eid]["ts"] < probe["ts"], (pid, eid, "evidence after probe ts")

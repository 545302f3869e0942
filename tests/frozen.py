"""The check of a frozen data folder, shared by its tests (tests/unit/test_*_frozen.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def assert_files_unchanged(root: Path, sha256: dict[str, str], skip: tuple[str, ...] = ()) -> None:
    """Every file under ``root`` (but the names in ``skip``) is one of ``sha256``'s, each with
    its pinned digest, and none is missing: any edit, addition or removal fails."""
    paths = [p for p in root.rglob("*") if p.is_file() and p.name not in skip]
    files = {p.name: p for p in paths}
    assert len(files) == len(paths), f"two files under {root} share a name"
    assert sorted(files) == sorted(sha256)
    for name, path in files.items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256[name], name


def conversations(root: Path) -> dict[str, list[dict]]:
    """An answer set's conversations (``root/conversations/*.jsonl``) by file stem."""
    return {
        p.stem: [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines()]
        for p in sorted((root / "conversations").glob("*.jsonl"))
    }


def load_json(root: Path, name: str):
    return json.loads((root / name).read_text(encoding="utf-8"))


def check_question(q: dict, convs: dict[str, list[dict]], types: set[str]) -> None:
    """What every answer-set question must hold: its fields, a known type and conversation,
    gold ids of that conversation, non-empty expected alternatives, per-person names among its
    speakers, and a ``forbid`` for a current-state question."""
    assert {"id", "data", "type", "question", "expect", "gold"} <= q.keys(), q["id"]
    assert q["type"] in types and q["data"] in convs, q["id"]
    msgs = convs[q["data"]]
    assert q["gold"] and set(q["gold"]) <= {m["msg_id"] for m in msgs}, q["id"]
    groups = q["expect"] + list(q.get("per_person", {}).values())
    assert groups and all(g and all(isinstance(a, str) and a for a in g) for g in groups)
    assert set(q.get("per_person", {})) <= {m["speaker"] for m in msgs}, q["id"]
    assert q["type"] != "current" or q.get("forbid"), q["id"]


def check_change(c: dict, convs: dict[str, list[dict]]) -> None:
    """A change of mind: its two messages exist, in order, the later one by its speaker."""
    by_id = {m["msg_id"]: m for m in convs[c["data"]]}
    before, after = by_id[c["before_msg"]], by_id[c["after_msg"]]
    assert before["ts"] < after["ts"] and after["speaker"] == c["speaker"], c

"""The check of a frozen data folder, shared by its tests (tests/unit/test_*_frozen.py)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
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


#: the question types of the answer sets from v3 on
ANSWER_TYPES = frozenset(
    "current original change per-person decision cross-person date why fact".split()
)


def check_answer_conversations(root: Path) -> None:
    """An answer set from v3 on: six conversations of 35-45 messages, 3-6 speakers, three
    sessions on three days, unique ids, sorted times, the format's fields."""
    convs = conversations(root)
    assert len(convs) == 6
    for name, msgs in convs.items():
        assert 35 <= len(msgs) <= 45, name
        assert 3 <= len({m["speaker"] for m in msgs}) <= 6, name
        assert len({m["session_id"] for m in msgs}) == 3, name
        assert len({m["ts"][:10] for m in msgs}) == 3, name
        assert len({m["msg_id"] for m in msgs}) == len(msgs), name
        assert [m["ts"] for m in msgs] == sorted(m["ts"] for m in msgs), name
        for m in msgs:
            assert {"msg_id", "group_id", "session_id", "ts", "speaker", "text"} <= m.keys(), m
            assert m["group_id"] == name, m
            assert m["ts"].startswith("2026-") and m["ts"].endswith("Z"), m


def check_answer_questions(
    root: Path, per_conversation: dict[str, int], least: int, least_each: int
) -> None:
    """Every question well formed (:func:`check_question`), change questions ordered with two
    groups, per-person ones by person only; at least ``least`` in all, ``least_each`` in every
    conversation and ``per_conversation[type]`` of each type there."""
    convs = conversations(root)
    questions = load_json(root, "questions.json")["questions"]
    assert len({q["id"] for q in questions}) == len(questions)
    for q in questions:
        check_question(q, convs, set(ANSWER_TYPES))
        assert q["type"] != "change" or (q.get("ordered") and len(q["expect"]) == 2), q["id"]
        assert q["type"] != "per-person" or (q.get("per_person") and not q["expect"]), q["id"]
    assert len(questions) >= least
    for c in convs:
        types = Counter(q["type"] for q in questions if q["data"] == c)
        assert sum(types.values()) >= least_each, c
        assert all(types[t] >= n for t, n in per_conversation.items()), (c, types)


def check_answer_changes(root: Path, least: int, least_each: int = 0) -> None:
    """At least ``least`` changes of mind (``least_each`` in every conversation), each in
    every conversation's messages and well formed (:func:`check_change`)."""
    convs = conversations(root)
    changes = load_json(root, "changes.json")
    assert len(changes) >= least
    assert {c["data"] for c in changes} == set(convs)
    for c in changes:
        check_change(c, convs)
    each = Counter(c["data"] for c in changes)
    assert all(each[c] >= least_each for c in convs), each


def check_long_conversations(root: Path) -> None:
    """An answer set from v7 on (longer conversations than v3-v6's, more sessions): unique
    ids, sorted times, each message of its own conversation's group."""
    for name, msgs in conversations(root).items():
        assert len({m["msg_id"] for m in msgs}) == len(msgs), name
        assert [m["ts"] for m in msgs] == sorted(m["ts"] for m in msgs), name
        assert all(m["group_id"] == name for m in msgs), name


def check_change_ids(root: Path) -> None:
    """Every labelled change names two messages of the set (from v7 on a change may be
    another person's correction or the group's, so :func:`check_change` does not hold)."""
    ids = {m["msg_id"] for msgs in conversations(root).values() for m in msgs}
    for change in load_json(root, "changes.json"):
        assert {change["before_msg"], change["after_msg"]} <= ids, change

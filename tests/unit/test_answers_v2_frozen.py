"""The frozen answer dev set v2 (issue 23): any edit to its files fails; errata go in its README."""

from collections import Counter
from pathlib import Path

from frozen import assert_files_unchanged, check_change, check_question, conversations, load_json

ROOT = Path(__file__).resolve().parents[1] / "data" / "answers_v2"
TYPES = set("current original change per-person decision cross-person date why fact".split())
SHA256 = {
    "changes.json": "c5484776231489ef1a54505644acebce36cf90d7e22104c753999c2c6a3002fc",
    "book_club.jsonl": "a3d75a713b3734bcf847ba799d354916840e6a53296b3f944844211c338d3fa5",
    "family_move.jsonl": "ee90d3ea6bc8b5fd55b0936dd29f3b8ce96e54bee84827f57f51ae8d84124e9d",
    "flatshare.jsonl": "5b2c1bf571ca56cf8069fa2f5a2d996e7263ce0f8e7124727b975dfd3982db79",
    "football_committee.jsonl": "57d500739e3a7b5baf4474c8136696615fbc38acf3511b5ad8783000c3ae4c4a",
    "game_studio.jsonl": "81b37fbc72ce492814223661870d42329cf027dfc33d47b4c6c955852890b62e",
    "research_lab.jsonl": "af30a95c2e2331e565629d40021cd3df6a8e75bcf75fc8785add6014970ca18a",
    "ward_handover.jsonl": "53254b1e20e1e8973450bc175b5b5c39768c0e7869328d02baa1266ee34be4f1",
    "wedding_planning.jsonl": "1f0fafb86916643139e4870a42a80a38328926fce33f622378d6e307b5f296c0",
    "questions.json": "739e217084d27ebdfb16266894bfbc947326f1217d7470ffc4373daa57f09c39",
}


def test_files_unchanged():
    assert_files_unchanged(ROOT, SHA256, skip=("README.md",))


def test_conversations():
    convs = conversations(ROOT)
    assert len(convs) >= 7
    for name, msgs in convs.items():
        assert 25 <= len(msgs) <= 45, name
        assert 3 <= len({m["speaker"] for m in msgs}) <= 6, name
        assert 2 <= len({m["session_id"] for m in msgs}) <= 3, name
        assert len({m["msg_id"] for m in msgs}) == len(msgs), name
        for m in msgs:
            assert {"msg_id", "session_id", "ts", "speaker", "text"} <= m.keys(), m
            assert m["ts"].startswith("2026-") and m["ts"].endswith("Z"), m


def test_questions():
    convs = conversations(ROOT)
    questions = load_json(ROOT, "questions.json")["questions"]
    assert len({q["id"] for q in questions}) == len(questions)
    for q in questions:
        check_question(q, convs, TYPES)
    types = Counter(q["type"] for q in questions)
    assert len(questions) >= 70 and types["current"] >= 15 and types["original"] >= 8
    assert min(Counter(q["data"] for q in questions)[c] for c in convs) >= 8


def test_changes():
    convs = conversations(ROOT)
    for c in load_json(ROOT, "changes.json"):
        check_change(c, convs)

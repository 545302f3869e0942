"""The frozen held-out answer set v5: any edit to its files fails; errata go in its README."""

from collections import Counter
from pathlib import Path

from frozen import assert_files_unchanged, check_change, check_question, conversations, load_json

ROOT = Path(__file__).resolve().parents[1] / "data" / "answers_v5"
TYPES = set("current original change per-person decision cross-person date why fact".split())
SHA256 = {
    "changes.json": "364ab74d0f4daf04b7ab7c81e242b239515af625ebcf773b5c8af88bdd1d2637",
    "band_tour.jsonl": "66a768917bc0ae856cc4a79e1436fb2e372f3bcca2f2ccc98dc90bbd1e748ee0",
    "dental_practice.jsonl": "2d5b41146c982a9c236785cc4ecfad02986f6eead19d5177e8fee50cd7064e5d",
    "grandma_80th.jsonl": "5df826e5a72f093e44fdf0b95f81baa9490cbdf1371d6b00194e319270a81a4f",
    "sailing_club.jsonl": "0d1bbc2e2d52a2e1b9b40d3dcb480f9f8c5b0a828bf0e4c1819d1f7d7dee1c3f",
    "street_party.jsonl": "1b50b7fedc346248af2249bc8881e23d6bed9770f8023a089e7dee1fb814f4a2",
    "student_conference.jsonl": "ac9babf4f76bc0a0e85a3fd81e34dfe6731bde84bc0af90dd4fa4ed1b5b1c723",
    "questions.json": "abac4b2fd159a40b37661c47eed88f1b8891677015ca92eaa7d7c052fe806070",
}
# at least this many questions of each type in every conversation
PER_CONVERSATION = {
    "current": 3,
    "original": 1,
    "change": 1,
    "per-person": 1,
    "decision": 1,
    "cross-person": 1,
    "date": 2,
    "why": 1,
    "fact": 1,
}


def test_files_unchanged():
    assert_files_unchanged(ROOT, SHA256, skip=("README.md",))


def test_conversations():
    convs = conversations(ROOT)
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


def test_questions():
    convs = conversations(ROOT)
    questions = load_json(ROOT, "questions.json")["questions"]
    assert len({q["id"] for q in questions}) == len(questions)
    for q in questions:
        check_question(q, convs, TYPES)
        assert q["type"] != "change" or (q.get("ordered") and len(q["expect"]) == 2), q["id"]
        assert q["type"] != "per-person" or (q.get("per_person") and not q["expect"]), q["id"]
    assert len(questions) >= 84
    for c in convs:
        types = Counter(q["type"] for q in questions if q["data"] == c)
        assert sum(types.values()) >= 14, c
        assert all(types[t] >= n for t, n in PER_CONVERSATION.items()), (c, types)


def test_changes():
    convs = conversations(ROOT)
    changes = load_json(ROOT, "changes.json")
    assert len(changes) >= 18
    assert {c["data"] for c in changes} == set(convs)
    for c in changes:
        check_change(c, convs)
    per_conversation = Counter(c["data"] for c in changes)
    assert all(per_conversation[c] >= 3 for c in convs), per_conversation

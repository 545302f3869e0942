"""The frozen answer dev set v3 (issue 23): any edit to its files fails; errata go in its README."""

from collections import Counter
from pathlib import Path

from frozen import assert_files_unchanged, check_change, check_question, conversations, load_json

ROOT = Path(__file__).resolve().parents[1] / "data" / "answers_v3"
TYPES = set("current original change per-person decision cross-person date why fact".split())
SHA256 = {
    "changes.json": "d984e81fb7a34d314cd504352aaaf5cdb286c62688be07dbfaee53720a5b609b",
    "allotment_society.jsonl": "53ef709ce008cfa2d6e297deebfdd8018a5d46f152ea188cfb8bc053e417e6dc",
    "bakery_staff.jsonl": "982cdb816e6acedeb700d7d743c59889c07d31615a62ac566e4853d34c9b669a",
    "choir_concert.jsonl": "2cc4f8dcc1eedce3591411a98c26beb89b25f07fae385c7c219e7de5e94ec528",
    "hiking_trek.jsonl": "60e14a91d86b4226eb2022e21af40ae6b71571db83d5c5bdab22002992bd5a90",
    "oncall_rota.jsonl": "e997493759d4694f6e70138433eb1f560a950f4468dd8a2882927ba945e74539",
    "school_trip.jsonl": "062cf1e5ecd2a2b1666469c3576a15237618280a40dc39d78f12a51ba088a74c",
    "questions.json": "74a60c23777c7ba8fec0cb0006cbdcdaee61dbc17c6e72dc2001b7b87a576498",
}
# at least this many questions of each type in every conversation
PER_CONVERSATION = {
    "current": 2,
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
    assert len(questions) >= 66
    for c in convs:
        types = Counter(q["type"] for q in questions if q["data"] == c)
        assert sum(types.values()) >= 11, c
        assert all(types[t] >= n for t, n in PER_CONVERSATION.items()), (c, types)


def test_changes():
    convs = conversations(ROOT)
    changes = load_json(ROOT, "changes.json")
    assert len(changes) >= 12
    assert {c["data"] for c in changes} == set(convs)
    for c in changes:
        check_change(c, convs)

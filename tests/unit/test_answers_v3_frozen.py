"""The frozen answer dev set v3 (issue 23): any edit to its files fails; errata go in its README."""

import json
from collections import Counter
from pathlib import Path

from frozen import assert_files_unchanged

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


def _conversations():
    return {
        p.stem: [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines()]
        for p in sorted((ROOT / "conversations").glob("*.jsonl"))
    }


def _load(name):
    return json.loads((ROOT / name).read_text(encoding="utf-8"))


def test_files_unchanged():
    assert_files_unchanged(ROOT, SHA256, skip=("README.md",))


def test_conversations():
    convs = _conversations()
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
    convs = _conversations()
    questions = _load("questions.json")["questions"]
    assert len({q["id"] for q in questions}) == len(questions)
    for q in questions:
        assert {"id", "data", "type", "question", "expect", "gold"} <= q.keys(), q["id"]
        assert q["type"] in TYPES and q["data"] in convs, q["id"]
        msgs = convs[q["data"]]
        assert q["gold"] and set(q["gold"]) <= {m["msg_id"] for m in msgs}, q["id"]
        groups = q["expect"] + list(q.get("per_person", {}).values())
        assert groups and all(g and all(isinstance(a, str) and a for a in g) for g in groups)
        assert set(q.get("per_person", {})) <= {m["speaker"] for m in msgs}, q["id"]
        assert q["type"] != "current" or q.get("forbid"), q["id"]
        assert q["type"] != "change" or (q.get("ordered") and len(q["expect"]) == 2), q["id"]
        assert q["type"] != "per-person" or (q.get("per_person") and not q["expect"]), q["id"]
    assert len(questions) >= 66
    for c in convs:
        types = Counter(q["type"] for q in questions if q["data"] == c)
        assert sum(types.values()) >= 11, c
        assert all(types[t] >= n for t, n in PER_CONVERSATION.items()), (c, types)


def test_changes():
    convs = _conversations()
    changes = _load("changes.json")
    assert len(changes) >= 12
    assert {c["data"] for c in changes} == set(convs)
    for c in changes:
        by_id = {m["msg_id"]: m for m in convs[c["data"]]}
        before, after = by_id[c["before_msg"]], by_id[c["after_msg"]]
        assert before["ts"] < after["ts"] and after["speaker"] == c["speaker"], c

"""The frozen answer dev set v3 (issue 23): any edit to its files fails; errata go in its README."""

from pathlib import Path

from frozen import (
    assert_files_unchanged,
    check_answer_changes,
    check_answer_conversations,
    check_answer_questions,
)

ROOT = Path(__file__).resolve().parents[1] / "data" / "answers_v3"
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
    check_answer_conversations(ROOT)


def test_questions():
    check_answer_questions(ROOT, PER_CONVERSATION, least=66, least_each=11)


def test_changes():
    check_answer_changes(ROOT, least=12)

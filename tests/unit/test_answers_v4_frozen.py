"""The frozen answer dev set v4: any edit to its files fails; errata go in its README."""

from pathlib import Path

from frozen import (
    assert_files_unchanged,
    check_answer_changes,
    check_answer_conversations,
    check_answer_questions,
)

ROOT = Path(__file__).resolve().parents[1] / "data" / "answers_v4"
SHA256 = {
    "changes.json": "c1d0b3b06af41bb93056b214148e48f44ea2da7a9a01252e7386f215a3f2f22e",
    "book_club.jsonl": "8bfc1fd12222cdf2befc3d6aef0ecc51b19b2072de131c13e2d47dffcf3f9242",
    "five_a_side.jsonl": "a913ea09dd1d1566c5e2346eb5990664c3925f69ee724ee3d4fb507356503a08",
    "flat_share.jsonl": "ed9c3919ec838a3c7997556cfce5e970a828ea1f323f88809e7fb53fec403be4",
    "food_bank.jsonl": "27453fbbe7d805ca75a18b8fd9224b6025df7c9697da63304aedf00b091237f0",
    "indie_studio.jsonl": "a873a09f4d7679837707376e2b2b9b906b023b4189c7b2be9fce8a99571b7e8b",
    "wedding_family.jsonl": "89dd5be04644ec67a94620745c66bb3c5a96d1a7c0bbcf9ec73f490fcd5912c1",
    "questions.json": "9141cc9108c266f1e30557218003e3a02973e59fde09ad2f592ef3d599eebae9",
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
    check_answer_conversations(ROOT)


def test_questions():
    check_answer_questions(ROOT, PER_CONVERSATION, least=84, least_each=14)


def test_changes():
    check_answer_changes(ROOT, least=18)

"""The frozen held-out answer set v5: any edit to its files fails; errata go in its README."""

from pathlib import Path

from frozen import (
    assert_files_unchanged,
    check_answer_changes,
    check_answer_conversations,
    check_answer_questions,
)

ROOT = Path(__file__).resolve().parents[1] / "data" / "answers_v5"
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
    check_answer_conversations(ROOT)


def test_questions():
    check_answer_questions(ROOT, PER_CONVERSATION, least=84, least_each=14)


def test_changes():
    check_answer_changes(ROOT, least=18, least_each=3)

"""The frozen held-out answer set v6: any edit to its files fails; errata go in its README."""

from pathlib import Path

from frozen import (
    assert_files_unchanged,
    check_answer_changes,
    check_answer_conversations,
    check_answer_questions,
)

ROOT = Path(__file__).resolve().parents[1] / "data" / "answers_v6"
SHA256 = {
    "changes.json": "bdd6394d96ad5b4a8cb0ccda864cc68dc97b9264347d70ec477441a997dc5ca9",
    "allotment.jsonl": "7c8a9ce088d8465bf1264075112dd86698d7c5e5f53a5b122e9814f23d913829",
    "bakery_staff.jsonl": "7df533c6503960c3be538c6d4b382bbc9e190c30d94cc55ddb60deae1f650681",
    "hospital_ward.jsonl": "2fed1fa898ffea2755c02a34ce19c73f3f05ba6527c38d5dd89088264bd4d352",
    "oss_maintainers.jsonl": "5acc9eecce4568a586774d65cd36277ce8447c1ce3859fc0ad872d46975eb246",
    "translation_team.jsonl": "a9942296b8833ec30641b227f4ffbd64126bec2ed26590695e57f6bf6880523a",
    "wedding_friends.jsonl": "ce4a1f024275f536c973f41e7185ec1e560975843fd75d0bafd64c6f3b5c6c27",
    "questions.json": "4d06f6c24eebc9545d2d982dc49fa78cb59c20281a14a12b0b3ee29f2eda0888",
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

"""The frozen answer set v7 (a dev set after its first run): any edit to its files fails;
errata go in its README."""

from pathlib import Path

from frozen import (
    assert_files_unchanged,
    check_answer_questions,
    check_change_ids,
    check_long_conversations,
)

ROOT = Path(__file__).resolve().parents[1] / "data" / "answers_v7"
SHA256 = {
    "changes.json": "3d1253ebf1bda942861851e80733dd244150e9e513fbd1715e62383f36818eef",
    "choir_committee.jsonl": "65e1aed27f3f8b85baa7729a23c93c98bb2890a411a98a57cc1d30c9f36caefc",
    "climbing_trip.jsonl": "8ac721853efee361a2e8ade2c5192265900d7e749363d8bd2b6b7b865b75e3d4",
    "game_studio.jsonl": "202351b8f77c6cb4dde2bd8e2a28171fcdfaf31867713fe5ffa9cb56a9a1a368",
    "grandad_80th.jsonl": "0ef69c10443034c6e815e0b03e50b851d901d0ed161e370e2ce76b632f3f683a",
    "pta_summer_fair.jsonl": "26112b94ed9f405394152a55ced3ccae0dc37dc63c7d0103953b60dfb62e1d0f",
    "restaurant_kitchen.jsonl": "7d35aeac2031b7e0594a97d9cc686d15073f4ae606b5bcf7afd6f5a74b365e0a",
    "questions.json": "26c4e2b35b11906a05c5d04751cce21cfbe72cf4c4ce14774592a23957cf8a76",
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
    check_long_conversations(ROOT)


def test_questions():
    check_answer_questions(ROOT, PER_CONVERSATION, least=84, least_each=14)


def test_changes():
    check_change_ids(ROOT)

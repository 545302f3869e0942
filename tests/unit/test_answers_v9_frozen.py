"""The frozen answer set v9 (held out until its first run on 7 Dec 2026): any edit to its files
fails; errata go in its README."""

from pathlib import Path

from frozen import (
    assert_files_unchanged,
    check_answer_questions,
    check_change_ids,
    check_long_conversations,
)

ROOT = Path(__file__).resolve().parents[1] / "data" / "answers_v9"
SHA256 = {
    "changes.json": "232cd76892232c0d5edbbf0519678e530ca38f9ce6dbc65b435e9dde4688a296",
    "questions.json": "1ae601c09713dfbe253d6ab92aa4a551bc2c9b7ba305f8480bfaa12946e5aa69",
    "caring_for_dad.jsonl": "d12c8fbece9ef4409c81fc064387d56cf30ce58fb30af13a752dd5914e7c6d82",
    "crumb_bakery_staff.jsonl": "67db6660151b16fa2f83d7901978d049a399f14ab29f3c206e8b59697b596614",
    "fivea_side_football.jsonl": "df1f13b0ac808db4a909d42abfdea93ea40153d9e5c524332ef7b0084808f041",
    "podcast_crew.jsonl": "1e5d3e3cecd3af73a95a0c8529a1816f6b1cda6c248c06bba0cae6422c36051f",
    "riverside_fm_schedule.jsonl": (
        "836b6ce08cd0d59d5a0bb3ef617350285775b475997b492f9a92c4ae67313403"
    ),
    "skye_climbing_trip.jsonl": "3593b21d7b5a458056b8b23b5dfa1477b5fad269e0047d959cd8094fbbdeece0",
}
# at least this many questions of each type in every conversation
PER_CONVERSATION = {
    "current": 3,
    "original": 1,
    "change": 2,
    "per-person": 1,
    "decision": 1,
    "cross-person": 2,
    "date": 3,
    "why": 2,
    "fact": 1,
}


def test_files_unchanged():
    assert_files_unchanged(ROOT, SHA256, skip=("README.md",))


def test_conversations():
    check_long_conversations(ROOT)


def test_questions():
    check_answer_questions(ROOT, PER_CONVERSATION, least=100, least_each=16)


def test_changes():
    check_change_ids(ROOT)

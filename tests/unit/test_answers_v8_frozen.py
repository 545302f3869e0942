"""The frozen answer set v8 (a dev set after its first run): any edit to its files fails;
errata go in its README."""

from pathlib import Path

from frozen import (
    assert_files_unchanged,
    check_answer_questions,
    check_change_ids,
    check_long_conversations,
)

ROOT = Path(__file__).resolve().parents[1] / "data" / "answers_v8"
SHA256 = {
    "changes.json": "997ef8d83199c2a76c8499f5a65b66bda0be885527efdacf33a1c26a078ca65d",
    "hollybrook_allotments.jsonl": (
        "5bf9704fa2331f66cde68c93384cb0b81baa1949f90daf46c1b794889ab107cd"
    ),
    "kowalski_lab_conference.jsonl": (
        "b3e5f7f2082b81d72f4d874a2b83f81305fe1b7f3f53e9200ef746535ab9a7f3"
    ),
    "larkfield_coop_maintenance.jsonl": (
        "aa2876ecaa854bea1291d82ecb4262b0d784df01a2e12f1f54127526ec428021"
    ),
    "okafor_siblings_wedding.jsonl": (
        "a5b41053688d112acda5fda4ae43928213ffbd43ea34ce815c075fde038a7687"
    ),
    "velvet_moths_tour.jsonl": "39cb9d7578c80dfe830f63ade4f1108b9ebd7638f796d6086a05dce0c3fb8d35",
    "ward_7b_rota.jsonl": "5a66817878fbb7f1981c65666f0a22a5ce583b1e33b86aed1f704bcc415a88a8",
    "questions.json": "9fdf7fc760fbaff7147b334e69ecbd9bf3e367a9cbcf243b4e16e4db788794f1",
}
# at least this many questions of each type in every conversation
PER_CONVERSATION = {
    "current": 3,
    "original": 1,
    "change": 1,
    "per-person": 1,
    "decision": 1,
    "cross-person": 2,
    "date": 3,
    "why": 1,
    "fact": 1,
}


def test_files_unchanged():
    assert_files_unchanged(ROOT, SHA256, skip=("README.md",))


def test_conversations():
    check_long_conversations(ROOT)


def test_questions():
    check_answer_questions(ROOT, PER_CONVERSATION, least=93, least_each=15)


def test_changes():
    check_change_ids(ROOT)

"""A question that asks for the earlier state and the later one in two clauses is a change
question, whatever the wh-word of each clause (written before the code)."""

from datetime import UTC, datetime

import pytest
from chat_turns import chat

from speakerflow.ops.query.answer import answer_rules
from speakerflow.ops.query.answer_intent import read_intent
from speakerflow.ops.query.project import is_rollup, project_rules

ROSTER = ["Ana", "Tom", "Lee"]


def focus(question):
    p = project_rules(question, ROSTER)
    return read_intent(p, is_rollup(p)).focus


@pytest.mark.parametrize(
    "question",
    [
        "When was the fun run first scheduled, and when is it happening now?",
        "When did the lease originally end, and when does it end now?",
        "Which caterer was booked at first, and which one replaced it?",
        "What did the room cost initially, and what replaced that price?",
    ],
)
def test_both_ends_asked_in_two_clauses_is_a_change(question):
    assert focus(question) == "change"


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("When is the fun run happening now?", "current"),
        ("When was the fun run first scheduled?", "original"),
        ("Which caterer replaced the first one?", "current"),
    ],
)
def test_one_end_asked_stays_one_end(question, expected):
    assert focus(question) == expected


def test_a_date_asked_at_both_ends_is_answered_with_both_dates_in_order():
    turns = [
        (0, "Ana", "The fun run is on Saturday 14 March, meet at the park gates."),
        (0, "Tom", "great, I'll bring the water"),
        (8, "Lee", "Bad news, the park is shut that weekend, so the fun run moves to 21 March."),
        (8, "Ana", "ok, noted"),
    ]
    view, evidence = chat(turns, datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    question = "When was the fun run first scheduled, and when is it happening now?"
    p = project_rules(question, ROSTER)
    answer = str(answer_rules(p, evidence, view=view, roster=ROSTER))
    assert "14 March" in answer and "21 March" in answer
    assert answer.index("14 March") < answer.index("21 March")


def test_a_change_asked_where_only_a_question_matches_still_answers():
    turns = [(0, "Ana", "Has the choir practice night changed?"), (0, "Tom", "ok")]
    _, evidence = chat(turns, datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    p = project_rules("How did the choir practice night change?", ROSTER)
    assert str(answer_rules(p, evidence, roster=ROSTER)).strip()

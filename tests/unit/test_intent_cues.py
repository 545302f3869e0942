"""Question cues read from the question's shape, in sentences written for this test before the
code: an amount asked with modifiers before its noun, a "from now on" focus, a deadline asked
as a date."""

from datetime import UTC, datetime, timedelta

import pytest

from speakerflow.ops.query.answer import answer_rules
from speakerflow.ops.query.answer_intent import read_intent
from speakerflow.ops.query.project import is_rollup, project_rules
from speakerflow.schemas import EvidenceItem

ROSTER = ["Nia", "Oli", "Pat"]


def intent(question):
    p = project_rules(question, ROSTER)
    return read_intent(p, is_rollup(p))


@pytest.mark.parametrize(
    "question",
    [
        "What is the new monthly rent for the studio?",
        "What's the current deposit for the hall?",
        "What is the club's yearly subscription fee?",
        "What will the return fare be?",
    ],
)
def test_an_amount_noun_after_modifiers_asks_an_amount(question):
    assert intent(question).quantity


@pytest.mark.parametrize(
    "question",
    ["What is the name of the venue?", "What is the plan for the garden?", "What did Oli rent?"],
)
def test_other_what_questions_ask_no_amount(question):
    assert not intent(question).quantity


@pytest.mark.parametrize(
    "question",
    [
        "How many volunteers will staff each stall going forward?",
        "Who locks up the hall from now on?",
    ],
)
def test_from_now_on_asks_the_current_state(question):
    assert intent(question).focus == "current"


def test_a_deadline_is_answered_by_the_sentence_that_says_the_day():
    t = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
    turns = [
        ("Nia", "The grant forms are long and dull, honestly."),
        ("Oli", "The grant forms are due on Friday 12 June."),
        ("Pat", "The grant forms need two signatures each."),
    ]
    evidence = [
        EvidenceItem(
            rank=i, kind="excerpt", text=x, msg_ids=[f"m{i}"], speaker=w, ts=t + timedelta(hours=i)
        )
        for i, (w, x) in enumerate(turns)
    ]
    p = project_rules("What is the deadline for the grant forms?", ROSTER)
    assert "12 June" in str(answer_rules(p, evidence, roster=ROSTER))


@pytest.mark.parametrize(
    "question",
    ["In the end, which caterer did they go with?", "Which route did Pat take in the end?"],
)
def test_in_the_end_asks_the_current_state(question):
    assert intent(question).focus == "current"


@pytest.mark.parametrize(
    "question",
    ["What prompted Oli to quit the choir?", "What triggered the change to Tuesday practice?"],
)
def test_what_prompted_asks_why(question):
    assert intent(question).qtype == "why"

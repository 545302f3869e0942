"""A per-person line whose words are a short reply ("sure", "on it") carries the turn it
answers: the task lives in the request, not in the reply (written before the code)."""

from datetime import UTC, datetime

from chat_turns import chat

from speakerflow.ops.query.answer import answer_rules
from speakerflow.ops.query.project import project_rules

ROSTER = ["Rosa", "Idris", "Kit", "Bea"]
T = datetime(2026, 9, 2, 18, 0, tzinfo=UTC)
TURNS = [
    ("Rosa", "Jumble sale roles, please. I'm pricing the books on Friday night."),
    ("Bea", "Kit, could you run the raffle table on the day?"),
    ("Kit", "yep no problem"),
    ("Idris", "I'll drive the van to collect the donations."),
    ("Bea", "lovely, thanks all"),
]


def lines(question):
    view, evidence = chat([(0, who, text) for who, text in TURNS], T)
    answer = answer_rules(project_rules(question, ROSTER), evidence, view=view, roster=ROSTER)
    return {line.split(":")[0]: line for line in str(answer).splitlines()}


def test_a_short_reply_carries_the_request_it_answers():
    by = lines("What is each of Rosa, Kit and Idris doing for the jumble sale?")
    assert "raffle" in by["Kit"]
    assert "books" in by["Rosa"] and "van" in by["Idris"]


def test_a_line_that_says_the_matter_itself_carries_nothing_more():
    by = lines("What is each of Rosa, Kit and Idris doing for the jumble sale?")
    assert "raffle" not in by["Idris"] and "raffle" not in by["Rosa"]

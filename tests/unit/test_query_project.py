"""Project: rules projection (rows, tense, scope, as-of) and a chat projection checked against
the roster."""

from datetime import UTC, datetime

from speakerflow.ops.backends.base import ScriptedChat
from speakerflow.ops.query.project import Project, as_of_date, is_rollup, project_rules

ROSTER = ["Ana", "Ben", "Chloe", "Dev"]


def test_rows_for_names_rollups_group_and_doubt():
    assert project_rules("Where does Dev live?", ROSTER).rows == ["Dev"]
    assert project_rules("What do Ana and Ben prefer?", ROSTER).rows == ["Ana", "Ben"]
    assert project_rules("What does each person think about the venue?", ROSTER).rows == ["ALL"]
    assert project_rules("What did the group finally decide about the venue?", ROSTER).rows == [
        "GROUP"
    ]
    assert project_rules("Who never booked a flight?", ROSTER).rows == [
        "ALL"
    ]  # empty cells, not the norm
    assert project_rules("Did all the members agree on the budget rule?", ROSTER).rows == [
        "ALL",
        "GROUP",
    ]
    assert project_rules("Where is the offsite?", ROSTER).rows == ["ALL"]  # when in doubt


def test_cross_person_view_sets_owner_and_source():
    p = project_rules("How does Ben see Ana?", ROSTER)
    assert (p.rows, p.owner, p.source) == (["Ana"], "Ana", "Ben")
    assert "Ana" in p.issue  # the matter is Ana


def test_tense_and_as_of():
    assert project_rules("Where does Dev live now?", ROSTER).tense == "head"
    assert project_rules("How did Dev's home city change?", ROSTER).tense == "full"
    assert project_rules("Where did Dev live back in March?", ROSTER).tense == "full"
    p = project_rules("What was the budget on 7 March 2026?", ROSTER)
    assert p.tense == "full" and p.as_of == datetime(2026, 3, 7, 23, 59, 59, 999999, tzinfo=UTC)
    assert as_of_date("on May 7, 2023") == as_of_date("2023-05-07") == as_of_date("7 May 2023")
    assert as_of_date("in May") is None


def test_issue_drops_question_words_and_names():
    p = project_rules("When did Caroline go to the LGBTQ support group?", ["Caroline", "Melanie"])
    assert p.issue == "go LGBTQ support group"


def test_is_rollup_needs_rollup_words_or_two_people():
    assert not is_rollup(
        project_rules("Where is the offsite?", ROSTER)
    )  # default ALL is not a roll-up
    assert is_rollup(project_rules("What does each person prefer?", ROSTER))
    assert is_rollup(project_rules("What do Ana and Ben prefer?", ROSTER))


def test_chat_projection_is_checked_against_the_roster():
    chat = ScriptedChat(
        ['{"issue": "venue", "rows": ["ben", "Zoe", "GROUP"], "tense": "sometimes"}']
    )
    op = Project(backend="chat")
    p = op.project("What did Ben and the group settle on?", ROSTER, {}, chat)
    assert p.rows == ["Ben", "GROUP"]  # case fixed, unknown name dropped
    assert p.tense == "full"  # invalid tense -> the safe choice
    assert op.stats.model_calls == 1 and op.stats.tokens > 0


def test_unusable_chat_projection_falls_back_to_rules():
    op = Project(backend="chat")
    p = op.project("Where does Dev live?", ROSTER, {}, ScriptedChat(["I think it is Dev"]))
    assert p.rows == ["Dev"] and op.stats.rejects == 1

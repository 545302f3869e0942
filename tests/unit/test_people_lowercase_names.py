"""Roster names written in lower case (chat handles such as ``mo`` or ``ben``) are found
where the text writes them as the roster does and lists them beside other names; the people
of a per-person question are the names it lists, not the person in a clause before it.

Sentences written for this test before the code that reads them."""

from speakerflow.ops.query.project import project_rules
from speakerflow.ops.text.people import PersonResolver

ROSTER = ["mo", "Priyanka", "Lars", "ben", "Tess"]


def names(text: str) -> list[str]:
    return PersonResolver(ROSTER).names_in(text)


def test_lowercase_handle_listed_with_other_names_is_a_mention():
    assert names("What did mo, Lars and ben each bring to the picnic?") == ["mo", "Lars", "ben"]
    assert names("Did Tess or ben sign the lease?") == ["Tess", "ben"]


def test_lowercase_handle_that_is_no_common_word_is_a_mention_alone():
    assert names("Has mo paid the gas bill yet?") == ["mo"]


def test_common_word_in_prose_is_still_not_a_mention():
    # "ben" is a lower-case common-word name: alone in prose it is not taken
    assert names("we have ben waiting ages for the plumber") == []
    # a capitalised roster name keeps its rule: a lower-case token of it needs 4+ letters
    assert PersonResolver(["Will", "Ana"]).names_in("I will call Ana") == ["Ana"]


def test_per_person_rows_are_the_listed_names_not_the_asker():
    question = "After Lars asked about lunch, what did mo, Priyanka and ben each order?"
    p = project_rules(question, ROSTER)
    assert p.rows == ["mo", "Priyanka", "ben"]
    p = project_rules("What did Priyanka and Tess each think of the new landlord?", ROSTER)
    assert p.rows == ["Priyanka", "Tess"]

"""A question that opens on whose account it asks for ("according to A", "in A's view") names
A as the source and the other person as the one it is about (written before the code)."""

import pytest

from speakerflow.ops.query.project import project_rules

ROSTER = ["Nia", "Oli", "Pat"]


@pytest.mark.parametrize(
    ("question", "source", "owner"),
    [
        ("According to Nia, what is Oli worried about?", "Nia", "Oli"),
        ("In Pat's view, how is Oli getting on at work?", "Pat", "Oli"),
        ("According to Pat, why did Nia leave early?", "Pat", "Nia"),
    ],
)
def test_on_whose_account(question, source, owner):
    p = project_rules(question, ROSTER)
    assert (p.source, p.owner, p.rows) == (source, owner, [owner])


def test_two_people_without_an_account_stay_two_rows():
    p = project_rules("What did Nia and Oli bring to the picnic?", ROSTER)
    assert p.source is None and p.owner is None

"""A weekday written short in chat ("tues night", "thurs morning") is a weekday when a part of
the day follows it; the short forms that are also words ("sat", "sun", "wed") need it.
Sentences written for this test before the code that reads them."""

from datetime import datetime

from speakerflow.ops.text.temporal import describe, resolve

FRIDAY = datetime(2026, 3, 13, 9, 0)  # a Friday


def said(text: str) -> list[str]:
    return [describe(s, anchored=True) for s in resolve(text, FRIDAY)]


def test_short_weekday_before_a_part_of_the_day_resolves_by_tense():
    assert said("the boiler cut out tues night, had to reset it") == ["10 March 2026"]
    assert said("i'll drop the keys round sun morning") == ["15 March 2026"]
    assert said("we noticed the leak wed evening") == ["11 March 2026"]


def test_short_forms_that_are_words_stay_words():
    assert said("I sat in the sun for an hour") == []
    assert said("they wed in a small chapel") == []

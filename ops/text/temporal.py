"""Temporal expressions: relative time words resolved against the time a message was said.

``resolve(text, ref)`` finds the time expressions of ``text`` and turns each into an
absolute :class:`TimeSpan` (first and last day, inclusive) using ``ref``, the time the
message was said. No model, no dependencies: a handful of patterns and calendar arithmetic.

What it reads (case-insensitive unless noted):

- days: ``today``, ``tonight``, ``this morning``, ``yesterday``, ``last night``,
  ``tomorrow``, ``the day before yesterday``, ``the day after tomorrow``; ``the day before`` /
  ``the day after`` / ``the next day`` are anchored to the last date already resolved in the
  same text, else to the message day;
- counted offsets: ``two weeks ago``, ``3 days ago``, ``a month ago``, ``in two weeks``,
  ``a couple of days ago``; vague counts (``a few``, ``several``, bare ``weeks ago``) give an
  approximate range (``approx=True``);
- calendar units: ``last/this/next week`` (Monday to Sunday), ``the/this weekend``, ``month``,
  ``year``; ``that weekend`` / ``the same week`` are the ones of the date said before in the
  text (nothing before: no span);
- weekdays: ``last Saturday`` (the latest one before the message day), ``next Tuesday``,
  ``this Friday`` (in the message's week), and bare ``on Sunday`` / ``by Friday`` / a
  capitalised ``Wednesday's``: the coming one in a plan or a sentence without tense cues, the
  previous one in a past sentence (the tense is read from the sentence holding the weekday:
  will, 'll, won't, going to, let's, by, until ... ahead; was, did, -ed verbs ... behind);
  a plural ("on Sundays") is a habit, not a date;
- months and dates: ``in May``, ``last December``, ``12 May``, ``May 12``, ``12 to 14 May``,
  ``3 June 2022``, ``2023-05-07``, ``the end of October``; a weekday with its date (``Monday
  4 May``, ``Sunday the 3rd``) is that date. These are *explicit* (``TimeSpan.explicit``): an
  answer prefers them to a relative word. A date without a year is the coming one in a plan
  or a sentence without tense cues when it is at most 240 days ahead, else the nearest one
  (December said in May is last December; "I signed up for the race in May" said in March is
  this May). Bare month names must be capitalised, and ``May`` needs a preposition or a day
  number beside it ("May I ask" is not a date).

:func:`describe` writes a span for people: ``7 May 2023``, ``6-7 May 2023``,
``30 March-5 April 2026``, ``February 2026``, ``2025``, ``a few days before 10 April 2026``.

>>> from datetime import datetime
>>> describe(resolve_first("I went to the support group yesterday.", datetime(2023, 5, 8, 13, 56)))
'7 May 2023'
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime

from speakerflow.ops.text.temporal_calendar import (
    MONTHS,
    UNIT_RE,
    VAGUE_RE,
    WEEKDAYS,
    TimeSpan,
    day_of,
)
from speakerflow.ops.text.temporal_rules import spans_of

__all__ = ["MONTHS", "WEEKDAYS", "TimeSpan", "describe", "resolve", "resolve_first"]


def resolve(text: str, ref: datetime | date) -> list[TimeSpan]:
    """Every time expression of ``text``, resolved against ``ref`` (the message time), in
    text order; overlapping matches keep the longest."""
    return spans_of(text, day_of(ref))


def resolve_first(text: str, ref: datetime | date) -> TimeSpan | None:
    """The first expression of ``text`` resolved against ``ref``, or ``None``."""
    spans = resolve(text, ref)
    return spans[0] if spans else None


def _d(d: date, year: bool = True) -> str:
    return f"{d.day} {MONTHS[d.month - 1].capitalize()}" + (f" {d.year}" if year else "")


def describe(span: TimeSpan, anchored: bool = False) -> str:
    """The span for people (see the module doc). ``anchored``: a week or weekend is also
    said relative to the day it was mentioned, ``the week before 9 June 2023 (29 May-4 June
    2023)``, as people retell it."""
    if anchored and span.unit in ("week", "weekend") and span.ref is not None:
        rel = "before" if span.end < span.ref else "after" if span.start > span.ref else "of"
        return f"the {span.unit} {rel} {_d(span.ref)} ({describe(span)})"
    if span.approx and span.ref is not None and span.end < span.ref:
        m = re.match(rf"(?:{VAGUE_RE} )?{UNIT_RE} ago", span.text, re.I)
        if m:
            how = (m.group(1) or "a few").lower()
            return f"{how} {m.group(2).lower()}s before {_d(span.ref)}"
    if span.start == span.end:
        return _d(span.start)
    if span.unit == "year" or (
        span.start == date(span.start.year, 1, 1) and span.end == date(span.start.year, 12, 31)
    ):
        return str(span.start.year)
    if span.unit == "month" or (
        span.start.day == 1
        and span.start.month == span.end.month
        and span.end.day == calendar.monthrange(span.end.year, span.end.month)[1]
    ):
        return f"{MONTHS[span.start.month - 1].capitalize()} {span.start.year}"
    if span.start.year != span.end.year:
        return f"{_d(span.start)}-{_d(span.end)}"
    if span.start.month != span.end.month:
        return f"{_d(span.start, False)}-{_d(span.end)}"
    return f"{span.start.day}-{_d(span.end)}"

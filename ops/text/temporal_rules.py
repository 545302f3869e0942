"""The patterns behind :func:`speakerflow.ops.text.temporal.resolve`: each has a handler of
:class:`_Resolver` that turns a match into a :class:`~.temporal_calendar.TimeSpan` against the
day the message was said; the tense that decides a weekday's or an unyeared date's direction
is read from the sentence holding the expression.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta

from speakerflow.ops.text.temporal_calendar import (
    COUNT_RE,
    MONTH_RE,
    ORD,
    UNIT_RE,
    VAGUE,
    VAGUE_RE,
    WEEKDAY_RE,
    TimeSpan,
    add_months,
    count_of,
    month_no,
    month_span,
    shift,
    tense_of,
    unit_span,
    weekday_no,
    year_for,
)

_WHICH = {"last": -1, "previous": -1, "past": -1, "this": 0, "next": 1, "coming": 1, "following": 1}

# (pattern, handler name); earlier patterns win on overlap only when longer or equal
_PATTERNS: list[tuple[re.Pattern, str]] = [
    (re.compile(p, re.I), h)
    for p, h in [
        (r"\b(?:the )?day before yesterday\b", "day_before_yesterday"),
        (r"\b(?:the )?day after tomorrow\b", "day_after_tomorrow"),
        (
            r"\b(?:the )?(day before|day after|next day|following day|previous day)\b",
            "anchored_day",
        ),
        (r"\b(today|tonight|this (?:morning|afternoon|evening))\b", "today"),
        (r"\b(yesterday|last night)\b", "yesterday"),
        (r"\btomorrow\b", "tomorrow"),
        (rf"\b{COUNT_RE} {UNIT_RE} ago\b", "ago"),
        (rf"\b(?:{VAGUE_RE} )?{UNIT_RE} ago\b", "vague_ago"),
        (rf"\bin {COUNT_RE} {UNIT_RE}(?: time)?\b", "in_n"),
        (rf"\b{COUNT_RE} {UNIT_RE} (?:from now|later)\b", "in_n"),
        (
            r"\b(?:the )?(first|second|third|fourth|last|final) (week|weekend) (?:of|in) "
            rf"{MONTH_RE}\b",
            "week_of_month",
        ),
        (r"\b(last|previous|past|this|next|coming|following) (week|weekend|month|year)\b", "unit"),
        (r"\b(?:that|the same|same) (week|weekend)\b", "that_unit"),
        (r"\b(?:the|this|over the|on the|at the|for the) weekend\b", "weekend"),
        (rf"\b(last|this|next|coming) {WEEKDAY_RE}\b", "which_weekday"),
        (rf"\b(?:on|by|until|till|since|from|after|before) {WEEKDAY_RE}\b", "bare_weekday"),
        (
            rf"\b{WEEKDAY_RE},? (?:the )?{ORD} (?:of )?{MONTH_RE}\b(?:,? (\d{{4}}))?",
            "weekday_dm",
        ),
        (rf"\b{WEEKDAY_RE},? {MONTH_RE} {ORD}\b(?!:)(?:,? (\d{{4}}))?", "weekday_md"),
        (rf"\b{WEEKDAY_RE},? (?:the )?(\d{{1,2}})(?:st|nd|rd|th)\b", "weekday_nth"),
        (rf"\b{ORD}(?:\s*(?:-|to|and|–)\s*{ORD})? (?:of )?{MONTH_RE},? (\d{{4}})\b", "dmy"),
        (rf"\b{MONTH_RE} {ORD}(?:\s*(?:-|to|–)\s*{ORD})?,? (\d{{4}})\b", "mdy"),
        (r"\b(\d{4})-(\d{2})-(\d{2})\b", "iso"),
        (rf"\b{ORD}(?:\s*(?:-|to|and|–)\s*{ORD})? (?:of )?{MONTH_RE}\b", "dm"),
        (rf"\b{MONTH_RE} {ORD}(?:\s*(?:-|to|–)\s*{ORD})?\b(?!:)", "md"),
        (
            rf"\b(?:the )?(end|beginning|start|middle|mid|early|late) (?:of )?{MONTH_RE}\b",
            "part_month",
        ),
        (rf"\b(last|this|next) {MONTH_RE}\b", "which_month"),
        (
            rf"\b(?:in|during|since|until|by|of|early|late|mid|from|through) {MONTH_RE}\b(?: "
            rf"(\d{{4}}))?",
            "in_month",
        ),
        (rf"\b{MONTH_RE} (\d{{4}})\b", "month_year"),
        (r"\b(?:in |since |of |during )?((?:19|20)\d\d)\b", "year"),
    ]
]
#: a weekday named without a preposition ("the Sunday market", "Wednesday's call", a
#: lower-case chat's "vet appt monday"): its full name, singular (plural "Sundays" is a
#: habit, not a date)
_BARE_WEEKDAY = re.compile(
    r"\b((?i:monday|tuesday|wednesday|thursday|friday|saturday|sunday))(?:['\u2019]s)?\b(?!s)"
)
#: a weekday written short before a part of the day ("tues night", "sun morning"): the short
#: forms that are words ("sat", "sun", "wed") count only there
_SHORT_WEEKDAY = re.compile(
    r"\b((?i:mon|tues?|weds?|thu(?:rs?)?|fri|sat|sun))\.? "
    r"(?i:night|morning|afternoon|evening|eve|lunch(?:time)?|am|pm)\b"
)
_CAPITALISED_MONTH = re.compile(
    r"\b(January|February|March|April|June|July|August|September|October|November|"
    r"December)\b"
)
_PART = {
    "end": (24, 31),
    "late": (21, 31),
    "beginning": (1, 7),
    "start": (1, 7),
    "early": (1, 10),
    "middle": (11, 20),
    "mid": (11, 20),
}


#: handlers of calendar dates said in full (a day with its month, an ISO date)
_EXPLICIT = frozenset({"dmy", "mdy", "iso", "dm", "md", "weekday_dm", "weekday_md", "weekday_nth"})
_CLAUSE_END = re.compile(r"[.!?;\n]|\s[-\u2013\u2014]\s")


def _sentence_at(text: str, start: int, end: int) -> str:
    """The sentence (or clause between dashes) of ``text`` holding ``start:end``."""
    left = max((m.end() for m in _CLAUSE_END.finditer(text, 0, start)), default=0)
    right = _CLAUSE_END.search(text, end)
    return text[left : right.start() if right else len(text)]


class _Resolver:
    def __init__(self, text: str, ref: date):
        self.text, self.ref, self.tense = text, ref, tense_of(text)
        self.anchor = ref

    def span(self, m: re.Match, handler: str) -> TimeSpan | None:
        # the tense of the sentence holding the expression: "I was off on Monday. We ship on
        # Friday." reads each weekday by its own sentence
        self.tense = tense_of(_sentence_at(self.text, m.start(), m.end()))
        out = getattr(self, "_" + handler)(m)
        if out is None:
            return None
        start, end, unit, approx = out
        return TimeSpan(
            start, end, m.group(0), m.start(), unit, approx, self.ref, handler in _EXPLICIT
        )

    def _day_before_yesterday(self, m):
        d = self.ref - timedelta(days=2)
        return d, d, "day", False

    def _day_after_tomorrow(self, m):
        d = self.ref + timedelta(days=2)
        return d, d, "day", False

    def _anchored_day(self, m):
        step = -1 if m.group(1).lower() in ("day before", "previous day") else 1
        base = self.anchor
        if base == self.ref and step > 0:
            return None  # "the next day" with nothing to follow is not a date
        d = base + timedelta(days=step)
        return d, d, "day", False

    def _today(self, m):
        return self.ref, self.ref, "day", False

    def _yesterday(self, m):
        d = self.ref - timedelta(days=1)
        return d, d, "day", False

    def _tomorrow(self, m):
        d = self.ref + timedelta(days=1)
        return d, d, "day", False

    def _ago(self, m):
        n = count_of(m.group(1))
        if n is None:
            return None
        d = shift(self.ref, m.group(2).lower(), -n)
        return d, d, "day", False

    def _vague_ago(self, m):
        lo, hi = VAGUE[(m.group(1) or "").lower()]
        unit = m.group(2).lower()
        return shift(self.ref, unit, -hi), shift(self.ref, unit, -lo), "range", True

    def _in_n(self, m):
        n = count_of(m.group(1))
        if n is None:
            return None
        d = shift(self.ref, m.group(2).lower(), n)
        return d, d, "day", False

    def _unit(self, m):
        unit = m.group(2).lower()
        start, end = unit_span(self.ref, unit, _WHICH[m.group(1).lower()])
        return start, end, unit, False

    def _week_of_month(self, m):
        month = month_no(m.group(3))
        year = year_for(month, None, self.ref, self.tense)
        last = calendar.monthrange(year, month)[1]
        which = m.group(1).lower()
        if which in ("last", "final"):
            start, end = date(year, month, last - 6), date(year, month, last)
        else:
            k = ("first", "second", "third", "fourth").index(which)
            start, end = date(year, month, 1 + 7 * k), date(year, month, 7 + 7 * k)
        return start, end, "range", True

    def _weekend(self, m):
        which = -1 if self.tense == "past" else 0
        start, end = unit_span(self.ref, "weekend", which)
        return start, end, "weekend", False

    def _which_weekday(self, m):
        which, wd = m.group(1).lower(), weekday_no(m.group(2))
        if which == "last":
            back = (self.ref.weekday() - wd) % 7 or 7
            d = self.ref - timedelta(days=back)
        elif which == "this":
            d = self.ref - timedelta(days=self.ref.weekday()) + timedelta(days=wd)
        else:
            d = self.ref + timedelta(days=(wd - self.ref.weekday()) % 7 or 7)
        return d, d, "day", False

    def _that_unit(self, m):
        """ "that weekend", "the same week": the one of the date said before in the text (no
        date before: nothing to anchor to, no span)."""
        if self.anchor == self.ref:
            return None
        unit = m.group(1).lower()
        if unit == "weekend":
            sat = self.anchor + timedelta(days=(5 - self.anchor.weekday()) % 7)
            if self.anchor.weekday() == 6:
                sat = self.anchor - timedelta(days=1)
            return sat, sat + timedelta(days=1), "weekend", False
        monday = self.anchor - timedelta(days=self.anchor.weekday())
        return monday, monday + timedelta(days=6), "week", False

    def _weekday_dm(self, m):
        return self._dated_weekday(m.group(1), m.group(2), month_no(m.group(3)), m.group(4))

    def _weekday_md(self, m):
        return self._dated_weekday(m.group(1), m.group(3), month_no(m.group(2)), m.group(4))

    def _dated_weekday(self, wd: str, day: str, month: int, year: str | None):
        """ "Monday 4 May": the date; without a year, the year (of the nearest three) in which
        that date is that weekday, else the year the date alone would take."""
        if year is None:
            fits = []
            for y in (self.ref.year, self.ref.year + 1, self.ref.year - 1):
                try:
                    if date(y, month, int(day)).weekday() == weekday_no(wd):
                        fits.append(y)
                except ValueError:
                    continue
            if fits:
                year = str(fits[0])
        return self._days(day, None, month, int(year) if year else None)

    def _weekday_nth(self, m):
        """ "Sunday the 3rd": the nearest day numbered so that is that weekday (ahead for a
        plan or a sentence without tense cues, behind in the past)."""
        wd, n = weekday_no(m.group(1)), int(m.group(2))
        step = -1 if self.tense == "past" else 1
        for months in range(0, 13):
            probe = add_months(self.ref.replace(day=1), step * months)
            try:
                d = probe.replace(day=n)
            except ValueError:
                continue
            if d.weekday() == wd and (d >= self.ref if step > 0 else d <= self.ref):
                return d, d, "day", False
        return None

    def _bare_weekday(self, m):
        """ "on Friday", "Wednesday's call": the coming one in a plan or a sentence without tense
        cues ("the vet is on Thursday"), the last one in a past sentence; "by", "until",
        "after" look ahead, "since" back."""
        wd = weekday_no(m.group(1))
        lead = m.group(0).lower()
        future = (
            self.tense != "past" or lead.startswith(("by", "until", "till"))
        ) and not lead.startswith("since")
        if future:
            d = self.ref + timedelta(days=(wd - self.ref.weekday()) % 7 or 7)
        else:
            d = self.ref - timedelta(days=(self.ref.weekday() - wd) % 7 or 7)
        return d, d, "day", False

    def _days(self, d1: str, d2: str | None, month: int, year: int | None):
        if not month:
            return None
        a, b = int(d1), int(d2) if d2 else int(d1)
        if year is None:
            year = year_for(month, a, self.ref, self.tense)
        try:
            start, end = date(year, month, a), date(year, month, b)
        except ValueError:
            return None
        if end < start:
            return None
        return start, end, "day" if start == end else "range", False

    def _dmy(self, m):
        return self._days(m.group(1), m.group(2), month_no(m.group(3)), int(m.group(4)))

    def _mdy(self, m):
        return self._days(m.group(2), m.group(3), month_no(m.group(1)), int(m.group(4)))

    def _iso(self, m):
        try:
            d = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
        return d, d, "day", False

    def _dm(self, m):
        return self._days(m.group(1), m.group(2), month_no(m.group(3)), None)

    def _md(self, m):
        if m.group(1).lower() == "may" and not m.group(1)[0].isupper():
            return None
        return self._days(m.group(2), m.group(3), month_no(m.group(1)), None)

    def _part_month(self, m):
        month = month_no(m.group(2))
        year = year_for(month, None, self.ref, self.tense)
        lo, hi = _PART[m.group(1).lower()]
        last = calendar.monthrange(year, month)[1]
        return date(year, month, lo), date(year, month, min(hi, last)), "range", True

    def _which_month(self, m):
        which, month = m.group(1).lower(), month_no(m.group(2))
        if which == "last":
            year = self.ref.year if month < self.ref.month else self.ref.year - 1
        elif which == "next":
            year = self.ref.year if month > self.ref.month else self.ref.year + 1
        else:
            year = self.ref.year
        start, end = month_span(year, month)
        return start, end, "month", False

    def _in_month(self, m):
        month = month_no(m.group(1))
        year = int(m.group(2)) if m.group(2) else year_for(month, None, self.ref, self.tense)
        start, end = month_span(year, month)
        return start, end, "month", False

    def _month_year(self, m):
        start, end = month_span(int(m.group(2)), month_no(m.group(1)))
        return start, end, "month", False

    def _year(self, m):
        y = int(m.group(1))
        return date(y, 1, 1), date(y, 12, 31), "year", False


def spans_of(text: str, ref: date) -> list[TimeSpan]:
    """Every time expression of ``text`` resolved against the day ``ref``, in text order;
    overlapping matches keep the longest (what :func:`~.temporal.resolve` returns)."""
    found: list[tuple[int, int, int, re.Match, str]] = []
    for order, (pattern, handler) in enumerate(_PATTERNS):
        for m in pattern.finditer(text):
            found.append((m.start(), m.end(), order, m, handler))
    for m in _CAPITALISED_MONTH.finditer(text):
        found.append((m.start(), m.end(), len(_PATTERNS), m, "bare_month"))
    for bare in (_BARE_WEEKDAY, _SHORT_WEEKDAY):
        for m in bare.finditer(text):
            found.append((m.start(), m.end(), len(_PATTERNS) + 1, m, "bare_weekday"))
    chosen: list[tuple[int, int, int, re.Match, str]] = []
    for f in sorted(found, key=lambda f: (-(f[1] - f[0]), f[2], f[0])):
        if all(f[1] <= c[0] or f[0] >= c[1] for c in chosen):
            chosen.append(f)
    chosen.sort(key=lambda f: f[0])
    resolver = _Resolver(text, ref)
    out: list[TimeSpan] = []
    for _, _, _, m, handler in chosen:
        span: TimeSpan | None
        if handler == "bare_month":
            month = month_no(m.group(1))
            tense = tense_of(_sentence_at(text, m.start(), m.end()))
            start, end = month_span(year_for(month, None, ref, tense), month)
            span = TimeSpan(start, end, m.group(0), m.start(), "month", False, ref)
        else:
            span = resolver.span(m, handler)
        if span is None:
            continue
        if span.unit in ("day", "range") and not span.approx:
            resolver.anchor = span.start
        out.append(span)
    return out

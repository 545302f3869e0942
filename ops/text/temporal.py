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
- calendar units: ``last/this/next week`` (Monday to Sunday), ``weekend``, ``month``, ``year``;
- weekdays: ``last Saturday`` (the latest one before the message day), ``next Tuesday``,
  ``this Friday`` (in the message's week), and bare ``on Sunday`` / ``by Friday``, read as the
  previous or the coming one from the sentence's tense (future cues: will, 'll, going to,
  let's, by, until ...; otherwise the past, as most chat narrates);
- months and dates: ``in May``, ``last December``, ``12 May``, ``May 12``, ``12 to 14 May``,
  ``3 June 2022``, ``2023-05-07``, ``the end of October``; a date without a year takes the
  nearest such date to the message (the tense decides a near tie). Bare month names must be
  capitalised, and ``May``
  needs a preposition or a day number beside it ("May I ask" is not a date).

:func:`describe` writes a span for people: ``7 May 2023``, ``6-7 May 2023``,
``30 March-5 April 2026``, ``February 2026``, ``2025``, ``a few days before 10 April 2026``.

>>> from datetime import datetime
>>> describe(resolve_first("I went to the support group yesterday.", datetime(2023, 5, 8, 13, 56)))
'7 May 2023'
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_ABBR = {m[:3]: i + 1 for i, m in enumerate(MONTHS)} | {"sept": 9}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "couple of": 2,
    "a couple of": 2,
    "couple": 2,
    "a couple": 2,
}
_VAGUE = {"a few": (2, 4), "few": (2, 4), "several": (3, 6), "some": (2, 5), "": (2, 5)}

_MONTH_RE = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sept?(?:ember)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_WEEKDAY_RE = r"(mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?"
_COUNT_RE = (
    r"(\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|(?:a "
    r")?couple(?: of)?)"
)
_VAGUE_RE = r"(a few|few|several|some)"
_UNIT_RE = r"(day|week|month|year)s?"
_ORD = r"(\d{1,2})(?:st|nd|rd|th)?"

_FUTURE = re.compile(
    r"\b(will|shall|going to|gonna|plan(?:ning)? to|let'?s|let us|by|until|till|"
    r"upcoming|coming|can'?t wait|looking forward|hope to|want to|next|tomorrow|soon|"
    r"schedul\w+ for)\b|\w'll\b",
    re.I,
)
_PAST = re.compile(
    r"\b(was|were|did|had|went|ago|yesterday|"
    r"(?!(?:need|feed|seed|speed|indeed|bed|red|shed|proceed|exceed|succeed)\b)\w+ed)\b",
    re.I,
)


@dataclass(frozen=True)
class TimeSpan:
    """One resolved expression: ``start``..``end`` (inclusive days), the words matched
    (``text`` at ``offset`` in the input), the unit (``day``, ``week``, ``weekend``,
    ``month``, ``year``, ``range``) and whether the span is only approximate."""

    start: date
    end: date
    text: str
    offset: int
    unit: str = "day"
    approx: bool = False
    ref: date | None = None

    @property
    def day(self) -> date | None:
        """The single day meant, when the span is one day."""
        return self.start if self.start == self.end else None


def _day(ref: datetime | date) -> date:
    return ref.date() if isinstance(ref, datetime) else ref


def _month_no(word: str) -> int:
    w = word.lower()
    return _MONTH_ABBR.get(w[:4] if w.startswith("sept") else w[:3], 0)


def _weekday_no(word: str) -> int:
    return [d[:3] for d in WEEKDAYS].index(word.lower()[:3])


def _add_months(d: date, n: int) -> date:
    y, m = divmod(d.month - 1 + n, 12)
    year, month = d.year + y, m + 1
    return date(year, month, min(d.day, calendar.monthrange(year, month)[1]))


def _month_span(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _tense(text: str) -> str:
    """``future``, ``past`` or ``none`` from cue words of the text."""
    if _FUTURE.search(text):
        return "future"
    if _PAST.search(text):
        return "past"
    return "none"


def _year_for(month: int, day: int | None, ref: date, tense: str) -> int:
    """The year of a month (and day) said without one: the nearest such month to ``ref``
    (December said in May is last December, May said in March is this May); the tense
    decides only a near tie (about six months either way)."""
    best = None
    for year in (ref.year - 1, ref.year, ref.year + 1):
        try:
            probe = date(year, month, min(day or 15, calendar.monthrange(year, month)[1]))
        except ValueError:
            continue
        gap = (probe - ref).days
        cost = abs(gap)
        if abs(abs(gap) - 182) <= 20 and (
            (tense == "past" and gap > 0) or (tense == "future" and gap < 0)
        ):
            cost += 60  # a near tie: the tense wins
        if best is None or cost < best[0]:
            best = (cost, year)
    return best[1] if best else ref.year


def _count(word: str) -> int | None:
    w = word.lower().strip()
    return int(w) if w.isdigit() else _NUMBERS.get(w)


def _shift(ref: date, unit: str, n: int) -> date:
    if unit == "day":
        return ref + timedelta(days=n)
    if unit == "week":
        return ref + timedelta(weeks=n)
    if unit == "month":
        return _add_months(ref, n)
    return _add_months(ref, 12 * n)


def _unit_span(ref: date, unit: str, which: int) -> tuple[date, date]:
    """The calendar week/weekend/month/year ``which`` units from ``ref``'s (0 = this one)."""
    if unit == "week":
        monday = ref - timedelta(days=ref.weekday()) + timedelta(weeks=which)
        return monday, monday + timedelta(days=6)
    if unit == "weekend":
        monday = ref - timedelta(days=ref.weekday())
        if which < 0:
            return monday - timedelta(days=2), monday - timedelta(days=1)
        sat = monday + timedelta(days=5 + 7 * which)
        return sat, sat + timedelta(days=1)
    if unit == "month":
        first = _add_months(ref.replace(day=1), which)
        return _month_span(first.year, first.month)
    return date(ref.year + which, 1, 1), date(ref.year + which, 12, 31)


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
        (rf"\b{_COUNT_RE} {_UNIT_RE} ago\b", "ago"),
        (rf"\b(?:{_VAGUE_RE} )?{_UNIT_RE} ago\b", "vague_ago"),
        (rf"\bin {_COUNT_RE} {_UNIT_RE}(?: time)?\b", "in_n"),
        (rf"\b{_COUNT_RE} {_UNIT_RE} (?:from now|later)\b", "in_n"),
        (
            r"\b(?:the )?(first|second|third|fourth|last|final) (week|weekend) (?:of|in) "
            rf"{_MONTH_RE}\b",
            "week_of_month",
        ),
        (r"\b(last|previous|past|this|next|coming|following) (week|weekend|month|year)\b", "unit"),
        (r"\b(?:the |this )?weekend\b", "weekend"),
        (rf"\b(last|this|next|coming) {_WEEKDAY_RE}\b", "which_weekday"),
        (rf"\b(?:on|by|until|till|since|from) {_WEEKDAY_RE}\b", "bare_weekday"),
        (rf"\b{_ORD}(?:\s*(?:-|to|and|–)\s*{_ORD})? (?:of )?{_MONTH_RE},? (\d{{4}})\b", "dmy"),
        (rf"\b{_MONTH_RE} {_ORD}(?:\s*(?:-|to|–)\s*{_ORD})?,? (\d{{4}})\b", "mdy"),
        (r"\b(\d{4})-(\d{2})-(\d{2})\b", "iso"),
        (rf"\b{_ORD}(?:\s*(?:-|to|and|–)\s*{_ORD})? (?:of )?{_MONTH_RE}\b", "dm"),
        (rf"\b{_MONTH_RE} {_ORD}(?:\s*(?:-|to|–)\s*{_ORD})?\b(?!:)", "md"),
        (
            rf"\b(?:the )?(end|beginning|start|middle|mid|early|late) (?:of )?{_MONTH_RE}\b",
            "part_month",
        ),
        (rf"\b(last|this|next) {_MONTH_RE}\b", "which_month"),
        (
            rf"\b(?:in|during|since|until|by|of|early|late|mid|from|through) {_MONTH_RE}\b(?: "
            rf"(\d{{4}}))?",
            "in_month",
        ),
        (rf"\b{_MONTH_RE} (\d{{4}})\b", "month_year"),
        (r"\b(?:in |since |of |during )?((?:19|20)\d\d)\b", "year"),
    ]
]
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


class _Resolver:
    def __init__(self, text: str, ref: date):
        self.text, self.ref, self.tense = text, ref, _tense(text)
        self.anchor = ref

    def span(self, m: re.Match, handler: str) -> TimeSpan | None:
        out = getattr(self, "_" + handler)(m)
        if out is None:
            return None
        start, end, unit, approx = out
        return TimeSpan(start, end, m.group(0), m.start(), unit, approx, self.ref)

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
        n = _count(m.group(1))
        if n is None:
            return None
        d = _shift(self.ref, m.group(2).lower(), -n)
        return d, d, "day", False

    def _vague_ago(self, m):
        lo, hi = _VAGUE[(m.group(1) or "").lower()]
        unit = m.group(2).lower()
        return _shift(self.ref, unit, -hi), _shift(self.ref, unit, -lo), "range", True

    def _in_n(self, m):
        n = _count(m.group(1))
        if n is None:
            return None
        d = _shift(self.ref, m.group(2).lower(), n)
        return d, d, "day", False

    def _unit(self, m):
        unit = m.group(2).lower()
        start, end = _unit_span(self.ref, unit, _WHICH[m.group(1).lower()])
        return start, end, unit, False

    def _week_of_month(self, m):
        month = _month_no(m.group(3))
        year = _year_for(month, None, self.ref, self.tense)
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
        start, end = _unit_span(self.ref, "weekend", which)
        return start, end, "weekend", False

    def _which_weekday(self, m):
        which, wd = m.group(1).lower(), _weekday_no(m.group(2))
        if which == "last":
            back = (self.ref.weekday() - wd) % 7 or 7
            d = self.ref - timedelta(days=back)
        elif which == "this":
            d = self.ref - timedelta(days=self.ref.weekday()) + timedelta(days=wd)
        else:
            d = self.ref + timedelta(days=(wd - self.ref.weekday()) % 7 or 7)
        return d, d, "day", False

    def _bare_weekday(self, m):
        wd = _weekday_no(m.group(1))
        future = self.tense == "future" or m.group(0).lower().startswith(("by", "until", "till"))
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
            year = _year_for(month, a, self.ref, self.tense)
        try:
            start, end = date(year, month, a), date(year, month, b)
        except ValueError:
            return None
        if end < start:
            return None
        return start, end, "day" if start == end else "range", False

    def _dmy(self, m):
        return self._days(m.group(1), m.group(2), _month_no(m.group(3)), int(m.group(4)))

    def _mdy(self, m):
        return self._days(m.group(2), m.group(3), _month_no(m.group(1)), int(m.group(4)))

    def _iso(self, m):
        try:
            d = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
        return d, d, "day", False

    def _dm(self, m):
        return self._days(m.group(1), m.group(2), _month_no(m.group(3)), None)

    def _md(self, m):
        if m.group(1).lower() == "may" and not m.group(1)[0].isupper():
            return None
        return self._days(m.group(2), m.group(3), _month_no(m.group(1)), None)

    def _part_month(self, m):
        month = _month_no(m.group(2))
        year = _year_for(month, None, self.ref, self.tense)
        lo, hi = _PART[m.group(1).lower()]
        last = calendar.monthrange(year, month)[1]
        return date(year, month, lo), date(year, month, min(hi, last)), "range", True

    def _which_month(self, m):
        which, month = m.group(1).lower(), _month_no(m.group(2))
        if which == "last":
            year = self.ref.year if month < self.ref.month else self.ref.year - 1
        elif which == "next":
            year = self.ref.year if month > self.ref.month else self.ref.year + 1
        else:
            year = self.ref.year
        start, end = _month_span(year, month)
        return start, end, "month", False

    def _in_month(self, m):
        month = _month_no(m.group(1))
        year = int(m.group(2)) if m.group(2) else _year_for(month, None, self.ref, self.tense)
        start, end = _month_span(year, month)
        return start, end, "month", False

    def _month_year(self, m):
        start, end = _month_span(int(m.group(2)), _month_no(m.group(1)))
        return start, end, "month", False

    def _year(self, m):
        y = int(m.group(1))
        return date(y, 1, 1), date(y, 12, 31), "year", False


def resolve(text: str, ref: datetime | date) -> list[TimeSpan]:
    """Every time expression of ``text``, resolved against ``ref`` (the message time), in
    text order; overlapping matches keep the longest."""
    day = _day(ref)
    found: list[tuple[int, int, int, re.Match, str]] = []
    for order, (pattern, handler) in enumerate(_PATTERNS):
        for m in pattern.finditer(text):
            found.append((m.start(), m.end(), order, m, handler))
    for m in _CAPITALISED_MONTH.finditer(text):
        found.append((m.start(), m.end(), len(_PATTERNS), m, "bare_month"))
    found.sort(key=lambda f: (f[0], -(f[1] - f[0]), f[2]))
    chosen: list[tuple[int, int, int, re.Match, str]] = []
    for f in sorted(found, key=lambda f: (-(f[1] - f[0]), f[2], f[0])):
        if all(f[1] <= c[0] or f[0] >= c[1] for c in chosen):
            chosen.append(f)
    chosen.sort(key=lambda f: f[0])
    resolver = _Resolver(text, day)
    out: list[TimeSpan] = []
    for _, _, _, m, handler in chosen:
        span: TimeSpan | None
        if handler == "bare_month":
            month = _month_no(m.group(1))
            start, end = _month_span(_year_for(month, None, day, resolver.tense), month)
            span = TimeSpan(start, end, m.group(0), m.start(), "month", False, day)
        else:
            span = resolver.span(m, handler)
        if span is None:
            continue
        if span.unit in ("day", "range") and not span.approx:
            resolver.anchor = span.start
        out.append(span)
    return out


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
        m = re.match(rf"(?:{_VAGUE_RE} )?{_UNIT_RE} ago", span.text, re.I)
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

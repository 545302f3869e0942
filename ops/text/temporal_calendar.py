"""Calendar pieces of the time resolver: month and weekday names, the regex parts of time
expressions, :class:`TimeSpan`, the tense of a sentence and the arithmetic of days, weeks,
months and the year of a date said without one."""

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
NUMBERS = {
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
VAGUE = {"a few": (2, 4), "few": (2, 4), "several": (3, 6), "some": (2, 5), "": (2, 5)}

MONTH_RE = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sept?(?:ember)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
WEEKDAY_RE = r"(mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?"
COUNT_RE = (
    r"(\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|(?:a "
    r")?couple(?: of)?)"
)
VAGUE_RE = r"(a few|few|several|some)"
UNIT_RE = r"(day|week|month|year)s?"
ORD = r"(\d{1,2})(?:st|nd|rd|th)?"

FUTURE = re.compile(
    r"\b(will|shall|going to|gonna|plan(?:ning)? to|let'?s|let us|by|until|till|"
    r"upcoming|coming|can'?t wait|looking forward|hope to|want to|next|tomorrow|soon|"
    r"schedul\w+ for|won'?t)\b|\w'll\b",
    re.I,
)
PAST = re.compile(
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
    #: a calendar date said in full (a day and its month, an ISO date): beats a relative word
    explicit: bool = False

    @property
    def day(self) -> date | None:
        """The single day meant, when the span is one day."""
        return self.start if self.start == self.end else None


def day_of(ref: datetime | date) -> date:
    return ref.date() if isinstance(ref, datetime) else ref


def month_no(word: str) -> int:
    w = word.lower()
    return _MONTH_ABBR.get(w[:4] if w.startswith("sept") else w[:3], 0)


def weekday_no(word: str) -> int:
    return [d[:3] for d in WEEKDAYS].index(word.lower()[:3])


def add_months(d: date, n: int) -> date:
    y, m = divmod(d.month - 1 + n, 12)
    year, month = d.year + y, m + 1
    return date(year, month, min(d.day, calendar.monthrange(year, month)[1]))


def month_span(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def tense_of(text: str) -> str:
    """``future``, ``past`` or ``none`` from cue words of the text."""
    if FUTURE.search(text):
        return "future"
    if PAST.search(text):
        return "past"
    return "none"


def year_for(month: int, day: int | None, ref: date, tense: str) -> int:
    """The year of a month (and day) said without one. A plan (future tense) means the next
    such day; a sentence without tense cues the next one too when it is at most
    :data:`NEXT_WITHIN` days ahead (chat says dates of what is coming: "the party is 13
    June"); otherwise the nearest one (December said in May is last December; "I signed up
    for the race in May" said in March is this May), the tense deciding a near tie."""
    probes = []
    for year in (ref.year - 1, ref.year, ref.year + 1):
        try:
            probes.append(
                (date(year, month, min(day or 15, calendar.monthrange(year, month)[1])), year)
            )
        except ValueError:
            continue
    ahead = [
        (p, y)
        for p, y in probes
        if p >= ref or (day is None and (p.year, p.month) == (ref.year, ref.month))
    ]
    if ahead and (
        tense == "future" or (tense == "none" and (ahead[0][0] - ref).days <= NEXT_WITHIN)
    ):
        return ahead[0][1]
    best = None
    for probe, year in probes:
        gap = (probe - ref).days
        cost = abs(gap)
        if abs(abs(gap) - 182) <= 20 and (
            (tense == "past" and gap > 0) or (tense == "future" and gap < 0)
        ):
            cost += 60  # a near tie: the tense wins
        if best is None or cost < best[0]:
            best = (cost, year)
    return best[1] if best else ref.year


#: days ahead within which a date said without tense cues is read as the coming one
NEXT_WITHIN = 240


def count_of(word: str) -> int | None:
    w = word.lower().strip()
    return int(w) if w.isdigit() else NUMBERS.get(w)


def shift(ref: date, unit: str, n: int) -> date:
    if unit == "day":
        return ref + timedelta(days=n)
    if unit == "week":
        return ref + timedelta(weeks=n)
    if unit == "month":
        return add_months(ref, n)
    return add_months(ref, 12 * n)


def unit_span(ref: date, unit: str, which: int) -> tuple[date, date]:
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
        first = add_months(ref.replace(day=1), which)
        return month_span(first.year, first.month)
    return date(ref.year + which, 1, 1), date(ref.year + which, 12, 31)

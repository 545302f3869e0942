"""Value parsers of the reader: percentages, money, durations, category words and free text,
each found with its span and read by its own left context.

A value after "from", "was", "previously" is the old one, after a negator within three words
the denied one ("no more than 5%" is a bound, not a denial), after "to", "now", "at", "is"
the asserted one. Only the number formats and the English around them are known here; which
words say a category value comes from the domain pack (:class:`~.lexicon.Lexicon`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from speakerflow.ops.knowledge.lexicon import Lexicon, Relation, lexicon_for
from speakerflow.ops.knowledge.reader import BOUND, NEGATOR

PERCENT = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?\s*(?:%|percent\b|pct\b)", re.IGNORECASE)
#: an amount of money: "$1,200", "€3.5m", "1.2k USD", "USD 300", "40 dollars"
_SYMBOL = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}
_CODE = r"USD|EUR|GBP|JPY|CHF|CAD|AUD|dollars?|euros?|pounds?"
_AMOUNT = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_SCALE = {"k": 1e3, "m": 1e6, "mm": 1e6, "bn": 1e9, "b": 1e9}
MONEY = re.compile(
    rf"(?P<sym>[$€£¥])\s?(?P<a1>{_AMOUNT})\s?(?P<s1>k|mm|m|bn|b)?\b"
    rf"|(?<![\w.])(?P<a2>{_AMOUNT})\s?(?P<s2>k|mm|m|bn|b)?\s?(?P<c2>{_CODE})\b"
    rf"|\b(?P<c3>USD|EUR|GBP|JPY|CHF|CAD|AUD)\s?(?P<a3>{_AMOUNT})\s?(?P<s3>k|mm|m|bn|b)?\b",
    re.IGNORECASE,
)
_WORD_CODE = {"dollar": "USD", "euro": "EUR", "pound": "GBP"}
#: a duration: "840ms", "1.2s", "4.8 seconds", "2 min", "1h"
DURATION = re.compile(
    r"(?<![\w.])(?P<n>\d+(?:\.\d+)?)\s?(?P<u>ms|msec|milliseconds?|s|secs?|seconds?|m|mins?|"
    r"minutes?|h|hrs?|hours?)\b",
    re.IGNORECASE,
)
_SPAN = re.compile(r"\b(?:in|for|within|every|after|next|last|past|by)\s+$", re.IGNORECASE)
_MS = {
    "ms": 1,
    "msec": 1,
    "millisecond": 1,
    "s": 1e3,
    "sec": 1e3,
    "second": 1e3,
    "m": 6e4,
    "min": 6e4,
    "minute": 6e4,
    "h": 3.6e6,
    "hr": 3.6e6,
    "hour": 3.6e6,
}


@dataclass(frozen=True)
class Value:
    """A value found in a clause: normalised text, span, and how its left context reads it."""

    value: str
    start: int
    end: int
    role: str  # "new" | "old" | "negated" | "plain" | "bound" (a threshold: "> 5%")
    relation: str | None = None  # for category words: the relation they belong to


_OLD_WORDS = {
    "from",
    "was",
    "were",
    "previously",
    "formerly",
    "instead",
    "rather",
    "vs",
    "vs.",
    "versus",
}
_NEW_WORDS = {
    "to",
    "now",
    "at",
    "is",
    "are",
    "be",
    "it's",
    "its",
    "reads",
    "of",
    "sits",
    "stands",
    "under",
    "below",
    "over",
    "above",
    "into",
    "become",
    "becomes",
    "became",
    "turned",
    "went",
    "moved",
}


_BREAK = re.compile(r"[,;|—–(]|\s-\s")


def _left(clause: str, start: int, width: int) -> str:
    """Up to ``width`` characters before ``start``, not crossing a comma, dash or bracket."""
    left = clause[max(0, start - width) : start]
    cuts = list(_BREAK.finditer(left))
    return left[cuts[-1].end() :] if cuts else left


#: "A -> B", "A → B": the value before an arrow is the old one, the one after it the new one
_ARROW_AFTER = re.compile(r"(?:->|→|=>)\s*$")
_ARROW_NEXT = re.compile(r"^\s*(?:->|→|=>)")
#: "error rate > 5%": a value after a comparison sign is a threshold, never asserted
_COMPARED = re.compile(r"(?:[<>≥≤]=?)\s*$")


def _role(clause: str, start: int, end: int | None = None) -> str:
    """How the three words before a value read it: negated, old ("from", "was", "X -> ..."),
    new ("to", "now", "... -> X") or a threshold ("> 5%")."""
    before = clause[max(0, start - 8) : start]
    if _ARROW_AFTER.search(before):
        return "new"
    if end is not None and _ARROW_NEXT.match(clause[end : end + 8]):
        return "old"
    if _COMPARED.search(before):
        return "bound"
    words = [w.strip(",:()'\"").lower() for w in _left(clause, start, 48).split()][-3:]
    if NEGATOR.search(" ".join(words)) and not BOUND.search(" ".join(words)):
        return "negated"
    for w in reversed(words):
        if w in _OLD_WORDS:
            return "old"
        if w in _NEW_WORDS:
            return "new"
    return "plain"


def percents(clause: str) -> list[Value]:
    """Every percentage in ``clause`` with its role (``"0.12 %"`` and ``"12 percent"`` read)."""
    out = []
    for m in PERCENT.finditer(clause):
        num = float(re.sub(r"[^\d.+-]", "", m.group()))
        out.append(Value(f"{num:g}%", m.start(), m.end(), _role(clause, m.start(), m.end())))
    return out


def _num(amount: str, scale: str | None) -> float:
    return float(amount.replace(",", "")) * _SCALE.get((scale or "").lower(), 1.0)


def money(clause: str) -> list[Value]:
    """Every amount of money in ``clause``, normalised to ``"<amount> <ISO code>"``
    (``"$1.2k"`` -> ``"1200 USD"``)."""
    out = []
    for m in MONEY.finditer(clause):
        if m.group("sym"):
            amount, code = _num(m.group("a1"), m.group("s1")), _SYMBOL[m.group("sym")]
        elif m.group("a2"):
            amount, word = _num(m.group("a2"), m.group("s2")), m.group("c2").lower().rstrip("s")
            code = _WORD_CODE.get(word, word.upper())
        else:
            amount, code = _num(m.group("a3"), m.group("s3")), m.group("c3").upper()
        role = _role(clause, m.start(), m.end())
        out.append(Value(f"{amount:g} {code}", m.start(), m.end(), role))
    return out


def durations(clause: str) -> list[Value]:
    """Every duration in ``clause``, in whole milliseconds (``"1.2s"`` -> ``"1200ms"``)."""
    out = []
    for m in DURATION.finditer(clause):
        if clause[m.start() - 1 : m.start()] == "(" and clause[m.end() : m.end() + 1] == ")":
            continue  # "(10m)": the window a figure is taken over, not a value
        if _SPAN.search(clause[max(0, m.start() - 12) : m.start()]):
            continue  # "should clear in 30m", "for 15 min": a stretch of time, not a measure
        unit = m.group("u").lower()
        unit = unit if unit in _MS else unit.rstrip("s")
        ms = float(m.group("n")) * _MS.get(unit, 1.0)
        out.append(Value(f"{round(ms)}ms", m.start(), m.end(), _role(clause, m.start(), m.end())))
    return out


_PASSIVE = re.compile(r"\b(?:was|were)\s+(?:\w+ly\s+)?$", re.IGNORECASE)


def categories(
    clause: str,
    relation: str | None = None,
    lex: Lexicon | None = None,
    subjects: frozenset[str] | set[str] | None = None,
) -> list[Value]:
    """Category words in ``clause`` (of ``relation`` only, if given), one per span, in order.
    A word two relations share goes to the first one whose subject type is in ``subjects``
    (the entity types the clause names), else to the first relation that lists it."""
    lex = lex or lexicon_for()
    out: list[Value] = []
    patterns = lex.category_patterns
    if subjects and lex.shared_words:
        own = [p for p in patterns if lex.relation_by_name[p[0]].subject in subjects]
        patterns = own + [p for p in patterns if p not in own]
    for rel, val, rx in patterns:
        if relation is not None and rel != relation:
            continue
        for m in rx.finditer(clause):
            if any(m.start() < v.end and v.start < m.end() for v in out):
                continue
            role = _role(clause, m.start(), m.end())
            if (
                role == "old"
                and _PASSIVE.search(_left(clause, m.start(), 16))
                and re.match(r"\w+ed\b", m.group())
            ):
                role = "new"  # passive voice: "copying was switched off", "the trader was paused"
            out.append(Value(val, m.start(), m.end(), role, rel))
    return sorted(out, key=lambda v: v.start)


def text_after(clause: str, at: int) -> Value | None:
    """Free text: what follows position ``at`` (the end of the relation's phrase) up to the end
    of its segment, without a leading copula or colon ("notes: see the wiki page")."""
    rest = re.split(r"[;,|—–]|\s-\s", clause[at:], maxsplit=1)[0]
    m = re.match(r"\s*(?:(?:is|are|was|=|:|now|at|to)\s*)*(.+?)[\s.!]*$", rest, re.IGNORECASE)
    if m is None or not m.group(1).strip():
        return None
    s = at + m.start(1)
    return Value(m.group(1).strip()[:160], s, at + m.end(1), _role(clause, s))


def pick(values: list[Value], anchor: int = 0) -> Value | None:
    """The asserted value: a "new" one (the last), else a plain one nearest ``anchor``; never
    an old or negated one."""
    new = [v for v in values if v.role == "new"]
    if new:
        return new[-1]
    plain = [v for v in values if v.role == "plain"]
    if plain:
        return min(plain, key=lambda v: abs(v.start - anchor))
    return None


def negated_near(clause: str, start: int) -> bool:
    """A negator within the three words before ``start`` (not a bound: "no more than 5%")."""
    near = " ".join(_left(clause, start, 40).split()[-3:])
    return bool(NEGATOR.search(near)) and not BOUND.search(near)


#: the numeric value types and their parsers
NUMBERS = {"percent": percents, "money": money, "duration": durations}


def read_value(rel: Relation, text: str, after: int = 0, lex: Lexicon | None = None) -> str | None:
    """The asserted value of ``rel`` in ``text`` (see :func:`pick`); ``after``: where the
    relation is named (for free text: the end of its phrase)."""
    if rel.value in NUMBERS:
        v = pick(NUMBERS[rel.value](text), after)
    elif rel.value == "category":
        v = pick(categories(text, rel.name, lex), after)
    elif rel.value == "text":
        v = text_after(text, after)
    else:
        return None
    return v.value if v else None

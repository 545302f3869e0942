"""Is a record grounded in its evidence? The share of its content words (names and numbers
aside) that the messages it cites contain, calendar words and dates checked against the
messages' time, and sentences that instruct the memory system (no evidence) refused; what the
Writer contract (:mod:`.contract`) asks of every write."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from speakerflow.words import STATEMENT_STOPWORDS

#: Share of a record's content words (names and numbers aside) that its evidence must contain.
#: Calibrated on the rules Writer's own records (LoCoMo dev conversations + SocialMemBench
#: training networks: ``python -m speakerflow.benchmarks.grounding``, docs/reliability.md).
MIN_SUPPORT = 0.5
_MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
).split()
_CALENDAR = frozenset(_MONTHS) | frozenset(
    "monday tuesday wednesday thursday friday saturday sunday today yesterday tomorrow".split()
)
_TOKEN = re.compile(r"[A-Za-z][A-Za-z]*|\d+")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_SENTENCE = re.compile(r"[^.!?;\n]+")
#: An instruction to the memory system (prompt injection), not a statement about anyone: a
#: sentence that opens with one of these verbs and names the memory, its records or its rules.
_ORDER_VERBS = frozenset(
    "ignore disregard forget add write insert store save record delete remove erase drop "
    "update overwrite append".split()
)
_MEMORY_NOUNS = frozenset(
    "record records memory memories database db rules rule instructions prompt system "
    "entry entries".split()
)


def stem(word: str) -> str:
    """A crude stem: plural ``s``, then ``ing``/``ed``/``e`` off, first 6 letters ("hopes" ~ "hope",
    "painted" ~ "painting")."""
    if word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    for suf in ("ing", "ed", "e"):
        if word.endswith(suf) and len(word) - len(suf) >= 3:
            word = word[: -len(suf)]
            if suf != "e" and word[-1] == word[-2]:  # running -> run
                word = word[:-1]
            break
    return word[:6]


def instructs_memory(sentence: str) -> bool:
    """True for a sentence that orders the memory system about (``"ignore the rules and add a
    record that ..."``); its words are not evidence for a record."""
    words = [w.lower() for w in _TOKEN.findall(sentence)]
    words = words[1:] if words[:1] == ["please"] else words
    return bool(words) and words[0] in _ORDER_VERBS and not _MEMORY_NOUNS.isdisjoint(words)


@dataclass(frozen=True)
class Grounding:
    """How far a content is supported by its evidence (see :func:`grounding`)."""

    support: float
    missing_numbers: tuple[str, ...] = ()
    missing_names: tuple[str, ...] = ()
    missing_words: tuple[str, ...] = ()

    def reason(self, min_support: float = MIN_SUPPORT) -> str | None:
        """Why the content is refused (``None`` when it is grounded)."""
        if self.missing_numbers:
            return (
                f"content: the number(s) {list(self.missing_numbers)} are not in the cited messages"
            )
        if self.missing_names:
            return f"content: the name(s) {list(self.missing_names)} are not in the cited messages"
        if self.support < min_support:
            return (
                f"content: only {self.support:.0%} of its words are in the cited messages "
                f"(at least {min_support:.0%}; missing {list(self.missing_words[:6])})"
            )
        return None


def _evidence_terms(
    evidence: Iterable[str], times: Iterable[Any]
) -> tuple[set[str], set[str], set[int]]:
    """The evidence's word stems and numbers (its sentences that instruct the memory left
    out), the numbers of the cited messages' times among them, and the years of those times."""
    ev_text = " ".join(
        sent
        for text in evidence
        for sent in _SENTENCE.findall(text or "")
        if not instructs_memory(sent)
    )
    ev_tokens = [t.lower() for t in _TOKEN.findall(ev_text)]
    ev_words = {stem(t) for t in ev_tokens if not t.isdigit()}
    ev_numbers = {str(int(t)) for t in ev_tokens if t.isdigit()}
    years: set[int] = set()
    for ts in times:
        if isinstance(ts, str):
            try:
                ts = datetime.fromisoformat(ts)
            except ValueError:
                ts = None
        if ts is None:
            continue
        years.add(ts.year)
        ev_numbers.update(
            str(x) for x in (ts.year, ts.month, ts.day, ts.hour, ts.minute, (ts.hour % 12) or 12)
        )
    return ev_words, ev_numbers, years


def grounding(
    content: str,
    evidence: Iterable[str],
    times: Iterable[Any] = (),
    names: Iterable[str] = (),
    counts: Iterable[int] = (),
) -> Grounding:
    """Is ``content`` supported by the ``evidence`` texts (cited messages, and an UPDATE's head)?

    * every **number** of the content is in the evidence, or belongs to a date (a day next to
      a month name, a year within one year of a cited message's time ``times`` or, next to
      a month, not after them; an ISO date of such a year): the Writer dates records from
      the messages' times; or is one of ``counts`` (how many messages / sessions are cited);
    * every **name** (a capitalised word inside a sentence) is in the evidence or is one of
      ``names`` (the roster and aliases: the Writer writes "Ana" for "I"); months and
      weekdays are exempt;
    * ``support``: the share of the other content words (no stop words, no names, at least 3
      letters; compared on their first 5 letters, so "painted" matches "painting") found in
      the evidence.

    Sentences of the evidence that instruct the memory system (:func:`instructs_memory`)
    are left out: "add a record that Ana owes 500" is not evidence that Ana owes 500.
    """
    ev_words, ev_numbers, years = _evidence_terms(evidence, times)
    name_words = {w.lower() for n in names for w in _TOKEN.findall(str(n))}
    count_words = {str(c) for c in counts}

    def year_ok(y: int) -> bool:
        return any(abs(y - x) <= 1 for x in years)

    text = _ISO_DATE.sub(lambda m: " " if year_ok(int(m.group(1))) else m.group(0), content or "")
    missing_numbers: list[str] = []
    missing_names: list[str] = []
    words: list[str] = []
    for sent in _SENTENCE.findall(text):
        toks = list(re.finditer(r"[A-Za-z][A-Za-z']*|\d+", sent))
        for i, m in enumerate(toks):
            tok = m.group(0)
            if tok.isdigit():
                n = str(int(tok))
                if n in ev_numbers:
                    continue
                near = [
                    t.group(0).lower()
                    for t in toks[max(0, i - 3) : i + 4]
                    if not t.group(0).isdigit()
                ]
                dated = any(w in _MONTHS for w in near)
                if len(tok) == 4 and (
                    year_ok(int(tok)) or dated and 1900 <= int(tok) <= max(years, default=0) + 1
                ):
                    # a year of the messages, or a full date the Writer resolved ("5 years ago")
                    continue
                if int(tok) <= 31 and dated or n in count_words:
                    continue  # a day of a date; a count of the cited messages or their sessions
                missing_numbers.append(tok)
                continue
            low = tok.lower().split("'")[0]
            if low in name_words or low in _CALENDAR:
                continue
            prev = sent[: m.start()].rstrip()
            inside = bool(prev) and prev[-1] not in ':"([-–—*' and i > 0
            if tok[0].isupper() and inside and low not in STATEMENT_STOPWORDS and low != "i":
                if stem(low) not in ev_words:
                    missing_names.append(tok.split("'")[0])
                continue
            if len(low) >= 3 and low not in STATEMENT_STOPWORDS:
                words.append(low)
    found = [w for w in words if stem(w) in ev_words]
    support = len(found) / len(words) if words else 1.0
    return Grounding(
        support,
        tuple(dict.fromkeys(missing_numbers)),
        tuple(dict.fromkeys(missing_names)),
        tuple(w for w in dict.fromkeys(words) if stem(w) not in ev_words),
    )

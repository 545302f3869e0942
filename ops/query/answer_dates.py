"""Date answers: which time expression of the answering sentence is meant, and how it is said.

An explicit date ("Monday 4 May", "2026-05-29") beats a relative word ("on Friday",
"tomorrow") of the same sentence, and of several expressions the one said nearest the
question's own words is meant ("the fair is on 3 July and the stalls must be booked by 12
June" asked about the stalls: 12 June). The answer is that date; the day the message was
said is carried beside it, not in the line, when they differ (``Answered.said``, switched by
``AnswerConfig.said_date``): a reader can check a resolved "on Friday" against the message.
"""

from __future__ import annotations

import re

from speakerflow.ops.query.answer_config import AnswerConfig
from speakerflow.ops.query.answer_intent import CALENDAR
from speakerflow.ops.query.answer_text import Answered, date_of, who_of, without_rejected
from speakerflow.ops.query.answer_units import TextMemo, Unit, stem, terms
from speakerflow.ops.text.temporal import TimeSpan, describe

_WORD = re.compile(r"[\w'\u2019-]+")
#: auxiliary verbs: "what time" followed by one asks for a time of day (not "what time
#: management")
_AUX = "is are was were do does did will would should shall can could has have".split()
CLOCK_Q = re.compile(rf"\bwhat time (?:{'|'.join(_AUX)})\b", re.I)
#: a time of day in a sentence: "7pm", "7:30", "10.15am", "noon", "midnight"
CLOCK = re.compile(
    r"\b\d{1,2}(?:[:.]\d{2})?\s?(?:am|pm)\b|\b\d{1,2}:\d{2}\b|\b(?:noon|midday|midnight)\b", re.I
)


def _spans(u: Unit, memo: TextMemo) -> list[TimeSpan]:
    if u.ts is None:
        return []
    spans = list(memo.spans(u.text, u.ts))
    # a bare year beside a fuller date is part of how the date is said, not another date
    return [s for s in spans if s.unit != "year" or len(spans) == 1]


#: how precisely a span says a date: an explicit day, a resolved day, a week, a month, a year
_PRECISION = {"day": 0.75, "range": 0.75, "weekend": 0.6, "week": 0.5, "month": 0.4, "year": 0.2}


def has_date(u: Unit, memo: TextMemo) -> float:
    """How precisely the sentence says a date: 1 an explicit day ("Monday 4 May"), 0.75 a
    resolved day ("tomorrow"), down to 0.2 a year; 0 no date."""
    spans = _spans(u, memo)
    return max(
        (1.0 if s.explicit and not s.approx else _PRECISION.get(s.unit, 0.5) for s in spans),
        default=0.0,
    )


def meant(u: Unit, question: str, memo: TextMemo) -> TimeSpan | None:
    """The expression of ``u`` the question asks about: the nearest (in words) to the
    question's own words in the sentence, month and weekday names aside (they say when, not
    what); an explicit date wins over a relative one up to six words
    nearer, a day over a month."""
    spans = _spans(u, memo)
    if len(spans) <= 1:
        return spans[0] if spans else None
    asked = terms(question) - {w[:3] for w in CALENDAR} - {stem(w) for w in CALENDAR}
    words = list(_WORD.finditer(u.text))
    hits = [i for i, m in enumerate(words) if terms(m.group(0)) & asked]

    def key(s: TimeSpan) -> tuple[float, int]:
        at = [i for i, m in enumerate(words) if s.offset <= m.start() < s.offset + len(s.text)]
        near = min((abs(h - i) for h in hits for i in at), default=0) if hits and at else 0
        return near - (6 if s.explicit else 0) - _PRECISION.get(s.unit, 0.5), s.offset

    return min(spans, key=key)


#: where a sentence's clauses part: a comma, a semicolon, "so", "but", "and then"
_CLAUSE = re.compile(r"\s*(?:(?<!\d)[,;:](?!\d)|\s-\s|\bso\b|\bbut\b|\band then\b)\s*", re.I)


def _clock(text: str, question: str, embedder, memo: TextMemo) -> str | None:
    """The time of day of ``text`` the question asks: of those not turned down ("at 9.15 not
    9"), the one said in the clause closest in meaning to the question (MiniLM cosine; the
    first without an embedder): "the hall shuts at 11pm so the party starts at 7.30pm" asked
    when the party starts."""
    kept = without_rejected(text)
    clauses = [c for c in _CLAUSE.split(kept) if CLOCK.search(c)]
    if not clauses:
        return None
    if len(clauses) > 1 and embedder is not None:
        from speakerflow.ops.text.embed import encode_query

        try:
            sims = memo.encode(embedder, clauses) @ encode_query(embedder, question)
            clauses = [clauses[int(sims.argmax())]]
        except Exception:  # noqa: BLE001 - a missing model only loses the choice
            pass
    found = CLOCK.search(clauses[0])
    return found.group(0) if found else None


def date_answer(
    u: Unit,
    question: str,
    two_asks: bool,
    config: AnswerConfig,
    memo: TextMemo,
    embedder=None,
) -> Answered:
    """The date ``u`` means for ``question`` (else the day it was said), with the message day
    as ``said`` when they differ; ``two_asks`` ("when and where") adds the sentence. A
    question for the time of day (:data:`CLOCK_Q`) is answered with the sentence's time of
    day first ("6.45pm, 21 May 2026"; :func:`_clock` chooses among several with ``embedder``)."""
    span = meant(u, question, memo)
    said = date_of(u.ts)
    note = None
    if span is None:
        answer = said
    else:
        answer = describe(span, anchored=True)
        day = u.ts.date() if u.ts is not None else None
        if config.said_date and not (span.start == span.end == day) and said not in answer:
            note = said
    clock = _clock(u.text, question, embedder, memo) if CLOCK_Q.search(question) else None
    if clock:
        answer = f"{clock}, {answer}"
    if two_asks or config.when_quote:
        who = who_of(u)
        answer += f" ({who}: {u.text})" if who else f" ({u.text})"
    return Answered(answer, note)

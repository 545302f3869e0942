"""Writing an answer line: dates beside relative time words, the speaker, the clause or the
reason kept with the sentence that matches."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from speakerflow.ops.query.answer_config import AnswerConfig
from speakerflow.ops.query.answer_intent import REASON, RELATIVE
from speakerflow.ops.query.answer_units import Messages, Unit, message_terms, terms
from speakerflow.ops.text.temporal import describe, resolve

NO_INFO = "There is no information available in the conversation to answer this question."


@dataclass(frozen=True)
class Answered:
    """An answer line and, beside it, the day its message was said when the answer means
    another day (``said``: ``"27 April 2026"`` for "4 May 2026" said a week before; ``None``
    otherwise). The line holds the date meant only; the CLI, ``ask --json``, ``Memory``, the
    HTTP server and MCP show ``said`` beside it."""

    text: str
    said: str | None = None
    #: with ``AnswerConfig.short_answer``: the whole line the short answer was taken from
    quote: str | None = None


def date_of(ts) -> str:
    return f"{ts.day} {ts:%B %Y}" if ts is not None else "?"


def annotate(text: str, ts) -> str:
    """``text`` with the date each relative time expression means in brackets."""
    if ts is None:
        return text
    out, last = [], 0
    for span in resolve(text, ts):
        if not RELATIVE.search(span.text):
            continue
        end = span.offset + len(span.text)
        out.append(text[last:end] + f" ({describe(span)})")
        last = end
    return "".join(out) + text[last:]


def who_of(u: Unit) -> str | None:
    rows = [r for r in u.rows if r not in (None, "GROUP")]
    if u.speaker:
        return u.speaker
    return rows[0] if rows else ("GROUP" if "GROUP" in u.rows else None)


def write_line(u: Unit, config: AnswerConfig, text: str | None = None) -> str:
    body = text if text is not None else full_sentence(u)
    if config.annotate_dates:
        body = annotate(body, u.ts)
    who = who_of(u)
    return f"{who}: {body}" if who else body


def with_turn(line: str, u: Unit, messages: Messages | None, words: set[str], most: int) -> str:
    """``line`` with the turn ``u``'s message replies to, when that message is brief (at
    most ``most`` words) and holds none of the question's ``words`` ("sure", "on it"): what
    the person agreed to is said in the turn they answer."""
    said = " ".join(u.siblings or (u.text,))
    if messages is None or len(said.split()) > most or words & message_terms(u):
        return line
    turn = messages.replied(u.msg_id)
    return f"{line} (to {turn[0]}: {turn[1]})" if turn else line


def with_reason(u: Unit) -> str:
    """The unit's sentence with the reason: kept as is when it states one (because, since,
    due to ...); else with the sentence of its message that does, or with its neighbours
    (a reason is often said just before or after: "The lift is broken. I will take the
    stairs.")."""
    if REASON.search(u.text) or len(u.siblings) < 2:
        return u.text
    reason = [i for i, x in enumerate(u.siblings) if REASON.search(x) and i != u.index]
    if reason:
        pick = min(reason, key=lambda i: abs(i - u.index))
        parts = sorted({u.index, pick})
    else:
        parts = [i for i in (u.index - 1, u.index, u.index + 1) if 0 <= i < len(u.siblings)]
    return " ".join(u.siblings[i] for i in parts)


#: clause breaks: punctuation (a comma between digits is a thousands separator, not a break)
_CLAUSE = re.compile(r"\s*(?:(?<!\d),|,(?!\d)|[;:()]|\s[-\u2013\u2014]\s|\u2014)\s*")


def clause_of(
    u: Unit, words: set[str], max_words: int, wanted: Callable[[str], bool] | None = None
) -> str:
    """For a long sentence, the clause holding the most question words (with the clause after
    it when it is too short to stand alone); short sentences are kept whole. ``wanted``: a
    clause holding what the question type asks for (a number, a date) counts one word more."""
    text = full_sentence(u)
    if len(text.split()) <= max_words:
        return text
    parts = [p for p in _CLAUSE.split(text) if p.strip()]
    if len(parts) < 2:
        return text
    hits = [len(words & terms(p)) + (1 if wanted and wanted(p) else 0) for p in parts]
    i = max(range(len(parts)), key=lambda k: (hits[k], -k))
    if hits[i] == 0:
        return text
    pick = parts[i]
    if len(pick.split()) < 4 and i + 1 < len(parts):
        pick = f"{pick}, {parts[i + 1]}"
    return pick


def statement_of(u: Unit, config: AnswerConfig) -> str:
    """A person's statement: their whole message when it is short enough, else the sentence."""
    whole = " ".join(u.siblings)
    return whole if len(whole.split()) <= config.max_statement_words else full_sentence(u)


def full_sentence(u: Unit, min_words: int = 5) -> str:
    """The unit's sentence, or its whole message when the sentence alone is too short to read."""
    if len(u.text.split()) >= min_words or len(u.siblings) < 2:
        return u.text
    return " ".join(u.siblings)


#: the alternative a statement turns down: ", not X", "instead of X", "rather than X"
_ALT = r"(?:[^,.;:!?]|\.(?=\d))+"  # up to the clause's end (a decimal point is no end)
#: (and a bare "not" before a value: "at 9.15 not 9", "Friday not Thursday")
REJECTED = re.compile(
    rf"(?i:,\s*not\s+){_ALT}|(?i:\s+not)\s+(?=\d|£|\$|€|[A-Z]){_ALT}"
    rf"|(?i:\s*\b(?:instead of|rather than)\s+){_ALT}"
)
#: "I'd rather take A than B": the B it is preferred to
RATHER = re.compile(rf"(\brather\b(?:[^,.;:!?](?!\bthan\b))*?)\s+than\s+{_ALT}", re.I)


def without_rejected(text: str) -> str:
    """``text`` without the alternative it turns down (", not X", "instead of X", "rather
    than X", "rather A than X"): under a "now" question the value
    rejected is the old state, not part of the answer ("I take the 9.10 bus, not the 8.40,
    since ..." -> "I take the 9.10 bus, since ...")."""
    return RATHER.sub(r"\1", REJECTED.sub("", text)).strip() or text

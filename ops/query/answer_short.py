"""The short answer form (``AnswerConfig.short_answer``): the answer line is the span the
question type asks for - a place for "where", a number with its unit for "how many / how
much", the person for "who", else the sentence's best clause of at most ``clause_words``
words - and the whole line the scoring picker writes is kept beside it as the supporting
quote (:attr:`~.answer_text.Answered.quote`). Date answers are short already
(:mod:`.answer_dates`); why, decision, per-person and time-focus answers, and the question
types the old picker answers (``AnswerConfig.old_types``), keep their whole lines."""

from __future__ import annotations

import re

from speakerflow.ops.query.answer_config import AnswerConfig
from speakerflow.ops.query.answer_intent import CALENDAR, PLACE, Intent
from speakerflow.ops.query.answer_score import has_number
from speakerflow.ops.query.answer_text import annotate, clause_of
from speakerflow.ops.query.answer_units import Unit, stem, terms

#: a place phrase's words after its preposition: a run of capitalised words, or one word
_PLACE_WORDS = re.compile(
    r"(?:(?:the|a|an|my|our|his|her|their|this|that) )?(?:[A-Z][\w'-]*(?: [A-Z][\w'-]*)*|\w+)"
)
#: a number with what it counts (a currency sign before; a unit, a noun or "a year" after)
_AMOUNT = re.compile(
    r"[£$€]?\d[\d,.:]*(?:\s?%|\s(?:a|an|per|each)\s[a-zA-Z]+\b"
    r"|\s?[a-zA-Z]+\b(?:\s(?:a|an|per|each)\s[a-zA-Z]+\b)?)?"
    r"|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
    r"forty|fifty|hundred|half|dozen)\b(?:\s[a-zA-Z]+)?",
    re.IGNORECASE,
)


def _place(text: str) -> str | None:
    for m in PLACE.finditer(text):
        words = _PLACE_WORDS.match(text, m.start(0) + len(m.group(1)) + 1)
        if words and words.group(0).split()[-1].lower() not in CALENDAR:
            return words.group(0)
    return None


def _amount(text: str) -> str | None:
    m = _AMOUNT.search(text)
    return m.group(0).strip() if m else None


def person_meant(u: Unit, names: list[str], question: str) -> str | None:
    """The answer to a who-question in ``u``: a person it names whom the question does not,
    else its speaker when the question does not name them."""
    asked = question.lower()
    named = next(
        (n for n in names if n.split()[0].lower() in u.text.lower() and n.lower() not in asked),
        None,
    )
    return named or (u.speaker if u.speaker and u.speaker.lower() not in asked else None)


def short_line(
    u: Unit, intent: Intent, names: list[str], question: str, config: AnswerConfig
) -> str:
    """The span of ``u``'s sentence that ``intent``'s question type asks for (see the module
    doc); the clause when the sentence holds no such span."""
    if intent.qtype == "where" and (place := _place(u.text)):
        return place
    if intent.quantity and has_number(u.text) and (amount := _amount(u.text)):
        return amount
    if intent.qtype == "who" and (who := person_meant(u, names, question)):
        return who
    words = terms(question) - {stem(n) for name in names for n in name.split()}
    clause = clause_of(u, words, config.clause_words)
    return annotate(clause, u.ts) if config.annotate_dates else clause

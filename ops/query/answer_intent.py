"""What a question asks, for the rules answerer: its type and the cue patterns of answers.

:func:`question_type` reads the question's form (``why``, ``when``, ``who``, ``where``,
``change``, ``per-person``, ``decision`` or ``what``); the patterns below are general
English cues of the question side (``WHEN``, ``NOW`` ...) and of an answer's sentence (a
reason, a settling word, a place phrase).
"""

from __future__ import annotations

import re

from speakerflow.ops.text.temporal import MONTHS, WEEKDAYS
from speakerflow.schemas import Projection

WHEN = re.compile(
    r"^\s*(when|what (date|day|time|year|month|week)|(in )?which (year|month|day|week)|"
    r"how long ago|since when)\b",
    re.I,
)
WHY = re.compile(
    r"^\s*(why|how come)\b|\b(what|which) (was|is|were|are) the (main )?reasons?\b|"
    r"\bfor what reason\b|\bwhat (made|makes|caused|led)\b",
    re.I,
)
WHO = re.compile(r"^\s*(who|whom|whose)\b|^\s*which (person|member|one|of (them|the \w+))\b", re.I)
WHERE = re.compile(
    r"^\s*where\b|\b(what|which) (place|city|country|town|venue|location|restaurant|street)\b|"
    r"\bin which (city|place|country|town)\b",
    re.I,
)
CHANGE_Q = re.compile(
    r"\b(chang\w*|no longer|any ?more|shift\w*|evolv\w*|switch\w*|became|become|"
    r"develop\w*|progress\w*)\b",
    re.I,
)
EACH = re.compile(r"\b(each|every(one|body)?|respective(ly)?|both)\b", re.I)
DECISION_Q = re.compile(
    r"\b(decid\w*|decision|agree\w*|settle\w*|vot\w+|chose|choose|chosen|consensus|rules?|"
    r"norms?|plan(ned)?|final(ly)?|conclu\w+|resolv\w+)\b",
    re.I,
)
NOW = re.compile(r"\b(now|currently|current|these days|at the moment|still|latest|today)\b", re.I)
TIME_WORD_Q = re.compile(r"\b(date|day|month|year|week|time|when|weekend)\b", re.I)
REASON = re.compile(
    r"\b(because|since|cause|'cause|due to|thanks to|so that|in order to|that's why|"
    r"that is why|the reason|reasons?|as it|as they|as i|as we)\b|,\s*so\b",
    re.I,
)
SETTLE = re.compile(
    r"\b(settled|agreed|decided|decision|final|it is|it's|will be|let'?s go with|we'?ll go with|"
    r"going with|confirmed|voted?|chose|official|deal|done)\b",
    re.I,
)
#: a location is said as a prepositional phrase ("in Porto", "at the park"); a bare place noun
#: ("pick a venue") names the matter, not where it is
PLACE = re.compile(
    r"\b(in|at|to|from|near|into|around|outside|inside) "
    r"(?:(?:the|a|an|my|our|his|her|their|this|that) )?"
    r"(?:[A-Z][\w'-]+|(?:place|city|town|country|venue|home|house|lane|street|road|park|restaurant|"
    r"cafe|caf\u00e9|hotel|office|beach|lake|village|layby|station|studio|shop|school|church|"
    r"gym)\b)"
)
RELATIVE = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|ago|last|next|this|past|coming|weekend|day before|"
    r"day after|following|previous|mon|tues?|wed|thu|thurs|fri|sat|sun)\w*\b|\bin \w+ "
    r"(days?|weeks?|months?|years?)\b",
    re.I,
)
CALENDAR = frozenset(MONTHS) | frozenset(WEEKDAYS)
NAME_WORD = re.compile(r"[A-Z][\w'-]+")


def question_type(projection: Projection) -> str:
    """``why``, ``when``, ``who``, ``where``, ``change``, ``per-person``, ``decision`` or
    ``what``."""
    q = projection.question
    people = [r for r in projection.rows if r not in ("ALL", "GROUP")]
    if WHY.search(q):
        return "why"
    if WHEN.search(q):
        return "when"
    if EACH.search(q) and not CHANGE_Q.search(q):
        return "per-person"
    if WHO.search(q):
        return "who"
    if WHERE.search(q):
        return "where"
    if CHANGE_Q.search(q) and re.match(r"^\s*(how|what|in what way)\b", q, re.I):
        return "change"
    if EACH.search(q) or (len(people) >= 2 and not DECISION_Q.search(q)):
        return "per-person"
    if DECISION_Q.search(q) or "GROUP" in projection.rows:
        return "decision"
    return "what"

"""What a question asks, for the rules answerer: its type and the cue patterns of answers.

:func:`question_type` reads the question's form (``why``, ``when``, ``who``, ``where``,
``change``, ``per-person``, ``decision`` or ``what``); the patterns below are general
English cues of the question side (``WHEN``, ``NOW`` ...) and of an answer's sentence (a
reason, a settling word, a place phrase).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from speakerflow.ops.text.temporal import MONTHS, WEEKDAYS
from speakerflow.schemas import Projection
from speakerflow.words import CHANGE_QUESTION as CHANGE_Q

WHEN = re.compile(
    r"^\s*(when|(?:on |at |in )?(?:what|which) (date|day|time|year|month|week)|"
    r"what(?:'s|\u2019s| is| was| will be) the (?:\w+ )?(?:date|day|time|deadline)|how long ago|"
    r"since when)\b",
    re.I,
)
WHY = re.compile(
    r"^\s*(why|how come)\b|\b(what|which) (was|is|were|are) the (main )?reasons?\b|"
    r"\bfor what reason\b|\bwhat (made|makes|caused|led|prompted|prompts|triggered|drove)\b",
    re.I,
)
WHO = re.compile(r"^\s*(who|whom|whose)\b|^\s*which (person|member|one|of (them|the \w+))\b", re.I)
#: "where does X stand on Y" asks for a view, not a place
WHERE = re.compile(
    r"^\s*where\b(?!\s+(?:do|does|did|is|are|was|were)\s+(?:[\w']+\s+){1,5}?stand(?:s|ing)?\b)"
    r"|\b(what|which) (place|city|country|town|venue|location|restaurant|street)\b|"
    r"\bin which (city|place|country|town)\b",
    re.I,
)
#: "each" / "every" over people; not over things or times ("each shift", "every week": one
#: answer about them all)
_THINGS = (
    r"(?!\s+(?:[\w-]+\s+)?(?:day|night|week|month|year|shift|session|round|time|item|room|game|"
    r"match|meeting|class|lesson|stage|leg|step|task|morning|evening|weekend)s?\b)"
)
EACH = re.compile(rf"\b(each{_THINGS}|every{_THINGS}|every(one|body)|respective(ly)?|both)\b", re.I)
DECISION_Q = re.compile(
    r"\b(decid\w*|decision|agree\w*|settle\w*|vot\w+|chose|choose|chosen|consensus|rules?|"
    r"norms?|plan(ned)?|final(ly)?|conclu\w+|resolv\w+|opt(ed)?\s+for|pick(ed|s)?(?!\s+up))\b",
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
#: ("book one room") names the matter, not where it is
PLACE = re.compile(
    r"\b(in|at|to|from|near|into|around|outside|inside) "
    r"(?:(?:the|a|an|my|our|his|her|their|this|that) )?"
    r"(?:[A-Z][\w'-]+|(?:place|city|town|country|venue|home|house|lane|street|road|park|restaurant|"
    r"cafe|caf\u00e9|hotel|office|beach|lake|village|station|studio|shop|school|church|"
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


# --- what the question asks of time and people (the scoring picker) ---------------------------

#: the state now: "now", "currently", "these days", "still", "any more", "after all", "replaced"
CURRENT_Q = re.compile(
    r"\b(now|currently|current|these days|nowadays|at the moment|at present|still|any ?more|"
    r"latest|after all|end(?:ed|s)? up|finally|instead(?! of\b)|as (?:things|it) stands?|"
    r"at this (?:point|stage)|by now|for now|going forward|from here on|in the end|"
    r"replac(?:ed|es|ing)|took (?:its|their|the) place)\b",
    re.I,
)
#: the earliest state: "at first", "originally", "used to", "first wanted", "early on", "when
#: the idea was first floated", "in the first" and a noun, "before ..."; "first" as an
#: adjective of a noun ("his first job") is no time focus, but a first view or choice is
ORIGINAL_Q = re.compile(
    r"\b(at first|originally|original|initially|to begin with|early on|in the beginning|"
    r"at the beginning|used to|previously|earlier|before)\b"
    r"|(?<!\bthe )(?<!\ba )(?<!'s )(?<!\bher )(?<!\bhis )(?<!\btheir )(?<!\bour )(?<!\bits )"
    r"(?<!\bmy )\bfirst\b(?! (?:time|thing)s?\b)"
    r"|\bfirst (?:reaction|response|view|opinion|idea|choice|pick|plan|take|thought|instinct|"
    r"preference|position|stance|suggestion|proposal|answer)s?\b"
    r"|\b(?:at|in|during) the first \w+",
    re.I,
)
#: a number, an amount, a score, a time of day, a size asked for
QUANTITY_Q = re.compile(
    r"\bhow (much|many|long|big|old|far|often)\b|\bwhat (price|score|time|temperature|size|"
    r"number|percentage|rate|amount|cost|fee|budget)\b|\bwhich (time|number)\b|"
    r"\b(?:cost|costs|charge|charges|pay|paying|priced)\s*\??\s*(?:now\b|these days\b|$)|"
    # "what's the monthly rent", "what will the return fare be": an amount noun after
    # up to three modifiers
    r"\bwhat(?:'s|\u2019s| is| was| will| would)?(?: be)? the (?:[\w'\u2019]+ ){0,3}?"
    r"(?:price|cost|fee|rate|rent|deposit|levy|fare|charge|budget|amount|total|figure|count|"
    r"score|percentage|size|temperature|number)s?\b",
    re.I,
)
#: a leading time clause ("When the idea was floated, what did each ...?", "Before the
#: vote, ..."): it pins the moment, the question after the comma says what is asked
TIME_CLAUSE = re.compile(
    r"^\s*(?:when|before|after|at|during|back when)\b[^,?]{3,80},\s*(?=\w)", re.I
)
#: a pinned moment that is the latest, not the earliest
LATEST_CLAUSE = re.compile(r"\b(last|latest|final|most recent|end)\b", re.I)
#: the present or future tense of a question about a state ("which car is he driving", "what
#: will the rent be"): what holds now, the latest statement when several are close
PRESENT_Q = re.compile(
    r"^\s*(?:\w+\s+){0,4}?(?:is|are|am|will|does|do|has|have|'s|'re)\b"
    # "what's", "it's" (is), not a possessive ("the cat's bowl")
    r"|\b(?:what|where|who|how|when|which|it|that|there|here)['\u2019]s\b",
    re.I,
)


def _asks_both(question: str) -> bool:
    """The question asks for an earlier state and a later one, each in a clause of its own
    ("what was A's first order, and what is A having now?")."""
    clauses = re.split(
        r",?\s+\band\s+(?=(?:what|which|how|where|who|when)\b)|;\s*", question, flags=re.I
    )
    if len(clauses) < 2:
        return False
    early = [
        i
        for i, c in enumerate(clauses)
        if ORIGINAL_Q.search(c) or re.search(r"\b(did|was|were|had)\b", c, re.I)
    ]
    late = [i for i, c in enumerate(clauses) if CURRENT_Q.search(c)]
    return bool(early and late and min(early) < max(late))


#: a question that asks more than a date ("when and where ...")
TWO_ASKS = re.compile(
    r"\b(when|where|who|what|which|how)\b.*\band (when|where|who|what|which|how)\b", re.I
)


@dataclass
class Intent:
    """What the scoring picker reads from a question: its type, its time focus (``current``,
    ``original``, ``change`` or ``None``), the people it names, for a cross-person question
    who spoke (``source``) about whom (``about``), whether it wants one line per person, a
    quantity, or more than a date."""

    qtype: str
    focus: str | None
    people: list[str] = field(default_factory=list)
    source: str | None = None
    about: str | None = None
    per_person: bool = False
    quantity: bool = False
    two_asks: bool = False
    #: a present- or future-tense question about a state: the latest of the closest answers
    present: bool = False


def read_intent(projection: Projection, rollup: bool) -> Intent:
    """The :class:`Intent` of ``projection``'s question; ``rollup``: it asks about several
    people at once (:func:`~speakerflow.ops.query.project.is_rollup`)."""
    q = projection.question
    clause = TIME_CLAUSE.match(q)
    if clause:  # the type is the main question's; the clause pins a moment of the discussion
        projection = projection.model_copy(update={"question": q[clause.end() :]})
    qtype = question_type(projection)
    people = [r for r in projection.rows if r not in ("ALL", "GROUP")]
    if qtype == "change" or (
        projection.tense == "full"
        and CHANGE_Q.search(q)
        and qtype not in ("why", "when", "who", "where")
    ):
        focus: str | None = "change"
    elif _asks_both(q) and qtype not in ("why", "per-person"):
        # A's earlier wish and A's wish now, asked in two clauses: both ends of the change (a
        # date asked at both ends is answered by the two dates, :func:`.answer_pick._change`)
        focus = "change"
    elif CURRENT_Q.search(q):
        focus = "current"
    elif ORIGINAL_Q.search(q):
        focus = "original"
    elif clause:
        focus = "current" if LATEST_CLAUSE.search(clause.group(0)) else "original"
    else:
        focus = None
    return Intent(
        qtype="change" if focus == "change" else qtype,
        focus=focus,
        people=people,
        source=projection.source,
        about=projection.owner if projection.source else None,
        per_person=qtype == "per-person" and (rollup or bool(EACH.search(q))),
        quantity=bool(QUANTITY_Q.search(q)),
        two_asks=bool(TWO_ASKS.search(q)),
        present=focus is None and bool(PRESENT_Q.search(projection.question)),
    )

"""Project: question + roster -> issue, rows, tense, source/owner scope and as-of time.

Two backends share one output, :class:`~speakerflow.schemas.Projection`:

- ``rules`` (default, no model): roster names and aliases (through
  :class:`~speakerflow.ops.text.people.PersonResolver`), roll-up words ("each", "everyone",
  "who never") -> ``ALL``, decision/norm words -> ``GROUP``, change or past-time words and
  date expressions -> ``full``, "what does A think of B" -> row B with owner B, source A.
- a chat model (any :class:`~speakerflow.ops.backends.base.ChatBackend`), asked for JSON;
  its rows are checked against the roster (unknown names dropped; nothing left -> ``ALL``)
  and unusable output falls back to the rules (counted in ``stats.rejects``).

When in doubt the rows are ``["ALL"]``: a too-wide slice costs a few rows, a too-narrow
one loses the answer.

>>> p = project_rules("What does Ana think of Ben's plan?", ["Ana", "Ben", "Chloe"])
>>> p.rows, p.owner, p.source
(['Ben'], 'Ben', 'Ana')
>>> project_rules("What did the members finally decide about the venue?", ["Ana", "Ben"]).rows
['ALL', 'GROUP']
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Literal

from speakerflow.ops.core.base import Batch, Context, Operator, OperatorConfig
from speakerflow.ops.core.registry import register
from speakerflow.ops.query.query_tables import (
    PROJECTION,
    QUESTIONS,
    schema_of,
    with_question_ids,
)
from speakerflow.ops.text.people import PersonResolver, longest_list
from speakerflow.schemas import PROJECTION_SCHEMA, Projection
from speakerflow.schemas.records import GROUP_OWNER
from speakerflow.words import CHANGE_OR_PAST_QUESTION, QUESTION_STOPWORDS

ALL = "ALL"
_ROLLUP = re.compile(
    r"\b(each|every(one|body)?|all (of )?(the |them|us)?\s*(members?|participants|people|friends)?|"
    r"who (never|didn'?t|did not|hasn'?t|has not|doesn'?t|does not)|which (members?|people|ones|of "
    r"them)|"
    r"anyone|anybody|members|whole group|respective(ly)?)\b",
    re.I,
)
#: per-person roll-ups and "who never ..." read every member's row, not the group's conclusion
_PER_PERSON = re.compile(
    r"\b(each|every(one|body)?|respective(ly)?|who (never|didn'?t|did not|"
    r"hasn'?t|has not|doesn'?t|does not))\b",
    re.I,
)
_GROUP = re.compile(
    r"\b(decid\w*|decision|agree\w*|consensus|settled?|chose|chosen|norms?|rules?|expect\w*|"
    r"usually|tradition\w*|the group|shared|final(ly)?|plan(ned|s)?|custom|habit\w*|"
    r"collective(ly)?)\b",
    re.I,
)
_MONTHS = (
    "january february march april may june july august september october november december"
).split()
_DATE_WORDS = re.compile(
    r"\b("
    + "|".join(_MONTHS)
    + r")\b|\b(19|20)\d\d\b|\b(last|previous) (week|month|year|weekend)\b|"
    r"\byesterday\b|\b(mon|tues|wednes|thurs|fri|satur|sun)day\b",
    re.I,
)
_DAY_MONTH_YEAR = re.compile(r"\b(\d{1,2})\s+(" + "|".join(_MONTHS) + r"),?\s+(\d{4})\b", re.I)
_MONTH_DAY_YEAR = re.compile(r"\b(" + "|".join(_MONTHS) + r")\s+(\d{1,2}),?\s+(\d{4})\b", re.I)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_PERCEIVE = re.compile(
    r"\b(think|thinks|thought|feel|feels|felt|see|sees|saw|view|views|perceive\w*|"
    r"regard\w*|describe\w*|say|says|said|opinion|impression)\b",
    re.I,
)
#: "what has A noticed about B", "what did A write regarding B": B is the matter, A the source
_ABOUT = re.compile(r"\b(about|regarding|concerning)\s+(?:\w+\s+)?$", re.I)
#: "according to A, what ... B ...": A's account of B
_ACCOUNT = re.compile(r"\baccording to\s+$", re.I)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\u2019-]*")


def as_of_date(question: str) -> datetime | None:
    """The end of the day a question pins with a full date (``7 May 2023``, ``May 7, 2023``,
    ``2023-05-07``), as UTC; ``None`` when it names no full date."""
    day = month = year = None
    if m := _DAY_MONTH_YEAR.search(question):
        day, month, year = int(m.group(1)), _MONTHS.index(m.group(2).lower()) + 1, int(m.group(3))
    elif m := _MONTH_DAY_YEAR.search(question):
        day, month, year = int(m.group(2)), _MONTHS.index(m.group(1).lower()) + 1, int(m.group(3))
    elif m := _ISO_DATE.search(question):
        year, month, day = (int(g) for g in m.groups())
    if year is None or month is None or day is None:
        return None
    try:
        return (
            datetime(year, month, day, tzinfo=UTC) + timedelta(days=1) - timedelta(microseconds=1)
        )
    except ValueError:
        return None


def is_rollup(projection: Projection) -> bool:
    """True when the question asks about several people at once: a roll-up ("each",
    "everyone", "who never ...") or two or more named person rows. A default ``["ALL"]``
    ("when in doubt") is not a roll-up."""
    people = [r for r in projection.rows if r not in (ALL, GROUP_OWNER)]
    return len(people) >= 2 or bool(_ROLLUP.search(projection.question))


#: questions that gather several facts over time or people: "what books has John read",
#: "how many games ...", "what do both A and B ...", "which cities has ..." (the perfect, a count,
#: "both", a plural asked of someone)
_AGGREGATE = re.compile(
    r"\b(has|have)\b|\bhow many\b|\bboth\b|\b(what|which) (\w+ )?\w+s (has|have|does|do|did)\b",
    re.I,
)
_BROAD = re.compile("|".join(p.pattern for p in (_ROLLUP, _GROUP, CHANGE_OR_PAST_QUESTION)), re.I)


def question_kind(question: str) -> str:
    """How recall may use System 2 for ``question`` (the rules are what LoCoMo's dev half and
    SocialMem training support; see docs/evaluation.md, "System 2 in recall"):

    - ``aggregate``: the answer gathers facts spread over sessions (a count, "both", the perfect
      "what has X done", a plural asked of someone), not a change ("has X's cooking changed");
      records, which cite messages of several sessions, weigh more;
    - ``broad``: roll-ups, group matters, changes (System 2's own ground): as configured;
    - ``focused``: a single fact; System 1's confident hits are protected from System 2.
    """
    if _AGGREGATE.search(question) and not CHANGE_OR_PAST_QUESTION.search(question):
        return "aggregate"
    return "broad" if _BROAD.search(question) else "focused"


def issue_of(question: str, names: list[str]) -> str:
    """The question's content words without question words and roster names (a short phrase)."""
    drop = {n.lower() for name in names for n in name.split()}
    words = []
    for w in _WORD.findall(question):
        bare = re.sub(r"['\u2019]s?$", "", w).lower()
        if bare and bare not in QUESTION_STOPWORDS and bare not in drop:
            words.append(re.sub(r"['\u2019]s?$", "", w))
    return " ".join(words) or question.strip()


def project_rules(
    question: str, roster: list[str], aliases: dict[str, list[str]] | None = None
) -> Projection:
    """The rules projection of ``question`` for a group with ``roster`` (see the module doc)."""
    resolver = PersonResolver(roster, aliases or {})
    mentions = resolver.mentions(question)
    names = list(dict.fromkeys(m[0] for m in mentions))
    owner = source = None
    group_words = bool(_GROUP.search(question))
    if len(names) == 2:
        first_end = next(m[2] for m in mentions if m[0] == names[0])
        second_start = next(m[1] for m in mentions if m[0] == names[1])
        between = question[first_end:second_start]
        before = question[: next(m[1] for m in mentions if m[0] == names[0])]
        if _PERCEIVE.search(between) or _ABOUT.search(between) or _ACCOUNT.search(before):
            source, owner = names
    if owner is not None:
        rows = [owner]
    elif len(names) >= 2 and _PER_PERSON.search(question):
        # "what did A, B and C each want": the people listed, not the whole roster (nor
        # someone named in a clause before the list)
        listed = longest_list(question, mentions)
        rows = listed if len(listed) >= 2 else names
    elif _ROLLUP.search(question):
        rows = [ALL] + ([GROUP_OWNER] if group_words and not _PER_PERSON.search(question) else [])
    elif names:
        rows = names + ([GROUP_OWNER] if group_words else [])
    elif group_words:
        rows = [GROUP_OWNER]
    else:
        rows = [ALL]
    as_of = as_of_date(question)
    full = bool(CHANGE_OR_PAST_QUESTION.search(question) or _DATE_WORDS.search(question) or as_of)
    # "what does A think of B": B's name stays in the issue (the matter is B)
    issue = issue_of(question, ([source] if source else []) if owner else names)
    return Projection(
        question=question,
        issue=issue,
        rows=rows,
        tense="full" if full else "head",
        owner=owner,
        source=source,
        as_of=as_of,
    )


PROJECT_PROMPT = """You decide what slice of a group chat's memory answers a question.
Return JSON with three fields:
- "issue": the one matter asked about, as a short noun phrase (used to match memory records).
- "rows": a list of whose memory rows to read: "ALL" (every member: per-person roll-ups and
  "who never ..." questions), "GROUP" (group decisions, norms, shared facts, ownership) and/or
  roster names. When unsure, use ["ALL"]. Add "GROUP" whenever a decision, norm or shared fact
  may matter, except when the question asks where EACH person stands. For "what does A think
  of B" the row is B (memory is filed under whom it is about).
- "tense": "head" for the current state only; "full" when the question asks how something
  changed, what it used to be, or pins a past time. When unsure, use "full".
Answer with JSON only."""


def parse_projection(
    text: str, question: str, roster: list[str], aliases: dict | None = None
) -> Projection:
    """Validate a model's JSON projection against the roster; raises ``ValueError`` if unusable."""
    match = re.search(r"\{.*\}", text, re.S)
    if not match:
        raise ValueError("no JSON object in the model's projection")
    data = json.loads(match.group(0))
    if not isinstance(data, dict):
        raise ValueError("projection JSON is not an object")
    resolver = PersonResolver(roster, aliases or {})
    rows: list[str] = []
    raw_rows = data.get("rows") or []
    for row in raw_rows if isinstance(raw_rows, list) else [raw_rows]:
        token = str(row).strip()
        name = token.upper() if token.upper() in (ALL, GROUP_OWNER) else resolver.resolve(token)
        if name and name not in rows:
            rows.append(name)
    tense: Literal["head", "full"] = "head" if data.get("tense") == "head" else "full"
    issue = str(data.get("issue") or "").strip() or issue_of(question, [])
    rules = project_rules(question, roster, aliases)
    return Projection(
        question=question,
        issue=issue,
        rows=rows or [ALL],
        tense=tense,
        owner=rules.owner,
        source=rules.source,
        as_of=rules.as_of,
    )


class ProjectConfig(OperatorConfig):
    """``backend``: ``rules``, or ``chat`` to use ``ctx.backends["project"]`` (a ChatBackend)."""

    backend: str = "rules"
    max_tokens: int = 200


@register
class Project(Operator):
    """``question`` table -> the same rows plus ``question_id`` (``q0``, ``q1`` ... when
    absent) and the :class:`Projection` columns (needs ``ctx.store`` for the roster).
    ``ctx.backends["project"]`` is the chat backend when ``backend`` is ``chat``."""

    name = "project"
    consumes = ("question",)
    produces = schema_of(*PROJECTION_SCHEMA)
    passthrough = True
    Config = ProjectConfig
    config: ProjectConfig

    def project(
        self, question: str, roster: list[str], aliases: dict | None, chat=None
    ) -> Projection:
        """Project one question (chat backend when configured, rules otherwise or on bad output)."""
        if self.config.backend == "chat" and chat is not None:
            user = (
                f"Question: {question}\nRoster of this group: {', '.join(roster)}\n"
                'Return {"issue": "...", "rows": [...], "tense": "head|full"}'
            )
            result = chat.chat(
                [{"role": "system", "content": PROJECT_PROMPT}, {"role": "user", "content": user}],
                max_tokens=self.config.max_tokens,
                temperature=0.0,
            )
            self.stats.count_model_call(result.tokens)
            try:
                return parse_projection(result.text, question, roster, aliases)
            except (ValueError, json.JSONDecodeError):
                self.stats.rejects += 1
        return project_rules(question, roster, aliases)

    def run_batch(self, batch: Batch, ctx: Context) -> Batch:
        roster, aliases = ctx.store.roster(), ctx.store.aliases()
        chat = ctx.backends.get("project")
        projected = [self.project(q, roster, aliases, chat) for q in batch.get(QUESTIONS)]
        return with_question_ids(batch).put(PROJECTION, projected)

"""Answer: the frozen answerer over composed evidence.

- ``rules`` (no model): extractive, by question type. See :func:`answer_rules`.
- a chat model: the evidence context plus rules for attribution, per-person coverage,
  head/history use and empty rows; the reply is used as given (stripped).

The rules answerer works on *units*: the sentences of the messages the evidence rests on.
A System 1 excerpt gives its message's sentences; a System 2 record gives the sentences of
every message in its ``from_ids`` (the person's own words, not the Writer's restatement),
tagged with the record's row (a person or ``GROUP``) and its place in the record (the
earlier messages of a record that spans several are its history, the last its current state).
Without a message view (``view=None``) a record's own text is the unit.

Every unit is scored by the question's content words it contains (light suffix stemming,
weighted by rarity within the evidence), the cosine of its message to the question under
the group's embedder when one is given (the cached message embeddings; the question vector
is memoised by recall), a small prior from the item's rank, minus a penalty for sentences
that are themselves questions. Then the question type decides what is picked and how it
is written:

- **why**: messages with a reason cue (because, since, due to, so that, ", so", "that's
  why" ...) are lifted, and the answer keeps the sentence that carries the reason beside
  the one that matches the question ("Why did Maya not want to go?" -> the reason, not
  "ok so not Mariposa");
- **when**: units holding a time expression are lifted; the answer leads with the date
  meant, resolved against the message time by :mod:`~speakerflow.ops.text.temporal` ("yesterday"
  said on 10 April -> 9 April), else the day the message was said;
- **who**: leads with the person the sentence names (a roster name not in the question),
  else its speaker;
- **where**: lifts place phrases (a preposition before a capitalised name, place nouns);
- **change** ("how did ... change", tense ``full`` with change words): an earlier and a
  later statement on the matter, oldest first with their dates; a System 2 record that
  spans several messages supplies both sides (before/after) directly;
- **per-person** (roll-ups, several named people): one line per person from that person's
  own statements, their latest on the matter; the person rows come from System 2, else
  the speakers of the evidence; a person with an explicit empty row is "no record";
- **decision** (decide/agree/settle/rule ... or a GROUP row): lifts settling words and GROUP
  records; the message that settled a matching GROUP record (its source's latest cited
  message) is the answer when it scores close to the best ("one-on-one coffee then, no agenda",
  not the discussion before it);
- otherwise the best unit. With tense ``head`` and a "now" word the latest statement on the
  matter wins; units that a record marks as history are held back.

Relative time words in any answer carry the date they mean in brackets. When no unit shares
a content word with the question (and none is close in embedding), the answer is
:data:`NO_INFO`.

:class:`Answer` is the operator (Compose's ``evidence`` and ``context`` -> ``answer``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pyarrow as pa

from speakerflow.graphs import query_terms
from speakerflow.ops.core.base import Context, Operator, OperatorConfig, put_columns
from speakerflow.ops.core.registry import register
from speakerflow.ops.query.project import is_rollup
from speakerflow.ops.query.query_tables import (
    PROJECTION_COLUMNS,
    evidence_items,
    projections,
    schema_of,
)
from speakerflow.ops.text.temporal import MONTHS, WEEKDAYS, describe, resolve
from speakerflow.schemas import EvidenceItem, Projection

NO_INFO = "There is no information available in the conversation to answer this question."
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WHEN = re.compile(
    r"^\s*(when|what (date|day|time|year|month|week)|(in )?which (year|month|day|week)|"
    r"how long ago|since when)\b",
    re.I,
)
_WHY = re.compile(
    r"^\s*(why|how come)\b|\b(what|which) (was|is|were|are) the (main )?reasons?\b|"
    r"\bfor what reason\b|\bwhat (made|makes|caused|led)\b",
    re.I,
)
_WHO = re.compile(r"^\s*(who|whom|whose)\b|^\s*which (person|member|one|of (them|the \w+))\b", re.I)
_WHERE = re.compile(
    r"^\s*where\b|\b(what|which) (place|city|country|town|venue|location|restaurant|street)\b|"
    r"\bin which (city|place|country|town)\b",
    re.I,
)
_CHANGE_Q = re.compile(
    r"\b(chang\w*|no longer|any ?more|shift\w*|evolv\w*|switch\w*|became|become|"
    r"develop\w*|progress\w*)\b",
    re.I,
)
_EACH = re.compile(r"\b(each|every(one|body)?|respective(ly)?|both)\b", re.I)
_DECISION_Q = re.compile(
    r"\b(decid\w*|decision|agree\w*|settle\w*|vot\w+|chose|choose|chosen|consensus|rules?|"
    r"norms?|plan(ned)?|final(ly)?|conclu\w+|resolv\w+)\b",
    re.I,
)
_NOW = re.compile(r"\b(now|currently|current|these days|at the moment|still|latest|today)\b", re.I)
_TIME_WORD_Q = re.compile(r"\b(date|day|month|year|week|time|when|weekend)\b", re.I)
_REASON = re.compile(
    r"\b(because|since|cause|'cause|due to|thanks to|so that|in order to|that's why|"
    r"that is why|the reason|reasons?|as it|as they|as i|as we)\b|,\s*so\b",
    re.I,
)
_SETTLE = re.compile(
    r"\b(settled|agreed|decided|decision|final|it is|it's|will be|let'?s go with|we'?ll go with|"
    r"going with|confirmed|voted?|chose|official|deal|done)\b",
    re.I,
)
#: a location is said as a prepositional phrase ("in Porto", "at the park"); a bare place noun
#: ("pick a venue") names the matter, not where it is
_PLACE = re.compile(
    r"\b(in|at|to|from|near|into|around|outside|inside) "
    r"(?:(?:the|a|an|my|our|his|her|their|this|that) )?"
    r"(?:[A-Z][\w'-]+|(?:place|city|town|country|venue|home|house|lane|street|road|park|restaurant|"
    r"cafe|caf\u00e9|hotel|office|beach|lake|village|layby|station|studio|shop|school|church|"
    r"gym)\b)"
)
_RELATIVE = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|ago|last|next|this|past|coming|weekend|day before|"
    r"day after|following|previous|mon|tues?|wed|thu|thurs|fri|sat|sun)\w*\b|\bin \w+ "
    r"(days?|weeks?|months?|years?)\b",
    re.I,
)
_CALENDAR = frozenset(MONTHS) | frozenset(WEEKDAYS)
_NAME_WORD = re.compile(r"[A-Z][\w'-]+")

ANSWER_PROMPT = """Answer a question about a multi-party group conversation using ONLY the material below.
[RAW EXCERPTS] are verbatim messages tagged with speaker and time: use them for exact values.
[MEMORY SLICE] is memory by person: "* current" is the latest state, "- history" older states,
"(none)" means the person has no record on this matter.
Rules: attribute every fact to the right person; when several people are listed, answer for each;
never replace a person's own view with the group's outcome; use history only for questions about
change; for "who never ..." the answer is the people marked (none); if the material does not
contain the answer, reply exactly: {no_info}
Be concise."""  # noqa: E501


class AnswerConfig(OperatorConfig):
    """``backend``: ``rules`` or ``chat`` (uses the given ChatBackend); ``max_tokens`` for chat.

    Rules weights: ``dense_weight`` scales the question-message cosine (0 turns it off);
    ``question_penalty`` is subtracted for sentences that are questions; ``type_bonus`` is
    added for the cue of the question type (reason, time, place, settling words);
    ``record_bonus`` for a unit that a matching System 2 record rests on (GROUP for
    decisions, the person's own row for per-person lines, a multi-message record for change).
    ``context_weight``: a message cited by a record takes this share of the gap to the best
    question match among the record's messages and statement (records tie messages to one
    matter); ``settle_floor``: a decision question answers with the settling message of a GROUP
    record (its source's latest cited message) when it scores at least this share of the best.
    """

    backend: str = "rules"
    max_tokens: int = 200
    max_sentences_per_row: int = 1
    dense_weight: float = 4.0
    question_penalty: float = 2.0
    type_bonus: float = 1.5
    record_bonus: float = 1.0
    annotate_dates: bool = True
    max_statement_words: int = 40
    when_quote: bool = False
    clause_words: int = 12
    context_weight: float = 0.5
    settle_floor: float = 0.8


# --- units -------------------------------------------------------------------------------------


def stem(word: str) -> str:
    """A light suffix stemmer (plural, -ing, -ed, -ly) so "park" meets "parking"."""
    w = word.lower().removesuffix("'s").removesuffix("\u2019s")
    for suffix, keep in (
        ("ies", "y"),
        ("ing", ""),
        ("edly", ""),
        ("ed", ""),
        ("ly", ""),
        ("es", ""),
        ("s", ""),
    ):
        if (
            w.endswith(suffix)
            and len(w) - len(suffix) >= 3
            and not (suffix == "s" and w.endswith("ss"))
        ):
            w = w[: len(w) - len(suffix)] + keep
            if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
                w = w[:-1]  # running -> runn -> run
            break
    if len(w) > 3 and w.endswith("e") and not w.endswith("ee"):
        w = w[:-1]  # move, moved, moving -> mov
    return w


def terms(text: str) -> set[str]:
    """Stemmed content words of ``text``."""
    return {stem(w) for w in query_terms(text)}


def _split(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


# Per-text work of the units, memoised across questions on the group's view: the same
# messages come back as evidence ask after ask, and their sentences, stemmed words and time
# expressions do not change. The memo lives and dies with the GroupView (rebuilt when the
# group's messages change, dropped with the store by forget), so it holds nothing the group
# no longer has; a unit keeps the memoised word set itself (nothing mutates it).
_MEMO_LIMIT = 200_000  # entries per view before the memo starts over


class TextMemo:
    """Sentences, stemmed words and time-expression checks of texts, memoised (pure
    functions of the text and the message time). ``TextMemo.of(view)``: the view's own."""

    __slots__ = ("sentences", "terms", "times")

    def __init__(self) -> None:
        self.sentences: dict[str, tuple[str, ...]] = {}
        self.terms: dict[str, set[str]] = {}
        self.times: dict[tuple[str, datetime], bool] = {}

    @classmethod
    def of(cls, view) -> TextMemo:
        memo = view.__dict__.get("_text_memo")
        if memo is None:
            memo = view.__dict__["_text_memo"] = cls()
        return memo

    def _room(self, table: dict) -> None:
        if len(table) >= _MEMO_LIMIT:
            table.clear()

    def split(self, text: str) -> tuple[str, ...]:
        found = self.sentences.get(text)
        if found is None:
            self._room(self.sentences)
            found = self.sentences[text] = tuple(_split(text)) or (text,)
        return found

    def words(self, sentence: str) -> set[str]:
        found = self.terms.get(sentence)
        if found is None:
            self._room(self.terms)
            found = self.terms[sentence] = terms(sentence)
        return found

    def says_time(self, text: str, ts: datetime) -> bool:
        """Whether ``text`` holds a time expression (resolved against ``ts``)."""
        found = self.times.get((text, ts))
        if found is None:
            self._room(self.times)
            found = self.times[(text, ts)] = bool(resolve(text, ts))
        return found


@dataclass
class Unit:
    """One sentence of a message (or of a record without a message view)."""

    text: str
    msg_id: str | None
    speaker: str | None
    ts: datetime | None
    rank: int
    rows: set = field(default_factory=set)
    via_record: bool = False
    history: bool = False  # an earlier message of a record that spans several
    record_span: tuple = ()  # (msg ids of the record, oldest first) when it spans several
    index: int = 0  # sentence number in its message
    siblings: tuple = ()  # all sentences of the message
    terms: set = field(default_factory=set)
    score: float = 0.0
    raw: float = 0.0  # the score before units without any match are set aside
    is_record: bool = False  # a record's own text (the Writer's statement), not a message
    cites: tuple = ()  # a record's from_ids
    session: str | None = None
    records: set = field(default_factory=set)  # keys of the records citing this message
    settles: bool = (
        False  # the message that settled a GROUP record (its source's latest cited message)
    )
    context: float = 0.0  # the best question match among the records citing it (set by _score)


class Messages:
    """Message lookup for the answerer: from a :class:`~speakerflow.ops.query.recall.GroupView`."""

    def __init__(self, view):
        self.view = view
        from speakerflow.ops.query.recall_bounded import speaker_index

        self.roster = list(speaker_index(view).names)  # sorted(set(view.speakers)), cached per view

    def get(self, msg_id: str):
        row = self.view.pos.get(msg_id)
        if row is None:
            return None
        return self.view.speakers[row], self.view.ts[row], self.view.texts[row]

    def session(self, msg_id: str | None) -> str | None:
        row = self.view.pos.get(msg_id) if msg_id else None
        return self.view.sessions[row] if row is not None else None


def _units(
    evidence: list[EvidenceItem], messages: Messages | None, memo: TextMemo | None = None
) -> list[Unit]:
    units: dict[tuple, Unit] = {}
    memo = memo or TextMemo()

    def add(
        key_id,
        text,
        speaker,
        ts,
        item: EvidenceItem,
        via_record,
        history,
        span,
        is_record=False,
        record_key=None,
        settles=False,
    ):
        sents = memo.split(text)
        session = messages.session(key_id) if messages and not is_record else None
        for i, s in enumerate(sents):
            key = (key_id, i)
            u = units.get(key)
            if u is None:
                u = units[key] = Unit(
                    s,
                    None
                    if is_record
                    else key_id
                    if messages
                    else item.msg_ids[0]
                    if item.msg_ids
                    else None,
                    speaker,
                    ts,
                    item.rank,
                    index=i,
                    siblings=tuple(sents),
                    terms=memo.words(s),
                    session=session,
                    is_record=is_record,
                    cites=tuple(item.msg_ids) if is_record else (),
                )
            u.rank = min(u.rank, item.rank)
            if item.row:
                u.rows.add(item.row)
            u.via_record |= via_record
            u.history |= history
            if span and len(span) > len(u.record_span):
                u.record_span = span
            if record_key is not None:
                u.records.add(record_key)
            u.settles |= settles

    for item in evidence:
        if item.kind == "empty_row" or not item.text:
            continue
        if item.kind == "record" and messages is not None and item.msg_ids:
            found = [(mid, messages.get(mid)) for mid in item.msg_ids]
            found = [(mid, m) for mid, m in found if m is not None]
            found.sort(key=lambda f: (f[1][1] is None, f[1][1]))
            span = tuple(mid for mid, _ in found) if len({m[2] for _, m in found}) > 1 else ()
            # a GROUP record was settled by its source's latest message among those it cites
            # (a one-message GROUP record settles nothing unless it says so: "we need to pick a
            # venue" is the proposal, not the outcome)
            settling = (
                next((mid for mid, m in reversed(found) if m[0] == item.speaker), None)
                if item.row == "GROUP"
                and (len(found) > 1 or any(_SETTLE.search(m[2]) for _, m in found))
                else None
            )
            for j, (mid, (speaker, ts, text)) in enumerate(found):
                add(
                    mid,
                    text,
                    speaker,
                    ts,
                    item,
                    True,
                    bool(span) and j < len(found) - 1,
                    span,
                    record_key=item.entry_id or item.text,
                    settles=mid == settling,
                )
        if item.kind == "record":
            # the record's own statement of the state: what an UPDATE chain changes
            add(
                item.entry_id or item.text,
                item.text,
                item.row if item.row not in (None, "GROUP") else item.speaker,
                item.ts,
                item,
                True,
                False,
                (),
                is_record=True,
                record_key=item.entry_id or item.text,
            )
        else:
            mid = item.msg_ids[0] if item.msg_ids else item.text
            add(mid, item.text, item.speaker, item.ts, item, False, False, ())
    return list(units.values())


# --- question types ----------------------------------------------------------------------------


def question_type(projection: Projection) -> str:
    """``why``, ``when``, ``who``, ``where``, ``change``, ``per-person``, ``decision`` or
    ``what``."""
    q = projection.question
    people = [r for r in projection.rows if r not in ("ALL", "GROUP")]
    if _WHY.search(q):
        return "why"
    if _WHEN.search(q):
        return "when"
    if _EACH.search(q) and not _CHANGE_Q.search(q):
        return "per-person"
    if _WHO.search(q):
        return "who"
    if _WHERE.search(q):
        return "where"
    if _CHANGE_Q.search(q) and re.match(r"^\s*(how|what|in what way)\b", q, re.I):
        return "change"
    if _EACH.search(q) or (len(people) >= 2 and not _DECISION_Q.search(q)):
        return "per-person"
    if _DECISION_Q.search(q) or "GROUP" in projection.rows:
        return "decision"
    return "what"


# --- scoring -----------------------------------------------------------------------------------


def _dense(
    units: list[Unit], question: str, messages: Messages | None, embedder
) -> dict[str, float]:
    if embedder is None or messages is None:
        return {}
    from speakerflow.ops.text.embed import encode_query

    view = messages.view
    rows = sorted({view.pos[u.msg_id] for u in units if u.msg_id in view.pos})
    if not rows:
        return {}
    try:
        mat = view.dense_matrix(embedder)
        qvec = encode_query(embedder, question)
    except Exception:  # noqa: BLE001 - a missing cache or model only loses this signal
        return {}
    sims = np.asarray(mat[rows] @ qvec, dtype=np.float64)
    return {view.ids[r]: float(s) for r, s in zip(rows, sims, strict=True)}


def _score(
    units: list[Unit],
    projection: Projection,
    qtype: str,
    dense: dict[str, float],
    config: AnswerConfig,
    names: list[str],
    memo: TextMemo | None = None,
) -> tuple[set[str], set[str], dict]:
    """Score every unit in place; returns the question's stemmed content words, the
    matter's values (recurring capitalised words of the best units) and, per value, the
    values said in the same sentence."""
    memo = memo or TextMemo()
    words = terms(projection.issue) or terms(projection.question)
    words |= (
        {
            stem(w)
            for w in query_terms(projection.question)
            if w.lower() not in {n.lower() for n in names}
        }
        if qtype in ("why", "when", "where", "who")
        else set()
    )
    words -= {stem(n) for n in names}
    n = len(units) or 1

    def idf_sum(found: set[str], df: Counter) -> float:
        return sum(math.log(1 + n / df[w]) for w in found)

    df: Counter = Counter()
    for u in units:
        df.update(words & u.terms)
    # the matter's values: capitalised words of the best lexical units that recur in the evidence
    # (the cities, routes, names of things argued about), added at half weight
    first = sorted(
        (u for u in units if not u.is_record and words & u.terms),
        key=lambda u: (-idf_sum(words & u.terms, df), u.rank),
    )[:8]
    lowered = {x.lower() for x in names} | _CALENDAR
    values = {
        stem(m.group(0))
        for u in first
        if words & u.terms
        for m in _NAME_WORD.finditer(u.text)
        if m.start() > 0
        and m.group(0).lower() not in lowered
        and m.group(0).lower() in {t.lower() for t in query_terms(m.group(0))}
    } - words
    vdf: Counter = Counter()
    for u in units:
        vdf.update(values & u.terms)
    # alternatives are said side by side ("Lisbon ... Porto about 90", "Porto would be quieter. I
    # think Lisbon gets too crowded"): a value that never shares a message with another value is a
    # passing mention, not the matter
    cooc: dict[str, set[str]] = {}
    by_message: dict = {}
    for u in units:
        by_message.setdefault(u.msg_id if u.msg_id is not None else id(u), set()).update(u.terms)
    for msg_terms in by_message.values():
        found = values & msg_terms
        for v in found:
            cooc.setdefault(v, set()).update(found - {v})
    values = {v for v in values if vdf[v] >= 2 and cooc.get(v)}
    cooc = {v: c & values for v, c in cooc.items() if v in values}
    df.update({v: vdf[v] for v in values})
    present = {u.msg_id for u in units if not u.is_record}
    matched = {u.msg_id for u in units if not u.is_record and (words | values) & u.terms}
    named = (
        set()
        if projection.source or qtype == "per-person"
        else {r for r in projection.rows if r not in ("ALL", "GROUP")}
    )
    time_q = qtype == "when" or bool(_TIME_WORD_Q.search(projection.question))
    decision_q = qtype == "decision" or bool(_DECISION_Q.search(projection.question))
    # System 2 ties messages to one matter: a message cited by a record is on the matter of the
    # record's best-matching message or statement ("Leon didn't come again" under the drinks record)
    best_of: dict = {}
    for u in units:
        lx = idf_sum(words & u.terms, df)
        for key in u.records:
            best_of[key] = max(best_of.get(key, 0.0), lx)
    for u in units:
        u.context = max((best_of[k] for k in u.records), default=0.0)
    for u in units:
        hit = words & u.terms
        lex = idf_sum(hit, df) + 0.5 * idf_sum(values & u.terms, df)
        hit = hit or (values & u.terms)
        context_hit = False
        if not u.is_record and u.context > lex:
            # the message that settled a GROUP record answers a decision question as well as the
            # record does
            lex += (1.0 if decision_q and u.settles else config.context_weight) * (u.context - lex)
            context_hit = u.context > 0
        s = (
            lex
            + config.dense_weight * max(0.0, dense.get(u.msg_id or "", 0.0))
            + 1.0 / (1 + u.rank)
        )
        if u.text.rstrip().endswith("?"):
            s -= config.question_penalty * (0.3 if qtype == "per-person" else 1.0)
        if qtype == "why" and (
            _REASON.search(u.text) or any(_REASON.search(x) for x in u.siblings)
        ):
            s += config.type_bonus
        if time_q and (
            memo.says_time(u.text, u.ts) if u.ts is not None else resolve(u.text, _today())
        ):
            s += config.type_bonus
        if qtype == "where" and any(
            m.group(0).split()[-1].lower() not in _CALENDAR for m in _PLACE.finditer(u.text)
        ):
            s += config.type_bonus
        if decision_q:
            if _SETTLE.search(u.text):
                s += config.type_bonus
            if "GROUP" in u.rows:
                s += config.record_bonus
            if u.settles:
                s += config.type_bonus  # the message that settled it, not the discussion before
        if qtype == "who" and _named(u, projection, names):
            s += 0.5
        if named and (u.speaker in named or named & u.rows):
            s += config.type_bonus  # "why did Dev ...": Dev's own words and records first
        if projection.source and u.speaker == projection.source:
            s += 1.0  # "what does A think of B": A's own words about B first
        if (
            u.history
            and projection.tense == "head"
            and qtype != "change"
            and u.record_span[-1] in matched
        ):
            s -= config.record_bonus  # superseded by a later message on the same matter
        if qtype == "change" and u.record_span:
            s += config.record_bonus
        if u.is_record and qtype != "change" and set(u.cites) & present:
            s = float(
                "-inf"
            )  # the person's own words are at hand: the Writer's restatement is not quoted
        elif u.is_record:
            s -= 0.25
        u.raw = s
        u.score = (
            s if (hit or context_hit or dense.get(u.msg_id or "", 0.0) >= 0.45) else float("-inf")
        )
    return words, values, cooc


def _today():
    from datetime import UTC, datetime

    return datetime.now(UTC)


def _named(u: Unit, projection: Projection, names: list[str]) -> str | None:
    """The first roster name the unit's sentence mentions that the question does not."""
    asked = {w.lower() for w in _NAME_WORD.findall(projection.question)}
    for w in _NAME_WORD.findall(u.text):
        for name in names:
            if w.lower() in (name.lower(), name.split()[0].lower()) and w.lower() not in asked:
                return name
    return None


# --- writing -----------------------------------------------------------------------------------


def _date(ts) -> str:
    return f"{ts.day} {ts:%B %Y}" if ts is not None else "?"


def annotate(text: str, ts) -> str:
    """``text`` with the date each relative time expression means in brackets."""
    if ts is None:
        return text
    out, last = [], 0
    for span in resolve(text, ts):
        if not _RELATIVE.search(span.text):
            continue
        end = span.offset + len(span.text)
        out.append(text[last:end] + f" ({describe(span)})")
        last = end
    return "".join(out) + text[last:]


def _who(u: Unit) -> str | None:
    rows = [r for r in u.rows if r not in (None, "GROUP")]
    if u.speaker:
        return u.speaker
    return rows[0] if rows else ("GROUP" if "GROUP" in u.rows else None)


def _line(u: Unit, config: AnswerConfig, text: str | None = None) -> str:
    body = text if text is not None else _full(u)
    if config.annotate_dates:
        body = annotate(body, u.ts)
    who = _who(u)
    return f"{who}: {body}" if who else body


def _with_reason(u: Unit) -> str:
    """The unit's sentence with the reason: kept as is when it states one (because, since,
    due to ...); else with the sentence of its message that does, or with its neighbours
    (a reason is often said just before or after: "Saturdays are marking days. I cannot come.")."""
    if _REASON.search(u.text) or len(u.siblings) < 2:
        return u.text
    reason = [i for i, x in enumerate(u.siblings) if _REASON.search(x) and i != u.index]
    if reason:
        pick = min(reason, key=lambda i: abs(i - u.index))
        parts = sorted({u.index, pick})
    else:
        parts = [i for i in (u.index - 1, u.index, u.index + 1) if 0 <= i < len(u.siblings)]
    return " ".join(u.siblings[i] for i in parts)


_CLAUSE = re.compile(r"\s*(?:[,;:()]|\s[-\u2013\u2014]\s|\u2014)\s*")


def _clause(u: Unit, words: set[str], max_words: int) -> str:
    """For a long sentence, the clause holding the most question words (with the clause after
    it when it is too short to stand alone); short sentences are kept whole."""
    text = _full(u)
    if len(text.split()) <= max_words:
        return text
    parts = [p for p in _CLAUSE.split(text) if p.strip()]
    if len(parts) < 2:
        return text
    hits = [len(words & terms(p)) for p in parts]
    i = max(range(len(parts)), key=lambda k: (hits[k], -k))
    if hits[i] == 0:
        return text
    pick = parts[i]
    if len(pick.split()) < 4 and i + 1 < len(parts):
        pick = f"{pick}, {parts[i + 1]}"
    return pick


def _statement(u: Unit, config: AnswerConfig) -> str:
    """A person's statement: their whole message when it is short enough, else the sentence."""
    whole = " ".join(u.siblings)
    return whole if len(whole.split()) <= config.max_statement_words else _full(u)


def _full(u: Unit, min_words: int = 5) -> str:
    """The unit's sentence, or its whole message when the sentence alone is too short to read."""
    if len(u.text.split()) >= min_words or len(u.siblings) < 2:
        return u.text
    return " ".join(u.siblings)


def _latest_on_matter(
    cands: list[Unit], best: Unit, words: tuple, floor: float = 0.5, need_issue: bool = False
) -> Unit:
    """The latest of ``cands`` on the same matter as ``best`` scoring at least ``floor`` of it
    (a later statement on the matter supersedes an earlier one). Same matter: a value of the
    matter (a city, a route ...) when ``best`` names one, else a question word ``best`` holds;
    ``need_issue``: also a question word ``best`` holds."""
    issue, values, cooc = words
    core = {w for w in issue if not _NOW.fullmatch(w)}  # "now", "still" say when, not what
    mine = values & best.terms
    # the alternatives of best's values: values said together with them somewhere in the evidence
    shared = (
        (mine | {v for v in values if cooc.get(v, set()) & mine})
        or (issue & best.terms)
        or best.terms
    )
    pool = [
        c
        for c in cands
        if c.raw >= floor * best.raw
        and (c.terms & shared)
        and c.ts is not None
        and (not need_issue or c.terms & core & best.terms)
    ]
    if not pool or best.ts is None:
        return best
    latest = max(pool, key=lambda c: (c.ts or best.ts, c.score))  # every c.ts is set (pool)
    return latest if latest.ts is not None and latest.ts > best.ts else best


def _change(
    units: list[Unit],
    ranked: list[Unit],
    projection: Projection,
    config: AnswerConfig,
    names: list[str],
) -> str:
    best = ranked[0]
    # System 2: a record that spans several messages is the before/after itself; records of
    # one row with different times are the states of an UPDATE chain
    for u in ranked[:5]:
        if u.record_span:
            first = [v for v in units if v.msg_id == u.record_span[0]]
            last = [v for v in units if v.msg_id == u.record_span[-1]]
            if first and last:
                a = max(first, key=lambda v: v.score)
                b = max(last, key=lambda v: v.score)
                if a.text != b.text:
                    return _change_line(a, b, config)
        if u.is_record and u.ts is not None:
            chain = [
                v
                for v in ranked
                if v.is_record
                and v.rows == u.rows
                and v.ts is not None
                and set(v.cites) & set(u.cites)
            ]  # states of one matter: they rest on shared messages
            if len({v.ts for v in chain}) >= 2:
                a, b = (
                    min(chain, key=lambda v: (v.ts, -v.score)),
                    max(chain, key=lambda v: (v.ts, v.score)),
                )
                if a.text != b.text:
                    return _change_line(a, b, config)
    people = [r for r in projection.rows if r in names]
    speaker = people[0] if len(people) == 1 else best.speaker
    mine = [u for u in ranked if u.speaker == speaker and u.ts is not None][:6] or ranked[:6]
    if len({u.ts for u in mine}) < 2:
        mine = [u for u in ranked if u.ts is not None][:6]
    if len({u.ts for u in mine}) < 2:
        return _line(best, config)
    first_ts, last_ts = (
        min(u.ts for u in mine if u.ts is not None),
        max(u.ts for u in mine if u.ts is not None),
    )
    early = max((u for u in mine if u.ts == first_ts), key=lambda u: u.score)
    late = max((u for u in mine if u.ts == last_ts), key=lambda u: u.score)
    return _change_line(early, late, config)


def _change_line(a: Unit, b: Unit, config: AnswerConfig) -> str:
    return f"earlier ({_date(a.ts)}): {_line(a, config)}; later ({_date(b.ts)}): {_line(b, config)}"


def _person_lines(
    units: list[Unit],
    ranked: list[Unit],
    evidence: list[EvidenceItem],
    projection: Projection,
    words: tuple,
    config: AnswerConfig,
) -> str:
    """One line per person: their own statement on the matter (their latest for ``head``)."""
    rows = [r for r in dict.fromkeys(e.row for e in evidence) if r not in (None, "GROUP", "ALL")]
    named = [r for r in projection.rows if r not in ("ALL", "GROUP")]
    people = rows or named or list(dict.fromkeys(u.speaker for u in ranked if u.speaker))
    empty = {e.row for e in evidence if e.kind == "empty_row"}
    # the matter is discussed where the best units are: a person's view is what they said there
    top_sessions = {u.session for u in ranked if u.score >= 0.8 * ranked[0].score} - {None}
    lines = []
    for person in people:
        mine = [u for u in units if u.speaker == person and not u.is_record] or [
            u for u in units if u.speaker == person
        ]
        for u in mine:
            u.score = (
                u.raw
                + (config.record_bonus * 0.5 if person in u.rows else 0.0)
                + (config.type_bonus if u.session in top_sessions else 0.0)
            )
        mine.sort(key=lambda u: (-u.score, u.rank))
        if mine:
            best = (
                _latest_on_matter(mine, mine[0], words, floor=0.3)
                if projection.tense == "head"
                else mine[0]
            )
            line = _line(best, config, _statement(best, config))
            values = words[1]
            if (
                best.msg_id != mine[0].msg_id
                and (values & best.terms) != (values & mine[0].terms)
                and values & mine[0].terms
            ):  # the person's stance moved between values
                line += f" (earlier, {_date(mine[0].ts)}: {_statement(mine[0], config)})"
            lines.append(line)
        elif person in empty:
            lines.append(f"{person}: no record on this matter")
        else:
            about = [u for u in ranked if person in u.rows]
            lines.append(_line(about[0], config) if about else f"{person}: nothing said on this")
    return "\n".join(lines)


def answer_rules(
    projection: Projection,
    evidence: list[EvidenceItem],
    config: AnswerConfig | None = None,
    view=None,
    embedder=None,
    roster: list[str] | None = None,
) -> str:
    """The extractive answer (see the module doc). ``view`` (a GroupView) lets records answer
    with their messages' own words; ``embedder`` adds the question-message cosine; ``roster``
    names the people (default: the view's speakers, else those of the evidence)."""
    config = config or AnswerConfig()
    messages = Messages(view) if view is not None else None
    names = sorted(
        set(roster or [])
        | set(messages.roster if messages else [])
        | {e.speaker for e in evidence if e.speaker}
        | {e.row for e in evidence if e.row not in (None, "GROUP", "ALL")}
    )
    memo = TextMemo.of(view) if view is not None else TextMemo()
    units = _units(evidence, messages, memo)
    if not units:
        return NO_INFO
    qtype = question_type(projection)
    dense = (
        _dense(units, projection.question, messages, embedder) if config.dense_weight > 0 else {}
    )
    words = _score(units, projection, qtype, dense, config, names, memo)
    ranked = sorted((u for u in units if u.score > float("-inf")), key=lambda u: (-u.score, u.rank))
    if not ranked:
        return NO_INFO
    best = ranked[0]
    if qtype == "per-person" and (is_rollup(projection) or _EACH.search(projection.question)):
        return _person_lines(units, ranked, evidence, projection, words, config)
    if qtype == "change" or (
        projection.tense == "full"
        and _CHANGE_Q.search(projection.question)
        and qtype not in ("why", "when", "who", "where")
    ):
        return _change(units, ranked, projection, config, names)
    if qtype == "why":
        return _line(best, config, _with_reason(best))
    if qtype == "when":
        spans = resolve(best.text, best.ts) if best.ts is not None else []
        spans = [s for s in spans if s.unit != "year" or len(spans) == 1]
        date = describe(spans[0], anchored=True) if spans else _date(best.ts)
        if not config.when_quote:
            return date
        return f"{date} ({_who(best)}: {best.text})" if _who(best) else f"{date} ({best.text})"
    if qtype == "who":
        name = _named(best, projection, names)
        if (
            name is None
            and best.speaker
            and best.speaker.lower() not in projection.question.lower()
        ):
            name = best.speaker
        return f"{name} ({_line(best, config)})" if name else _line(best, config)
    if qtype == "decision":
        # a GROUP record on the matter was settled by one message: that message is the outcome,
        # the proposals and objections before it are the discussion
        settled = [u for u in ranked if u.settles and u.score >= config.settle_floor * best.score]
        if settled:
            best = settled[0]
    if projection.tense == "head" and _NOW.search(projection.question):
        same = [u for u in ranked if u.speaker == best.speaker]
        best = _latest_on_matter(same, best, words, need_issue=True)
    if qtype == "what":
        return _line(best, config, _clause(best, words[0] | words[1], config.clause_words))
    return _line(best, config)


def answer_chat(
    projection: Projection, context: str, chat, config: AnswerConfig | None = None
) -> tuple[str, int]:
    """Ask a chat model; returns (answer, tokens used)."""
    config = config or AnswerConfig()
    result = chat.chat(
        [
            {"role": "system", "content": ANSWER_PROMPT.format(no_info=NO_INFO)},
            {
                "role": "user",
                "content": f"Question: {projection.question}\n{context}\n"
                "Answer using the material above.",
            },
        ],
        max_tokens=config.max_tokens,
        temperature=0.0,
    )
    return result.text.strip() or NO_INFO, result.tokens


@register
class Answer(Operator):
    """Compose's ``evidence`` and ``context`` + the projection -> ``answer`` (never empty:
    :data:`NO_INFO` when nothing answers). With ``backend="chat"`` it asks
    ``ctx.backends["answer"]`` (model calls and tokens metered). The rules answerer reads
    the messages of ``ctx.store`` (when there is one) and ``ctx.backends["embedder"]``."""

    name = "answer"
    consumes = ("question_id", *PROJECTION_COLUMNS, "evidence", "context")
    produces = schema_of(("answer", pa.string()))
    passthrough = True
    Config = AnswerConfig
    config: AnswerConfig

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        chat = ctx.backends.get("answer")
        if self.config.backend == "chat" and chat is None:
            raise ValueError(
                "Answer(backend='chat') needs ctx.backends['answer'] = <a ChatBackend>; "
                "or use backend='rules'"
            )
        view = None
        if self.config.backend != "chat" and ctx.store is not None:
            from speakerflow.ops.query.recall import GroupView

            view = GroupView.of(ctx.store)
        answers = []
        for projection, evidence, context in zip(
            projections(table), evidence_items(table), table["context"].to_pylist(), strict=True
        ):
            if self.config.backend == "chat":
                answer, used = answer_chat(projection, context, chat, self.config)
                self.stats.count_model_call(used)
            else:
                answer = answer_rules(
                    projection, evidence, self.config, view, ctx.backends.get("embedder")
                )
            answers.append(answer or NO_INFO)
        return put_columns(table, {"answer": answers}, self.produces)

"""Background extraction: candidate knowledge (subject, relation, value) from completed events.

Two backends share one validator (:func:`read_value` + entity resolution):

* ``rules``: a clause-level reader. A clause (sentence) that is not a question and names a
  relation phrase (``taker fee``, ``win rate``...) yields a fact when it also holds a value of
  the relation's kind (a percentage, a category word, an entity of the right type) and a
  subject of the right type (the nearest mention, the previous sentence's subject, or the
  speaker for first-person statements). "from A to B" reads B.
* ``chat``: asks a :class:`~speakerflow.ops.backends.base.ChatBackend` for a JSON list of
  ``{"subject", "relation", "value"}``; every row is validated like a rule hit, bad rows are
  rejected with a reason (``stats.rejects`` and :attr:`KnowledgeExtractor.rejects`).

Confidence starts from the source's trust tier (1: 0.9, 2: 0.75, 3: 0.5) and is scaled by
0.6 for hedged wording ("rumour", "maybe").
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa

from .backends.json_repair import repair_json
from .base import Context, Operator, OperatorConfig
from .canonicalize import Canonicalizer
from .detect import Detection, Detector, Mention
from .lexicon import CATEGORIES, RELATION_BY_NAME, Relation, category_of
from .registry import register

TRUST_CONFIDENCE = {1: 0.9, 2: 0.75, 3: 0.5}
HEDGE = re.compile(r"\b(rumou?r\w*|maybe|might|unconfirmed|heard|allegedly|possibly)\b", re.IGNORECASE)
NEGATION = re.compile(r"\b(no longer|not|never|isn't|aren't|wasn't)\b", re.IGNORECASE)
FIRST_PERSON = re.compile(r"\b(i|i'm|i am|my|me|we|our)\b", re.IGNORECASE)
PERCENT = re.compile(r"[-+]?\d+(?:\.\d+)?\s*%")
CHANGE = re.compile(r"\b(?:to|now|at)\b", re.IGNORECASE)
CLAUSE = re.compile(r"(?<=[.;!?])\s+|\n+")  # after a terminator + space: "0.12%" stays whole


@dataclass(frozen=True)
class Candidate:
    """One extracted fact before upsert.

    ``value`` is the normalised value (``"0.12%"``, ``"bearish"``) or, for entity-valued
    relations, the object entity id. ``slot`` is what a contradiction is scoped to.
    """

    subject_id: str
    relation: str
    value: str
    description: str
    evidence_ids: tuple[str, ...]
    confidence: float
    scope: str
    valid_at: datetime
    trust_tier: int = 1

    @property
    def slot(self) -> tuple[str, ...]:
        rel = RELATION_BY_NAME.get(self.relation)
        multi = rel is not None and rel.value not in ("percent", "category")
        return (self.subject_id, self.relation, self.value) if multi else (self.subject_id, self.relation)


@dataclass
class Event:
    """The fields of a System 1 row extraction needs."""

    msg_id: str
    text: str
    speaker: str
    ts: datetime
    source_type: str = "message"
    trust_tier: int = 1


def read_value(rel: Relation, text: str, after: int = 0) -> str | None:
    """The value of ``rel`` in ``text``: after "to/now" if present there, else nearest after ``after``."""
    if rel.value == "percent":
        hits = list(PERCENT.finditer(text))
        if not hits:
            return None
        change = [m for m in CHANGE.finditer(text) if m.start() >= after]
        pick = None
        if change:
            later = [h for h in hits if h.start() > change[-1].start()]
            pick = later[0] if later else None
        if pick is None:
            after_hits = [h for h in hits if h.start() >= after]
            pick = after_hits[0] if after_hits else hits[-1]
        num = float(pick.group().replace("%", "").strip())
        return f"{num:g}%"
    if rel.value == "category":
        change = list(CHANGE.finditer(text))
        if change:
            tail = category_of(rel.name, text[change[-1].end():])
            if tail:
                return tail
        return category_of(rel.name, text[after:]) or category_of(rel.name, text)
    return None


class KnowledgeExtractor:
    """Extract :class:`Candidate` facts from events; ``backend`` is ``"rules"`` or a ChatBackend."""

    def __init__(self, canon: Canonicalizer, detector: Detector, backend="rules"):
        self.canon = canon
        self.detector = detector
        self.backend = backend
        self.rejects: list[dict] = []
        self.model_calls = 0
        self.tokens = 0
        rels = sorted(RELATION_BY_NAME.values(), key=lambda r: -max(len(p) for p in r.phrases))
        self._phrases = [(r, re.compile(r"\b(" + "|".join(re.escape(p) for p in r.phrases) + r")\b", re.IGNORECASE))
                         for r in rels]

    def extract(self, event: Event, detection: Detection | None = None) -> list[Candidate]:
        """Candidate facts in ``event`` (detected entities are canonicalised on the way)."""
        if self.backend == "rules":
            return self._rules(event)
        return self._chat(event, detection or self.detector.detect(event.text))

    # -- rules ----------------------------------------------------------------------------
    def _rules(self, ev: Event) -> list[Candidate]:
        out: list[Candidate] = []
        last_subject: dict[str, str] = {}
        for clause in (c.strip() for c in CLAUSE.split(ev.text)):
            if not clause or clause.endswith("?"):
                continue
            mentions = [(m, self.canon.resolve(m)) for m in self.detector.detect(clause).mentions]
            typed = [(m, eid) for m, eid in mentions if eid]
            for m, eid in typed:
                last_subject[self.canon.entities[eid].etype if eid in self.canon.entities else m.etype] = eid
            used: set[str] = set()
            for rel, rx in self._phrases:
                if rel.name in used:
                    continue
                ph = rx.search(clause)
                if ph is not None:
                    span = (ph.start(), ph.end())
                elif rel.value_cues and (cue := self._value_cue(rel, clause)) is not None:
                    span = (cue[0], cue[0])  # the cue word is the value itself
                else:
                    continue
                cand = self._rule_fact(ev, clause, rel, span[0], span[1], typed, last_subject)
                if cand is not None:
                    used.add(rel.name)
                    out.append(cand)
        return out

    @staticmethod
    def _value_cue(rel: Relation, clause: str) -> tuple[int, int] | None:
        """Span of the first category word of ``rel`` in ``clause`` (a cue for value-cued relations)."""
        low = clause.lower()
        hits = [(m.start(), m.end()) for words in CATEGORIES.get(rel.name, {}).values() for w in words
                for m in [re.search(r"\b" + re.escape(w) + r"\b", low)] if m]
        return min(hits) if hits else None

    def _rule_fact(self, ev, clause, rel, p0, p1, typed, last_subject) -> Candidate | None:
        negated = bool(NEGATION.search(clause))
        subject = self._subject(ev, clause, rel, p0, typed, last_subject)
        if subject is None:
            return None
        if rel.value in ("percent", "category"):
            value = read_value(rel, clause, p1)
            if value is None or (negated and rel.value == "category"):
                return None
        else:
            objs = [eid for m, eid in typed if eid != subject and self._etype(eid, m) == rel.value]
            if not objs or negated:
                return None
            value = objs[0]
        return self._candidate(ev, subject, rel, value, clause)

    def _subject(self, ev, clause, rel, p0, typed, last_subject) -> str | None:
        if rel.subject == "person":
            if ev.source_type in ("user_turn", "message") and FIRST_PERSON.search(clause):
                return f"person:{ev.speaker}"
            people = [eid for m, eid in typed if self._etype(eid, m) == "person"]
            return people[0] if people else None
        same = [(abs(m.start - p0), eid) for m, eid in typed if self._etype(eid, m) == rel.subject]
        if same:
            return min(same)[1]
        # carry the previous sentence's subject only into a clause that names no entity ("It ...")
        return last_subject.get(rel.subject) if not typed else None

    def _etype(self, eid: str, m: Mention) -> str:
        st = self.canon.entities.get(eid)
        return st.etype if st else (eid.split(":", 1)[0] if ":" in eid else m.etype)

    def _candidate(self, ev: Event, subject: str, rel: Relation, value: str, clause: str) -> Candidate:
        conf = TRUST_CONFIDENCE.get(ev.trust_tier, 0.5) * (0.6 if HEDGE.search(clause) else 1.0)
        if rel.owner_scoped:
            self.canon.resolve_surface(subject.split(":", 1)[1], "person")
        scope = f"user:{subject.split(':', 1)[1]}" if rel.owner_scoped else "shared"
        return Candidate(subject, rel.name, value, clause[:200], (ev.msg_id,), round(conf, 4), scope, ev.ts, ev.trust_tier)

    # -- chat model -----------------------------------------------------------------------
    def _chat(self, ev: Event, det: Detection) -> list[Candidate]:
        rels = ", ".join(f"{r.name} ({r.subject}: {r.value})" for r in RELATION_BY_NAME.values())
        prompt = [
            {"role": "system", "content": "Extract durable facts from a financial event. Reply with a JSON list of "
                                          '{"subject": ..., "relation": ..., "value": ...}; relations: ' + rels},
            {"role": "user", "content": f"speaker: {ev.speaker}\nevent: {ev.text}"},
        ]
        res = self.backend.chat(prompt, max_tokens=400, temperature=0.0)
        self.model_calls += 1
        self.tokens += res.tokens
        fixed = repair_json(res.text)
        rows = fixed.value
        if isinstance(rows, dict) and isinstance(rows.get("facts"), list):
            rows = rows["facts"]
        if fixed.error or not isinstance(rows, list):
            self._reject(ev, None, f"reply is not a JSON list ({fixed.error or type(rows).__name__}); "
                                   "fix the prompt or the model")
            return []
        out = []
        for i, row in enumerate(rows):
            cand = self._validate_row(ev, i, row)
            if cand is not None:
                out.append(cand)
        return out

    def _validate_row(self, ev: Event, i: int, row) -> Candidate | None:
        if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in ("subject", "relation", "value")):
            return self._reject(ev, i, "row needs string fields subject, relation, value")
        rel = RELATION_BY_NAME.get(row["relation"])
        if rel is None:
            return self._reject(ev, i, f"field 'relation' is {row['relation']!r}; use one of {sorted(RELATION_BY_NAME)}")
        subj_surface = ev.speaker if row["subject"].lower() in ("i", "me", "user", ev.speaker.lower()) else row["subject"]
        subject = self.canon.resolve_surface(subj_surface, rel.subject)
        if subject is None:
            return self._reject(ev, i, f"field 'subject' {row['subject']!r} is not a {rel.subject}")
        if row["value"].lower() not in ev.text.lower() and rel.value != "category":
            return self._reject(ev, i, f"field 'value' {row['value']!r} is not in the event text (ungrounded)")
        if rel.value in ("percent", "category"):
            value = read_value(rel, row["value"])
        else:
            value = self.canon.resolve_surface(row["value"], rel.value)
        if value is None:
            return self._reject(ev, i, f"field 'value' {row['value']!r} is not a valid {rel.value} for {rel.name}")
        return self._candidate(ev, subject, rel, value, ev.text)

    def _reject(self, ev: Event, i: int | None, reason: str) -> None:
        self.rejects.append({"msg_id": ev.msg_id, "row": i, "reason": reason})
        return None


CANDIDATE_SCHEMA = pa.schema([
    ("subject_id", pa.string()), ("relation", pa.string()), ("value", pa.string()), ("description", pa.string()),
    ("evidence_ids", pa.list_(pa.string())), ("confidence", pa.float64()), ("scope", pa.string()),
    ("valid_at", pa.timestamp("us", tz="UTC")), ("trust_tier", pa.int64()),
])


class ExtractKnowledgeConfig(OperatorConfig):
    """``backend``: ``rules`` (a ChatBackend comes in through ``ctx.backends["extract"]``)."""

    backend: str = "rules"


@register
class ExtractKnowledge(Operator):
    """Message table -> candidate facts (one row each), via a :class:`KnowledgeExtractor`.

    The canonicaliser in ``ctx.state["canonicalizer"]`` is used (and created there if
    missing), so a pipeline run shares one alias table; model rejects go to
    ``ctx.state["rejects"]``.
    """

    name = "extract_knowledge"
    consumes = ("msg_id", "text", "speaker", "ts")
    produces = CANDIDATE_SCHEMA
    Config = ExtractKnowledgeConfig

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        canon = ctx.state.setdefault("canonicalizer", Canonicalizer())
        backend = ctx.backends.get("extract", self.config.backend)
        ex = KnowledgeExtractor(canon, Detector(canon.lexicon, canon.alias_table), backend)
        cols = [c for c in ("msg_id", "text", "speaker", "ts", "source_type", "trust_tier") if c in table.column_names]
        rows = []
        for r in table.select(cols).to_pylist():
            ev = Event(r["msg_id"], r["text"] or "", r["speaker"], r["ts"], r.get("source_type") or "message",
                       r.get("trust_tier") or 1)
            for c in ex.extract(ev):
                rows.append({**c.__dict__, "evidence_ids": list(c.evidence_ids)})
        self.stats.model_calls += ex.model_calls
        self.stats.tokens += ex.tokens
        self.stats.rejects += len(ex.rejects)
        ctx.state.setdefault("rejects", []).extend(ex.rejects)
        return pa.Table.from_pylist(rows, schema=CANDIDATE_SCHEMA)

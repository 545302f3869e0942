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

from speakerflow.ops.backends.json_repair import repair_json
from speakerflow.ops.core.base import Context, Operator, OperatorConfig
from speakerflow.ops.core.registry import register
from speakerflow.ops.knowledge.canonicalize import Canonicalizer
from speakerflow.ops.knowledge.detect import Detection, Detector, Mention
from speakerflow.ops.knowledge.group_state import knowledge_of
from speakerflow.ops.knowledge.lexicon import RELATION_BY_NAME, Relation
from speakerflow.ops.knowledge.reader import (
    ANAPHOR,
    CORRECTION,
    DECOY,
    ENDING,
    FIRST_PERSON,
    HEDGE,
    NEGATOR,
    PRONOUN,
    QUESTION,
    RELATION_THRESHOLD,
    SECOND_PERSON,
    THIRD_PERSON,
    THRESHOLD,
    VALUE_MARGIN,
    VALUE_THRESHOLD,
    categories,
    clauses,
    mask,
    negated_near,
    percents,
    pick,
    regime_classifier,
    relation_classifier,
)

TRUST_CONFIDENCE = {1: 0.9, 2: 0.75, 3: 0.5}
SUBJECT_TYPES = ("asset", "trader", "person")
#: ending/anaphor words per entity-valued relation ("that exposure is gone", "dropped that
#: strategy")
ANAPHOR_RELATION = {
    "exposure": "exposed_to",
    "risk": "exposed_to",
    "concern": "exposed_to",
    "worry": "exposed_to",
    "scare": "exposed_to",
    "issue": "exposed_to",
    "threat": "exposed_to",
    "strategy": "uses_strategy",
    "trade": "uses_strategy",
    "setup": "uses_strategy",
    "approach": "uses_strategy",
    "play": "uses_strategy",
}
#: an ending said after the value it ends ("the chop in ETH is done", "that aggressive phase is
#: over")
AFTER_END = re.compile(
    r"\b(is|are|'s|was)?\s*(done|over|finished|behind us|gone|ended|dead|no more)\b", re.IGNORECASE
)
#: relations a threshold or conditional clause ("alerts fire past a 25% drawdown") must not assert
STATS = ("win_rate", "max_drawdown", "fee", "status")


@dataclass(frozen=True)
class Candidate:
    """One extracted fact before upsert.

    ``value`` is the normalised value (``"0.12%"``, ``"bearish"``) or, for entity-valued
    relations, the object entity id. ``slot`` is what a contradiction is scoped to.
    ``op`` is ``"assert"`` (a value holds from ``valid_at``), ``"end"`` (the slot's value
    stops holding, no new value: "that exposure is gone") or ``"correct"`` (``value``
    replaces the value ``replaces`` that the same ``speaker`` just stated; ``subject_id``
    and ``relation`` may be empty when the correction does not name them).
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
    op: str = "assert"
    replaces: str | None = None
    speaker: str = ""

    @property
    def slot(self) -> tuple[str, ...]:
        rel = RELATION_BY_NAME.get(self.relation)
        multi = rel is not None and rel.value not in ("percent", "category")
        return (
            (self.subject_id, self.relation, self.value)
            if multi
            else (self.subject_id, self.relation)
        )


@dataclass
class Event:
    """The fields of a System 1 row extraction needs (``addressee``: who a reply is to, if
    known)."""

    msg_id: str
    text: str
    speaker: str
    ts: datetime
    source_type: str = "message"
    trust_tier: int = 1
    addressee: str | None = None


def read_value(rel: Relation, text: str, after: int = 0) -> str | None:
    """The asserted value of ``rel`` in ``text`` (see :func:`ops.knowledge.reader.pick`)."""
    if rel.value == "percent":
        v = pick(percents(text), after)
    elif rel.value == "category":
        v = pick(categories(text, rel.name), after)
    else:
        return None
    return v.value if v else None


def _segment(clause: str, at: int) -> tuple[int, int]:
    """The comma/dash-separated stretch of ``clause`` around position ``at``."""
    starts = [0] + [m.end() for m in re.finditer(r",|—|–|\s-\s|\|", clause) if m.end() <= at]
    ends = [m.start() for m in re.finditer(r",|—|–|\s-\s|\|", clause) if m.start() >= at] + [
        len(clause)
    ]
    return max(starts), min(ends)


def _decoy(clause: str, v) -> bool:
    """A percentage whose own segment names a return, yield, spread, discount, move...
    (:data:`DECOY`)."""
    s0, s1 = _segment(clause, v.start)
    near = clause[max(s0, v.start - 30) : min(s1, v.end + 20)]
    return bool(DECOY.search(near))


def _segments(clause: str) -> list[tuple[int, int]]:
    cuts = [m for m in re.finditer(r",|—|–|\s-\s|\||\band\b", clause)]
    edges = [0] + [m.end() for m in cuts]
    ends = [m.start() for m in cuts] + [len(clause)]
    return [(a, b) for a, b in zip(edges, ends, strict=True) if b > a]


class KnowledgeExtractor:
    """Extract :class:`Candidate` facts from events; ``backend`` is ``"rules"`` or a ChatBackend.

    The rules backend is a stream reader: it remembers the last subject of each type (for
    "she", "it"), the last entity-valued claim (for "that exposure is gone") and each
    speaker's last statements (for "typo above, it's 0.04% not 0.4%"). ``classifier`` is the
    nearest-prototype relation classifier (:func:`ops.knowledge.reader.relation_classifier`
    by default; ``None`` turns it off: lexicon phrases and value words only).
    """

    def __init__(
        self,
        canon: Canonicalizer,
        detector: Detector,
        backend="rules",
        classifier="default",
        threshold: float | None = None,
        values="default",
    ):
        self.canon = canon
        self.detector = detector
        self.backend = backend
        self.rejects: list[dict] = []
        self.model_calls = 0
        self.tokens = 0
        self.classifier = relation_classifier() if classifier == "default" else classifier
        #: regime values described in words ("bleeding, lower lows" is bearish) when no value word
        #: is there
        self.values = (
            (regime_classifier() if classifier == "default" else None)
            if values == "default"
            else values
        )
        self.value_threshold = VALUE_THRESHOLD
        self.threshold = RELATION_THRESHOLD if threshold is None else threshold
        rels = sorted(RELATION_BY_NAME.values(), key=lambda r: -max(len(p) for p in r.phrases))
        self._phrases = [
            (
                r,
                re.compile(
                    r"\b(" + "|".join(re.escape(p) for p in r.phrases) + r")\b", re.IGNORECASE
                ),
            )
            for r in rels
        ]
        self._recent: dict[str, str] = {}
        self._last_obj: dict[str, tuple[str, str]] = {}
        self._said: dict[str, list[Candidate]] = {}
        self._inferred: set[str] = (
            set()
        )  # events with a regime read by the classifier (no regime word)

    def extract(self, event: Event, detection: Detection | None = None) -> list[Candidate]:
        """Candidate facts in ``event`` (detected entities are canonicalised on the way)."""
        if self.backend == "rules":
            return self._rules(event)
        return self._chat(event, detection or self.detector.detect(event.text))

    # -- rules ----------------------------------------------------------------------------
    def _rules(self, ev: Event) -> list[Candidate]:
        out: list[Candidate] = []
        local: dict[str, str] = {}
        cue = bool(
            CORRECTION.search(ev.text)
        )  # "CORRECTION: ... Correct value 0.08%." spans clauses
        for clause in clauses(ev.text):
            if QUESTION.search(clause):
                continue
            typed = []
            second = bool(SECOND_PERSON.search(clause))
            for m in self.detector.detect(clause).mentions:
                if second and m.surface.startswith(
                    "@"
                ):  # "@omar your cap ...": the addressee, a person
                    people = self.detector.people
                    name = (people.resolve(m.surface) if people else None) or m.surface[1:]
                    typed.append((m, f"person:{name}", "person"))
                    continue
                eid = self.canon.resolve(m)
                if eid:
                    typed.append((m, eid, self._etype(eid, m)))
            found = self._clause(ev, clause, typed, local)
            fix = self._correction(ev, clause, found, cue)
            out += [fix] if fix is not None else found
            for _m, eid, t in typed:
                if t in SUBJECT_TYPES:
                    local[t] = eid
                    self._recent[t] = eid
            for c in found:
                st = self._etype(c.subject_id, None)
                if st in SUBJECT_TYPES:
                    local[st] = c.subject_id
                    self._recent[st] = c.subject_id
        if (
            ev.msg_id in self._inferred
        ):  # a regime word elsewhere in the event beats a regime read without one
            self._inferred.discard(ev.msg_id)
            worded = {
                c.subject_id
                for c in out
                if c.relation == "regime"
                and c.op == "assert"
                and categories(c.description, "regime")
            }
            out = [
                c
                for c in out
                if not (
                    c.relation == "regime"
                    and c.subject_id in worded
                    and not categories(c.description, "regime")
                )
            ]
        seen: set[tuple] = set()
        kept = []
        for c in out:
            if (k := (c.subject_id, c.relation, c.value, c.op)) not in seen:
                seen.add(k)
                kept.append(c)
        out = kept
        setting = {(c.subject_id, c.relation) for c in out if c.op != "end"}
        out = [
            c
            for c in out
            if not (c.op == "end" and c.slot == (c.subject_id, c.relation) and c.slot in setting)
        ]
        said = [c for c in out if c.op != "end"]
        if said:
            self._said[ev.speaker] = (self._said.get(ev.speaker, []) + said)[-8:]
        return out

    def _clause(self, ev: Event, clause: str, typed: list, local: dict) -> list[Candidate]:
        out: list[Candidate] = []
        ending = ENDING.search(clause)
        ended = False
        # entity-valued relations: the object's type names the relation
        for rel in (r for r in RELATION_BY_NAME.values() if r.value not in ("percent", "category")):
            rx = next(x for r, x in self._phrases if r is rel)
            phrase = rx.search(clause)
            objs = [(m, eid) for m, eid, t in typed if t == rel.value]
            if not objs:
                ana = ANAPHOR.search(clause)
                if (
                    (ending or (phrase and negated_near(clause, phrase.start())))
                    and ana
                    and ANAPHOR_RELATION.get(ana.group(1).lower()) == rel.name
                    and rel.name in self._last_obj
                ):
                    subj, obj = self._last_obj[rel.name]
                    out.append(self._candidate(ev, subj, rel, obj, clause, op="end"))
                    ended = True
                continue
            subject = self._subject(ev, clause, rel, objs[0][0].start, typed, local)
            explicit = (
                any(t == rel.subject for _m, _e, t in typed)
                or THIRD_PERSON.search(clause)
                or not any(t in SUBJECT_TYPES for _m, _e, t in typed)
                and local.get(rel.subject)
            )
            if subject is None or not explicit:
                continue
            for m, obj in objs:
                seg = _segment(
                    clause, m.start
                )  # an ending or a "not" reaches the objects of its own segment
                neg = negated_near(clause, m.start) or (
                    phrase is not None
                    and seg[0] <= phrase.start() < seg[1]
                    and negated_near(clause, phrase.start())
                )
                end_cue = ENDING.search(clause[seg[0] : seg[1]])
                if (
                    end_cue
                    and re.search(
                        r"\b(?:for|to|into|in favou?r of)\s+(?:\w+\s+){0,2}$",
                        clause[seg[0] + end_cue.end() : m.start],
                    )
                    and m.start > seg[0] + end_cue.end()
                    and any(o_m.start < m.start and seg[0] <= o_m.start for o_m, _o in objs)
                ):
                    # "ditched funding arb for market making": the second one replaces the first
                    end_cue = None
                if end_cue or neg:
                    out.append(self._candidate(ev, subject, rel, obj, clause, op="end"))
                    ended = True
                else:  # an asset named with a risk (a trader with a strategy) is the claim itself
                    out.append(self._candidate(ev, subject, rel, obj, clause))
                self._last_obj[rel.name] = (subject, obj)
        # scalar relations: values found by kind, the relation by phrase, value word or prototype
        claims: dict[str, tuple[Relation, int, str | None]] = {}
        pvals = [
            v
            for v in percents(clause)
            if v.role in ("new", "plain") and not clause[v.start] == "+" and not _decoy(clause, v)
        ]
        if pvals:  # ("+41%" is a move or a return, never a level)
            for rel, anchor, value in self._percent_relations(ev, clause, typed, pvals):
                claims.setdefault(rel.name, (rel, anchor, value))
        for v in categories(clause):
            if v.relation is None:  # categories() names the relation of every word it finds
                continue
            rel = RELATION_BY_NAME[v.relation]
            seg = _segment(clause, v.start)
            stop = [
                m for m in AFTER_END.finditer(clause[v.end : seg[1]])
            ]  # "the chop in ETH is done"
            if (v.role == "negated" or stop) and rel.name not in claims and rel.value_cues:
                # "BTC's no longer ranging", "the chop in ETH is done": that value stops holding
                subject = self._subject(ev, clause, rel, v.start, typed, local)
                if subject is not None:
                    out.append(self._candidate(ev, subject, rel, v.value, clause, op="end"))
                continue
            if v.role not in ("new", "plain") or rel.name in claims:
                continue
            rx = next(x for r, x in self._phrases if r is rel)
            ph = rx.search(clause)
            if ph is None and not rel.value_cues:
                continue
            if ended and rel.name == "status":
                continue  # "she stopped running the basis trade" ended a strategy, not the trader
            claims[rel.name] = (rel, ph.start() if ph else v.start, None)
        if (
            "regime" not in claims
            and self.values is not None
            and any(t == "asset" for _m, _e, t in typed)
            and not categories(clause, "regime")
        ):
            # no regime word in the clause (a regime word, asserted, negated or ended, is read as
            # such)
            for s0, s1 in _segments(
                clause
            ):  # each comma-separated stretch on its own ("..., and the trend's still up")
                piece = [(m.start - s0, m.end - s0, t) for m, _e, t in typed if s0 <= m.start < s1]
                masked = mask(clause[s0:s1], piece)
                if len(masked.split()) < 2 or NEGATOR.search(masked):
                    continue
                sc = self.values.scores(masked)
                best = max(sc, key=lambda k: sc[k])
                if (
                    best != "_none"
                    and sc[best] >= self.value_threshold
                    and sc[best] - sc["_none"] >= VALUE_MARGIN
                ):
                    anchor = next(m.start for m, _e, t in typed if t == "asset")
                    claims["regime"] = (RELATION_BY_NAME["regime"], anchor, best)
                    self._inferred.add(ev.msg_id)
                    break
        for rel, anchor, fixed in claims.values():
            if rel.name in STATS and THRESHOLD.search(clause):
                continue
            subject = self._subject(ev, clause, rel, anchor, typed, local)
            if subject is None:
                continue
            read = fixed or read_value(rel, clause, anchor)
            if read is None:
                continue
            if rel.name == "max_drawdown" and read.startswith("-"):
                read = read[1:]  # a drawdown is a magnitude: "-18.4%" is 18.4%
            out.append(self._candidate(ev, subject, rel, read, clause))
        return out

    def _percent_relations(self, ev, clause, typed, pvals) -> list[tuple[Relation, int, str]]:
        """(relation, anchor, value) for the clause's percentages: each value goes to the lexicon
        phrase nearest it (one before it preferred); with no phrase, the clause goes to the
        nearest relation prototype if that is a percent relation whose subject the clause can
        supply and it beats every other prototype (the "none" one included)."""
        found = []
        for rel, rx in self._phrases:
            if rel.value == "percent":
                for ph in rx.finditer(clause):
                    found.append((rel, ph.start(), ph.end()))
        if found:
            out: list[tuple[Relation, int, str]] = []
            loose = []
            for v in pvals:

                def dist(p, v=v):
                    return v.start - p[2] if p[2] <= v.start else p[1] - v.end + 8

                seg = _segment(clause, v.start)
                near = [
                    p for p in found if seg[0] <= p[1] < seg[1]
                ]  # "BTC up 3%, fees 0.1%": 3% has no phrase
                if not near and len(pvals) > 1:
                    loose.append(v)
                    continue
                rel, at, _ = min(near or found, key=dist)
                if all(r is not rel for r, _a, _v in out):
                    out.append((rel, at, v.value))
            # a percentage with no phrase of its own ("55% wins, max DD 27%"): its segment by
            # prototype
            for v in loose:
                hit = self._segment_relation(ev, clause, typed, v, {r.name for r, _a, _v in out})
                if hit is not None:
                    out.append(hit)
            return out
        if self.classifier is None:
            return []
        if len(pvals) > 1:  # several percentages, no phrase: each segment on its own
            out = []
            for v in pvals:
                hit = self._segment_relation(ev, clause, typed, v, {r.name for r, _a, _v in out})
                if hit is not None:
                    out.append(hit)
            return out
        types = {t for _m, _e, t in typed}
        if ev.source_type in ("user_turn", "message") and (
            FIRST_PERSON.search(clause) or SECOND_PERSON.search(clause)
        ):
            types.add("person")
        if PRONOUN.search(clause) or not types & set(SUBJECT_TYPES):
            types |= {t for t in SUBJECT_TYPES if t in self._recent}
        labels = tuple(
            r.name for r in RELATION_BY_NAME.values() if r.value == "percent" and r.subject in types
        )
        if not labels:
            return []
        masked = mask(clause, [(m.start, m.end, t) for m, _e, t in typed])
        scores = self.classifier.scores(masked)
        best = max(scores, key=lambda k: scores[k])
        if best not in labels or scores[best] < self.threshold:
            return []
        return [(RELATION_BY_NAME[best], pvals[0].start, pvals[0].value)]

    def _segment_relation(
        self, ev, clause, typed, v, taken: set[str]
    ) -> tuple[Relation, int, str] | None:
        """The percent relation of the segment holding ``v`` by nearest prototype, the clause's
        subject type put before it when the segment names none ("the trader: n% profitable")."""
        if self.classifier is None:
            return None
        s0, s1 = _segment(clause, v.start)
        types = {t for _m, _e, t in typed}
        labels = tuple(
            r.name
            for r in RELATION_BY_NAME.values()
            if r.value == "percent" and r.subject in types and r.name not in taken
        )
        if not labels:
            return None
        piece = [(m.start - s0, m.end - s0, t) for m, _e, t in typed if s0 <= m.start < s1]
        text = mask(clause[s0:s1], piece)
        subjects = [t for t in SUBJECT_TYPES if t in types]
        if not piece and len(subjects) == 1:
            text = f"{'the coin' if subjects[0] == 'asset' else 'the ' + subjects[0]}: {text}"
        scores = self.classifier.scores(text)
        best = max(scores, key=lambda k: scores[k])
        if best not in labels or scores[best] < self.threshold:
            return None
        return RELATION_BY_NAME[best], v.start, v.value

    def _correction(
        self, ev: Event, clause: str, found: list[Candidate], cue: bool = False
    ) -> Candidate | None:
        """ "typo above, it's 0.04% not 0.4%": the value replaces one the same speaker just
        stated."""
        vals = percents(clause) or categories(clause)
        wrong = [v for v in vals if v.role == "negated"]
        right = [v for v in vals if v.role in ("new", "plain")] or [
            v for v in vals if v.role != "negated"
        ]
        cue = cue or bool(CORRECTION.search(clause))
        if not right or not (cue or wrong):
            return None
        if not cue and not any(re.search(r"\bnot\s*$", clause[: w.start]) for w in wrong):
            return None
        if not cue and found and not self._said.get(ev.speaker):
            return None  # "AVAX fee 0.05%? nope, it's 0.06%": nothing of this speaker's to correct
        x, y = right[0], (wrong[0].value if wrong else None)
        same_kind = [c for c in found if c.value == x.value]
        prev = self._said.get(ev.speaker, [])
        target = same_kind[0] if same_kind else None
        if target is None:
            target = next(
                (c for c in reversed(prev) if y is not None and c.value == y), None
            ) or next(
                (
                    c
                    for c in reversed(prev)
                    if x.relation is None
                    and c.value.endswith("%")
                    or x.relation is not None
                    and c.relation == x.relation
                ),
                None,
            )
        if target is not None:
            rel = RELATION_BY_NAME[target.relation]
            return self._candidate(
                ev,
                target.subject_id,
                rel,
                x.value,
                clause,
                op="correct",
                replaces=y if y is not None else (None if same_kind else target.value),
            )
        conf = TRUST_CONFIDENCE.get(ev.trust_tier, 0.5)
        return Candidate(
            "",
            x.relation or "",
            x.value,
            clause[:200],
            (ev.msg_id,),
            conf,
            "shared",
            ev.ts,
            ev.trust_tier,
            "correct",
            y,
            ev.speaker,
        )

    def _subject(self, ev, clause, rel, p0, typed, local) -> str | None:
        if rel.subject == "person":
            people = [eid for m, eid, t in typed if t == "person"]
            if people and THIRD_PERSON.search(clause):  # "marco told me he's going moderate"
                return people[0]
            if SECOND_PERSON.search(clause):
                return self._addressee(ev, clause, typed)
            if ev.source_type in ("user_turn", "message") and FIRST_PERSON.search(clause):
                return f"person:{ev.speaker}"
            return people[0] if people else None
        same = [(abs(m.start - p0), eid) for m, eid, t in typed if t == rel.subject]
        if same:
            return min(same)[1]
        if PRONOUN.search(clause):
            return local.get(rel.subject) or self._recent.get(rel.subject)
        # carry the previous sentence's subject only into a clause that names no subject ("It ...")
        return (
            local.get(rel.subject) if not any(t in SUBJECT_TYPES for _m, _e, t in typed) else None
        )

    def _addressee(self, ev, clause, typed) -> str | None:
        """Who "you"/"your" is: an @mention or a vocative name in the clause, else the event's
        addressee."""
        people = self.detector.people
        for m, eid, t in typed:
            if m.surface.startswith("@"):
                name = m.surface[1:]
                return f"person:{(people.resolve(name) if people else None) or name}"
            if t == "person":
                return eid
        if ev.addressee:
            return f"person:{(people.resolve(ev.addressee) if people else None) or ev.addressee}"
        return None

    def _etype(self, eid: str, m: Mention | None) -> str:
        st = self.canon.entities.get(eid)
        return (
            st.etype
            if st
            else (eid.split(":", 1)[0] if ":" in eid else (m.etype if m else "unknown"))
        )

    def _candidate(
        self,
        ev: Event,
        subject: str,
        rel: Relation,
        value: str,
        clause: str,
        op: str = "assert",
        replaces: str | None = None,
    ) -> Candidate:
        conf = TRUST_CONFIDENCE.get(ev.trust_tier, 0.5) * (0.6 if HEDGE.search(clause) else 1.0)
        if rel.owner_scoped:
            self.canon.resolve_surface(subject.split(":", 1)[1], "person")
        scope = f"user:{subject.split(':', 1)[1]}" if rel.owner_scoped else "shared"
        return Candidate(
            subject,
            rel.name,
            value,
            clause[:200],
            (ev.msg_id,),
            round(conf, 4),
            scope,
            ev.ts,
            ev.trust_tier,
            op,
            replaces,
            ev.speaker,
        )

    # -- chat model -----------------------------------------------------------------------
    def _chat(self, ev: Event, det: Detection) -> list[Candidate]:
        rels = ", ".join(f"{r.name} ({r.subject}: {r.value})" for r in RELATION_BY_NAME.values())
        prompt = [
            {
                "role": "system",
                "content": "Extract durable facts from a financial event. Reply with a JSON list "
                "of "
                '{"subject": ..., "relation": ..., "value": ...}; relations: ' + rels,
            },
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
            self._reject(
                ev,
                None,
                f"reply is not a JSON list ({fixed.error or type(rows).__name__}); "
                "fix the prompt or the model",
            )
            return []
        out = []
        for i, row in enumerate(rows):
            cand = self._validate_row(ev, i, row)
            if cand is not None:
                out.append(cand)
        return out

    def _validate_row(self, ev: Event, i: int, row) -> Candidate | None:
        if not isinstance(row, dict) or not all(
            isinstance(row.get(k), str) for k in ("subject", "relation", "value")
        ):
            self._reject(ev, i, "row needs string fields subject, relation, value")
            return None
        rel = RELATION_BY_NAME.get(row["relation"])
        if rel is None:
            self._reject(
                ev,
                i,
                f"field 'relation' is {row['relation']!r}; use one of {sorted(RELATION_BY_NAME)}",
            )
            return None
        subj_surface = (
            ev.speaker
            if row["subject"].lower() in ("i", "me", "user", ev.speaker.lower())
            else row["subject"]
        )
        subject = self.canon.resolve_surface(subj_surface, rel.subject)
        if subject is None:
            self._reject(ev, i, f"field 'subject' {row['subject']!r} is not a {rel.subject}")
            return None
        if row["value"].lower() not in ev.text.lower() and rel.value != "category":
            self._reject(
                ev, i, f"field 'value' {row['value']!r} is not in the event text (ungrounded)"
            )
            return None
        if rel.value in ("percent", "category"):
            value = read_value(rel, row["value"])
        else:
            value = self.canon.resolve_surface(row["value"], rel.value)
        if value is None:
            self._reject(
                ev, i, f"field 'value' {row['value']!r} is not a valid {rel.value} for {rel.name}"
            )
            return None
        return self._candidate(ev, subject, rel, value, ev.text)

    def _reject(self, ev: Event, i: int | None, reason: str) -> None:
        self.rejects.append({"msg_id": ev.msg_id, "row": i, "reason": reason})
        return None


CANDIDATE_SCHEMA = pa.schema(
    [
        ("subject_id", pa.string()),
        ("relation", pa.string()),
        ("value", pa.string()),
        ("description", pa.string()),
        ("evidence_ids", pa.list_(pa.string())),
        ("confidence", pa.float64()),
        ("scope", pa.string()),
        ("valid_at", pa.timestamp("us", tz="UTC")),
        ("trust_tier", pa.int64()),
        ("op", pa.string()),
        ("replaces", pa.string()),
        ("speaker", pa.string()),
    ]
)


class ExtractKnowledgeConfig(OperatorConfig):
    """``backend``: ``rules`` (a ChatBackend comes in through ``ctx.backends["extract"]``)."""

    backend: str = "rules"


@register
class ExtractKnowledge(Operator):
    """Message table -> candidate facts (one row each), via a :class:`KnowledgeExtractor`.

    Rows are read in table order (the reader keeps discourse state: give them in time
    order). The alias table and detector are the group's
    (:func:`~speakerflow.ops.knowledge.group_state.knowledge_of`: ``ctx.store``'s, loaded once per
    run; without a store the canonicaliser in ``ctx.state["canonicalizer"]``), so a
    pipeline run shares one alias table. A reply's addressee comes from an ``addressee``
    column, else from ``reply_to`` within the table. Model rejects go to
    ``ctx.state["rejects"]``.
    """

    name = "extract_knowledge"
    consumes = ("msg_id", "text", "speaker", "ts")
    produces = CANDIDATE_SCHEMA
    Config = ExtractKnowledgeConfig
    config: ExtractKnowledgeConfig

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        _, canon, detector = knowledge_of(ctx)
        backend = ctx.backends.get("extract", self.config.backend)
        ex = KnowledgeExtractor(canon, detector, backend)
        optional = ("source_type", "trust_tier", "reply_to", "addressee")
        cols = [
            c for c in ("msg_id", "text", "speaker", "ts", *optional) if c in table.column_names
        ]
        rows = []
        given = table.select(cols).to_pylist()
        speaker_of = {r["msg_id"]: r["speaker"] for r in given} if "reply_to" in cols else {}
        for r in given:
            addressee = (
                r["addressee"] if "addressee" in cols else speaker_of.get(r.get("reply_to") or "")
            )
            ev = Event(
                r["msg_id"],
                r["text"] or "",
                r["speaker"],
                r["ts"],
                r.get("source_type") or "message",
                r.get("trust_tier") or 1,
                addressee=addressee,
            )
            for c in ex.extract(ev):
                rows.append({**c.__dict__, "evidence_ids": list(c.evidence_ids)})
        self.stats.model_calls += ex.model_calls
        self.stats.tokens += ex.tokens
        self.stats.rejects += len(ex.rejects)
        ctx.state.setdefault("rejects", []).extend(ex.rejects)
        return pa.Table.from_pylist(rows, schema=CANDIDATE_SCHEMA)

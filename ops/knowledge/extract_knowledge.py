"""Background extraction: candidate knowledge (subject, relation, value) from completed events.

Two backends share one validator (value parsers + entity resolution), both reading only the
domain pack (the detector's :class:`~speakerflow.ops.knowledge.lexicon.Lexicon`):

* ``rules``: a clause-level stream reader (``ops/knowledge/reader.py``). A clause that is not
  a question yields a fact when it holds a value of a relation's type (a number, a category
  word, an entity of the right type, text after the relation's phrase) and a subject of the
  right type (the nearest mention, the previous sentence's subject, or the speaker for
  first-person statements). "from A to B" reads B. Entity values are read here, literal
  values in :mod:`.extract_values`.
* ``chat``: asks a :class:`~speakerflow.ops.backends.base.ChatBackend` for a JSON list of
  ``{"subject", "relation", "value"}`` (:mod:`.extract_chat`).

Confidence starts from the source's trust tier (the pack's ``trust.confidence``) and is
scaled by the pack's ``hedge_factor`` for hedged wording ("rumour", "maybe").
"""

from __future__ import annotations

import re
from dataclasses import replace

import pyarrow as pa

from speakerflow.ops.core.base import Context, Operator, OperatorConfig
from speakerflow.ops.core.registry import register
from speakerflow.ops.knowledge.candidates import CANDIDATE_SCHEMA, Candidate, Event
from speakerflow.ops.knowledge.canonicalize import Canonicalizer
from speakerflow.ops.knowledge.detect import Detection, Detector, Mention
from speakerflow.ops.knowledge.domain.schema import PERSON
from speakerflow.ops.knowledge.extract_chat import chat_extract
from speakerflow.ops.knowledge.extract_values import ValueClaims, segment
from speakerflow.ops.knowledge.group_state import knowledge_of
from speakerflow.ops.knowledge.lexicon import Relation
from speakerflow.ops.knowledge.reader import (
    CORRECTION,
    ENDING,
    FIRST_PERSON,
    HEDGE,
    PRONOUN,
    QUESTION,
    RELATION_THRESHOLD,
    SECOND_PERSON,
    THIRD_PERSON,
    VALUE_THRESHOLD,
    clauses,
    patterns,
    relation_classifier,
    value_classifier,
)
from speakerflow.ops.knowledge.values import categories, negated_near

__all__ = ["CANDIDATE_SCHEMA", "Candidate", "Event", "ExtractKnowledge", "KnowledgeExtractor"]
#: "dropped the old approach for a new one": what follows an ending names the replacement
_FOR = re.compile(r"\b(?:for|to|into|in favou?r of)\s+(?:\w+\s+){0,2}$")


class KnowledgeExtractor(ValueClaims):
    """Extract :class:`Candidate` facts from events; ``backend`` is ``"rules"`` or a ChatBackend.

    The rules backend is a stream reader: it remembers the last subject of each type (for
    "she", "it"), the last entity-valued claim (for "that exposure is gone") and each
    speaker's last statements (for "typo above, it's 0.04% not 0.4%"). ``classifier`` is the
    nearest-prototype relation classifier (:func:`ops.knowledge.reader.relation_classifier`
    of the detector's pack by default; ``None`` turns it off: phrases and value words only);
    ``values``: the category relations read by example statements when no value word is
    there (default: every relation of the pack with ``value_examples``; ``None``: none).
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
        self.lex = lex = detector.lexicon
        self.patterns = patterns(lex)
        self.backend = backend
        self.rejects: list[dict] = []
        self.model_calls = 0
        self.tokens = 0
        self.classifier = relation_classifier(lex=lex) if classifier == "default" else classifier
        if values == "default":
            values = (
                {n: c for n in lex.value_examples if (c := value_classifier(n, lex=lex))}
                if classifier == "default"
                else None
            )
        self.values = dict(values or {})
        self.value_threshold = VALUE_THRESHOLD
        self.threshold = RELATION_THRESHOLD if threshold is None else threshold
        rels = sorted(lex.relations, key=lambda r: -max((len(p) for p in r.phrases), default=0))
        self._phrases = [
            (
                r,
                re.compile(
                    r"\b(" + "|".join(re.escape(p) for p in r.phrases) + r")\b", re.IGNORECASE
                ),
            )
            for r in rels
            if r.phrases
        ]
        pairs = [(r.subject, r.object) for r in lex.relations if not r.literal]
        #: entity relations the object's type alone cannot name (two relations share the pair
        #: of types, or subject and object are of one type): they need their phrase
        self._phrase_bound = frozenset(
            r.name
            for r in lex.relations
            if not r.literal and (r.subject == r.object or pairs.count((r.subject, r.object)) > 1)
        )
        self._subject_types = frozenset(lex.subject_types)
        self._recent: dict[str, str] = {}
        self._last_obj: dict[str, tuple[str, str]] = {}
        self._said: dict[str, list[Candidate]] = {}
        #: (event, relation) whose value the classifier read (no value word)
        self._inferred: set[tuple[str, str]] = set()

    def extract(self, event: Event, detection: Detection | None = None) -> list[Candidate]:
        """Candidate facts in ``event`` (detected entities are canonicalised on the way). The
        pack's ``trust.sources`` cap the event's trust: a source or source type listed there is
        believed no more than its tier."""
        cap = self.lex.source_tiers
        tier = max(event.trust_tier, cap.get(event.speaker, 0), cap.get(event.source_type, 0))
        if tier != event.trust_tier:
            event = replace(event, trust_tier=tier)
        if self.backend == "rules":
            return self._rules(event)
        return chat_extract(self, event)

    # -- rules ----------------------------------------------------------------------------
    def _rules(self, ev: Event) -> list[Candidate]:
        out: list[Candidate] = []
        local: dict[str, str] = {}
        # "CORRECTION: ... Correct value 0.08%." spans clauses
        cue = bool(CORRECTION.search(ev.text))
        for clause in clauses(ev.text):
            if QUESTION.search(clause):
                continue
            typed = []
            second = bool(SECOND_PERSON.search(clause))
            for m in self.detector.detect(clause).mentions:
                if second and m.surface.startswith("@"):
                    # "@omar your cap ...": the addressee, a person
                    people = self.detector.people
                    name = (people.resolve(m.surface) if people else None) or m.surface[1:]
                    typed.append((m, f"person:{name}", PERSON))
                    continue
                eid = self.canon.resolve(m)
                if eid:
                    typed.append((m, eid, self._etype(eid, m)))
            ended: list[tuple[int, int]] = []
            found = self._entity_claims(ev, clause, typed, local, ended)
            found += self._literal_claims(ev, clause, typed, local, ended)
            fix = self._correction(ev, clause, found, cue)
            out += [fix] if fix is not None else found
            for _m, eid, t in typed:
                if t in self._subject_types:
                    local[t] = eid
                    self._recent[t] = eid
            for c in found:
                st = self._etype(c.subject_id, None)
                if st in self._subject_types:
                    local[st] = c.subject_id
                    self._recent[st] = c.subject_id
        for msg, name in [k for k in self._inferred if k[0] == ev.msg_id]:
            # a value word elsewhere in the event beats a value read without one
            self._inferred.discard((msg, name))
            worded = {
                c.subject_id
                for c in out
                if c.relation == name
                and c.op == "assert"
                and categories(c.description, name, self.lex)
            }
            out = [
                c
                for c in out
                if not (
                    c.relation == name
                    and c.subject_id in worded
                    and not categories(c.description, name, self.lex)
                )
            ]
        seen: set[tuple] = set()
        kept = []
        for c in out:
            if (k := (c.subject_id, c.relation, c.value, c.op)) not in seen:
                seen.add(k)
                kept.append(c)
        setting = {(c.subject_id, c.relation) for c in kept if c.op != "end"}
        out = [
            c
            for c in kept
            if not (
                c.op == "end"
                and c.slot(self.lex) == (c.subject_id, c.relation)
                and c.slot(self.lex) in setting
            )
        ]
        said = [c for c in out if c.op != "end"]
        if said:
            self._said[ev.speaker] = (self._said.get(ev.speaker, []) + said)[-8:]
        return out

    def _entity_claims(
        self, ev: Event, clause: str, typed: list, local: dict, ended: list
    ) -> list[Candidate]:
        """Entity-valued facts: the object's type names the relation (its phrase, where the
        types are shared); an ending or a "not" in the object's segment ends the value. Each
        value ended puts the span of its ending word in ``ended`` ((-1, -1): a "not")."""
        out: list[Candidate] = []
        ending = ENDING.search(clause)
        for rel in (r for r in self.lex.relations if not r.literal):
            rx = self._phrase_of(rel)
            phrase = rx.search(clause) if rx is not None else None
            bound = rel.name in self._phrase_bound
            if bound and phrase is None:
                continue
            after = phrase.end() if bound and phrase is not None else 0
            objs = [(m, eid) for m, eid, t in typed if t == rel.object and m.start >= after]
            if not objs and rel.object == PERSON and phrase is not None:
                objs = self._people_said(ev, clause, typed, phrase)
            if rel.single:  # one value at a time: the first object named is the value
                objs = objs[:1]
            if not objs:
                ana = self.patterns.anaphor.search(clause) if self.patterns.anaphor else None
                if (
                    (ending or (phrase and negated_near(clause, phrase.start())))
                    and ana
                    and self.lex.anaphor_relation.get(ana.group(1).lower()) == rel.name
                    and rel.name in self._last_obj
                ):
                    subj, obj = self._last_obj[rel.name]
                    out.append(self.candidate(ev, subj, rel, obj, clause, op="end"))
                    ended.append(ending.span() if ending else (-1, -1))
                continue
            at = phrase.start() if bound and phrase is not None else objs[0][0].start
            subject = self._subject(ev, clause, rel, at, typed, local, before=at if bound else None)
            explicit = (
                any(t == rel.subject for _m, _e, t in typed)
                or THIRD_PERSON.search(clause)
                or not any(t in self._subject_types for _m, _e, t in typed)
                and local.get(rel.subject)
            )
            if subject is None or not explicit:
                continue
            for m, obj in objs:
                # an ending or a "not" reaches the objects of its own segment
                seg = segment(clause, m.start)
                neg = negated_near(clause, m.start) or (
                    phrase is not None
                    and seg[0] <= phrase.start() < seg[1]
                    and negated_near(clause, phrase.start())
                )
                end_cue = ENDING.search(clause[seg[0] : seg[1]])
                if (
                    end_cue
                    and _FOR.search(clause[seg[0] + end_cue.end() : m.start])
                    and m.start > seg[0] + end_cue.end()
                    and any(o_m.start < m.start and seg[0] <= o_m.start for o_m, _o in objs)
                ):
                    # "dropped X for Y": the second one replaces the first
                    end_cue = None
                if end_cue or neg:
                    out.append(self.candidate(ev, subject, rel, obj, clause, op="end"))
                    if end_cue:
                        ended.append((seg[0] + end_cue.start(), seg[0] + end_cue.end()))
                    else:
                        ended.append(ending.span() if ending else (-1, -1))
                else:  # an asset named with a risk (a trader with a strategy) is the claim itself
                    out.append(self.candidate(ev, subject, rel, obj, clause))
                self._last_obj[rel.name] = (subject, obj)
        return out

    def _people_said(self, ev, clause, typed, phrase) -> list:
        """The person a person-valued relation names by a pronoun: "I" (the speaker of a
        person's own turn) or "you" (the person addressed)."""
        spot = Mention(phrase.group(), PERSON, phrase.start(), phrase.end())
        if SECOND_PERSON.search(clause):
            who = self._addressee(ev, clause, typed)
            return [(spot, who)] if who else []
        if ev.source_type in ("user_turn", "message") and FIRST_PERSON.search(clause):
            return [(spot, f"person:{ev.speaker}")]
        return []

    def _subject(self, ev, clause, rel, p0, typed, local, before=None) -> str | None:
        if rel.subject == PERSON:
            people = [eid for m, eid, t in typed if t == PERSON]
            if people and THIRD_PERSON.search(clause):  # "marco told me he's going moderate"
                return people[0]
            if SECOND_PERSON.search(clause):
                return self._addressee(ev, clause, typed)
            if ev.source_type in ("user_turn", "message") and FIRST_PERSON.search(clause):
                return f"person:{ev.speaker}"
            return people[0] if people else None
        same = [
            (abs(m.start - p0), eid)
            for m, eid, t in typed
            if t == rel.subject and (before is None or m.start < before)
        ]
        if same:
            return min(same)[1]
        if PRONOUN.search(clause):
            return local.get(rel.subject) or self._recent.get(rel.subject)
        # carry the previous sentence's subject only into a clause that names no subject ("It
        # ..."; for a relation between two entities of one type, none before its phrase)
        if any(
            t in self._subject_types and (before is None or m.start < before) for m, _e, t in typed
        ):
            return None
        return local.get(rel.subject)

    def _addressee(self, ev, clause, typed) -> str | None:
        """Who "you"/"your" is: an @mention or a vocative name in the clause, else the event's
        addressee."""
        people = self.detector.people
        for m, eid, t in typed:
            if m.surface.startswith("@"):
                name = m.surface[1:]
                return f"person:{(people.resolve(name) if people else None) or name}"
            if t == PERSON:
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

    def candidate(
        self,
        ev: Event,
        subject: str,
        rel: Relation,
        value: str,
        clause: str,
        op: str = "assert",
        replaces: str | None = None,
    ) -> Candidate:
        """A candidate of ``rel``: confidence from the trust tier (hedged words scale it),
        scope private to the subject for a private relation."""
        hedge = self.lex.hedge_factor if HEDGE.search(clause) else 1.0
        conf = self.lex.trust_confidence.get(ev.trust_tier, 0.5) * hedge
        if rel.owner_scoped:
            self.canon.resolve_surface(subject.split(":", 1)[1], PERSON)
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


class ExtractKnowledgeConfig(OperatorConfig):
    """``backend``: ``rules`` (a ChatBackend comes in through ``ctx.backends["extract"]``)."""

    backend: str = "rules"


@register
class ExtractKnowledge(Operator):
    """Message table -> candidate facts (one row each), via a :class:`KnowledgeExtractor`.

    Rows are read in table order (the reader keeps discourse state: give them in time
    order). The alias table, detector and domain pack are the group's
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

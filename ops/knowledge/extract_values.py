"""Literal-valued claims of a clause (numbers, category words, free text) and corrections: the
part of :class:`~speakerflow.ops.knowledge.extract_knowledge.KnowledgeExtractor` that reads
values, written as a mixin so that each module keeps one job.

A number goes to the pack phrase nearest it (one before it preferred; a phrase of its own
segment first: "X up 3%, fees 0.1%"); with no phrase, to the nearest relation prototype if
that is a relation of the number's type whose subject the clause can supply. A category word
names its relation when the pack says its values do (``named_by_values``), else it needs a
phrase. A category said without its word is read by the value's example statements (k nearest,
centred, a margin over ``_none``). Corrections ("typo above, it's 0.04% not 0.4%") replace a
value the same speaker stated.
"""

from __future__ import annotations

import re
from typing import Any

from speakerflow.ops.knowledge.candidates import Candidate, Event
from speakerflow.ops.knowledge.domain.schema import PERSON
from speakerflow.ops.knowledge.lexicon import Relation
from speakerflow.ops.knowledge.reader import (
    CORRECTION,
    FIRST_PERSON,
    NEGATOR,
    PRONOUN,
    SECOND_PERSON,
    VALUE_MARGIN,
    mask,
)
from speakerflow.ops.knowledge.values import NUMBERS, Value, categories, read_value

#: an ending said after the value it ends ("the chop in X is done", "that phase is over")
AFTER_END = re.compile(
    r"\b(is|are|'s|was)?\s*(done|over|finished|behind us|gone|ended|dead|no more)\b", re.IGNORECASE
)
_CUT = r",|—|–|\s-\s|\|"


def segment(clause: str, at: int) -> tuple[int, int]:
    """The comma/dash-separated stretch of ``clause`` around position ``at``."""
    starts = [0] + [m.end() for m in re.finditer(_CUT, clause) if m.end() <= at]
    ends = [m.start() for m in re.finditer(_CUT, clause) if m.start() >= at] + [len(clause)]
    return max(starts), min(ends)


def segments(clause: str) -> list[tuple[int, int]]:
    cuts = [m for m in re.finditer(_CUT + r"|\band\b", clause)]
    edges = [0] + [m.end() for m in cuts]
    ends = [m.start() for m in cuts] + [len(clause)]
    return [(a, b) for a, b in zip(edges, ends, strict=True) if b > a]


Claim = tuple[Relation, int, str | None]
#: what stands between the members of a list of entities ("a, b and c", "a & b", "a/b")
_LIST_GAP = re.compile(r"^[\s,&/]*(?:\b(?:and|or)\b)?[\s,&/]*$", re.IGNORECASE)


def listed(clause: str, typed: list, etype: str, subject: str) -> list[str]:
    """``subject`` and the entities of its type listed with it ("a, b and c are up"): a value
    said of a list holds for each member."""
    same = sorted((m.start, m.end, eid) for m, eid, t in typed if t == etype)
    at = next((i for i, (_s, _e, eid) in enumerate(same) if eid == subject), None)
    if at is None:
        return [subject]
    lo = hi = at
    while lo > 0 and _LIST_GAP.match(clause[same[lo - 1][1] : same[lo][0]]):
        lo -= 1
    while hi + 1 < len(same) and _LIST_GAP.match(clause[same[hi][1] : same[hi + 1][0]]):
        hi += 1
    return list(dict.fromkeys(eid for _s, _e, eid in same[lo : hi + 1]))


class ValueClaims:
    """Mixin: needs ``lex``, ``patterns``, ``classifier``, ``threshold``, ``values``,
    ``value_threshold``, ``_phrases``, ``_said``, ``_inferred``, ``_subject`` and
    ``candidate`` (see :class:`~.extract_knowledge.KnowledgeExtractor`)."""

    lex: Any
    patterns: Any
    classifier: Any
    threshold: float
    values: dict[str, Any]
    value_threshold: float
    _phrases: list
    _said: dict[str, list[Candidate]]
    _inferred: set[tuple[str, str]]
    _recent: dict[str, str]
    _subject: Any
    candidate: Any

    def _phrase_of(self, rel: Relation) -> re.Pattern | None:
        return next((x for r, x in self._phrases if r is rel), None)

    def _literal_claims(
        self, ev: Event, clause: str, typed: list, local: dict, ended: list
    ) -> list[Candidate]:
        out: list[Candidate] = []
        claims: dict[str, Claim] = {}
        decoy = self.patterns.decoy
        for vtype, parse in NUMBERS.items():
            if vtype not in self.lex.number_types:
                continue
            nums = [
                v
                for v in parse(clause)
                if v.role in ("new", "plain")
                and clause[v.start] != "+"  # "+41%" is a move or a return, never a level
                and not (decoy is not None and self._decoy(clause, v, decoy))
            ]
            if nums:
                for rel, anchor, value in self._number_relations(ev, clause, typed, nums, vtype):
                    claims.setdefault(rel.name, (rel, anchor, value))
        subjects = {t for _m, _e, t in typed}
        if ev.source_type in ("user_turn", "message") and FIRST_PERSON.search(clause):
            subjects.add(PERSON)
        for v in categories(clause, lex=self.lex, subjects=subjects):
            rel = self.lex.relation_by_name[v.relation]
            seg = segment(clause, v.start)
            stop = list(AFTER_END.finditer(clause[v.end : seg[1]]))  # "the chop in X is done"
            if (v.role == "negated" or stop) and rel.name not in claims and rel.value_cues:
                # "X's no longer choppy", "the chop in X is done": that value stops holding
                subject = self._subject(ev, clause, rel, v.start, typed, local)
                if subject is not None:
                    out.append(self.candidate(ev, subject, rel, v.value, clause, op="end"))
                continue
            if v.role not in ("new", "plain") or rel.name in claims:
                continue
            rx = self._phrase_of(rel)
            ph = rx.search(clause) if rx is not None else None
            if ph is None and not rel.value_cues:
                continue
            if any(s <= v.start and v.end <= e for s, e in ended) or (
                ended and rel.quiet_on_endings
            ):
                continue  # "she stopped running X": the word is that ending's
            claims[rel.name] = (rel, ph.start() if ph else v.start, None)
        for rel in self.lex.text_relations:
            rx = self._phrase_of(rel)
            ph = rx.search(clause) if rx is not None else None
            if ph is not None and rel.name not in claims:
                claims[rel.name] = (rel, ph.end(), None)
        self._value_words_unsaid(ev, clause, typed, claims)
        for rel, anchor, fixed in claims.values():
            if rel.statistic and self.patterns.threshold.search(clause):
                continue
            subject = self._subject(ev, clause, rel, anchor, typed, local)
            if subject is None:
                continue
            read = fixed or read_value(rel, clause, anchor, self.lex)
            if read is None:
                continue
            if rel.magnitude and read.startswith("-"):
                read = read[1:]  # a magnitude: a "-18.4%" drawdown is 18.4%
            for s in listed(clause, typed, rel.subject, subject):
                out.append(self.candidate(ev, s, rel, read, clause))
        return out

    @staticmethod
    def _decoy(clause: str, v: Value, decoy: re.Pattern) -> bool:
        """A number whose own segment names a return, yield, spread, move ... (pack decoys)."""
        s0, s1 = segment(clause, v.start)
        return bool(decoy.search(clause[max(s0, v.start - 30) : min(s1, v.end + 20)]))

    def _value_words_unsaid(self, ev: Event, clause: str, typed: list, claims: dict) -> None:
        """A category value said without its word ("grinding higher all week"), per segment, by
        the value's example statements; a value word elsewhere in the event beats it."""
        for name, clf in self.values.items():
            rel = self.lex.relation_by_name[name]
            if (
                name in claims
                or not any(t == rel.subject for _m, _e, t in typed)
                or categories(clause, name, self.lex)
            ):
                continue  # a value word, asserted, negated or ended, is read as such
            for s0, s1 in segments(clause):  # each stretch ("..., and the trend's still up")
                piece = [(m.start - s0, m.end - s0, t) for m, _e, t in typed if s0 <= m.start < s1]
                masked = mask(clause[s0:s1], piece, self.lex)
                if len(masked.split()) < 2 or NEGATOR.search(masked):
                    continue
                sc = clf.scores(masked)
                best = max(sc, key=lambda k: sc[k])
                if (
                    best != "_none"
                    and sc[best] >= self.value_threshold
                    and sc[best] - sc.get("_none", 0.0) >= VALUE_MARGIN
                ):
                    anchor = next(m.start for m, _e, t in typed if t == rel.subject)
                    claims[name] = (rel, anchor, best)
                    self._inferred.add((ev.msg_id, name))
                    break

    def _number_relations(self, ev, clause, typed, nums, vtype) -> list[tuple[Relation, int, str]]:
        """(relation, anchor, value) for the clause's numbers of type ``vtype``: each value goes
        to the phrase nearest it (one before it preferred); with no phrase, the clause goes to
        the nearest relation prototype if that is a relation of the type whose subject the
        clause can supply and it beats every other prototype (the "none" one included)."""
        found = []
        for rel, rx in self._phrases:
            if rel.value == vtype:
                for ph in rx.finditer(clause):
                    found.append((rel, ph.start(), ph.end()))
        if found:
            out: list[tuple[Relation, int, str]] = []
            loose = []
            for v in nums:

                def dist(p, v=v):
                    return v.start - p[2] if p[2] <= v.start else p[1] - v.end + 8

                seg = segment(clause, v.start)
                near = [p for p in found if seg[0] <= p[1] < seg[1]]  # a phrase of its own
                if not near and len(nums) > 1:
                    loose.append(v)
                    continue
                rel, at, _ = min(near or found, key=dist)
                if all(r is not rel for r, _a, _v in out):
                    out.append((rel, at, v.value))
            # a number with no phrase of its own ("55% wins, max DD 27%"): its segment by
            # prototype
            for v in loose:
                hit = self._segment_relation(clause, typed, v, {r.name for r, _a, _v in out}, vtype)
                if hit is not None:
                    out.append(hit)
            return out
        if self.classifier is None:
            return []
        if len(nums) > 1:  # several numbers, no phrase: each segment on its own
            out = []
            for v in nums:
                hit = self._segment_relation(clause, typed, v, {r.name for r, _a, _v in out}, vtype)
                if hit is not None:
                    out.append(hit)
            return out
        types = {t for _m, _e, t in typed}
        if ev.source_type in ("user_turn", "message") and (
            FIRST_PERSON.search(clause) or SECOND_PERSON.search(clause)
        ):
            types.add(PERSON)
        if PRONOUN.search(clause) or not types & set(self.lex.subject_types):
            types |= {t for t in self.lex.subject_types if t in self._recent}
        labels = tuple(
            r.name for r in self.lex.relations if r.value == vtype and r.subject in types
        )
        if not labels:
            return []
        masked = mask(clause, [(m.start, m.end, t) for m, _e, t in typed], self.lex)
        scores = self.classifier.scores(masked)
        best = max(scores, key=lambda k: scores[k])
        if best not in labels or scores[best] < self.threshold:
            return []
        return [(self.lex.relation_by_name[best], nums[0].start, nums[0].value)]

    def _segment_relation(self, clause, typed, v, taken: set[str], vtype: str):
        """The relation of the segment holding number ``v`` by nearest prototype, the clause's
        subject type put before it when the segment names none ("the trader: n% profitable")."""
        if self.classifier is None:
            return None
        s0, s1 = segment(clause, v.start)
        types = {t for _m, _e, t in typed}
        labels = tuple(
            r.name
            for r in self.lex.relations
            if r.value == vtype and r.subject in types and r.name not in taken
        )
        if not labels:
            return None
        piece = [(m.start - s0, m.end - s0, t) for m, _e, t in typed if s0 <= m.start < s1]
        text = mask(clause[s0:s1], piece, self.lex)
        subjects = [t for t in self.lex.subject_types if t in types]
        if not piece and len(subjects) == 1:
            text = f"{self.lex.masks.get(subjects[0], 'the ' + subjects[0])}: {text}"
        scores = self.classifier.scores(text)
        best = max(scores, key=lambda k: scores[k])
        if best not in labels or scores[best] < self.threshold:
            return None
        return self.lex.relation_by_name[best], v.start, v.value

    def _correction(
        self, ev: Event, clause: str, found: list[Candidate], cue: bool = False
    ) -> Candidate | None:
        """ "typo above, it's 0.04% not 0.4%": the value replaces one the same speaker just
        stated."""
        vals: list[Value] = []
        for vtype, parse in NUMBERS.items():
            if vtype in self.lex.number_types and not vals:
                vals = parse(clause)
        vals = vals or categories(clause, lex=self.lex)
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
            return None  # "X fee 0.05%? nope, it's 0.06%": nothing of this speaker's to correct
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
                    and _same_unit(c.value, x.value)
                    or x.relation is not None
                    and c.relation == x.relation
                ),
                None,
            )
        if target is not None:
            rel = self.lex.relation_by_name[target.relation]
            return self.candidate(
                ev,
                target.subject_id,
                rel,
                x.value,
                clause,
                op="correct",
                replaces=y if y is not None else (None if same_kind else target.value),
            )
        conf = self.lex.trust_confidence.get(ev.trust_tier, 0.5)
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


def _same_unit(a: str, b: str) -> bool:
    """Two normalised numbers of one kind ("0.4%" and "0.04%", "300ms" and "30ms")."""
    return re.sub(r"[\d.+-]", "", a) == re.sub(r"[\d.+-]", "", b)

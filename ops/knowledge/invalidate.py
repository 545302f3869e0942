"""Invalidate: the fact write (``upsert_facts``) with slot-scoped contradiction detection
and write-time invalidation, as a function and as the :class:`Invalidate` operator.

``upsert_facts`` writes facts into a group's fact graph; ``speakerflow.ops.write.upsert.Upsert``
writes SpeakerMem records. The two names no longer overlap.

For each candidate fact, only the facts of the **same slot** are examined: (subject,
relation) for single-valued relations, (subject, relation, object) for entity-valued ones,
and for a person's facts (owner, matter). Never the whole group.

* same value already valid -> that fact is *validated* (validations + 1, last-validated,
  evidence appended), no new fact;
* different value -> a new fact is added; with invalidation on, every valid fact of the slot
  whose contradiction score ``Gamma(new, old) = confidence(new)`` (0 when the new evidence is
  older) exceeds ``delta`` gets ``invalid_at = valid_at(new)``, ``expired_at = now``, maturity
  ``deprecated`` and a SUPERSEDES link from the new fact. The old fact is kept.

A first-tier source (trust tier 1) counts as one validation, so its facts start verified.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from speakerflow.graphs.facts import VALUE_PREFIX, FactGraph, FactItem, edge_id_for
from speakerflow.ops.core.base import Context, Operator, OperatorConfig
from speakerflow.ops.core.registry import register
from speakerflow.ops.knowledge.decay import next_maturity
from speakerflow.ops.knowledge.extract_knowledge import CANDIDATE_SCHEMA, Candidate
from speakerflow.ops.knowledge.group_state import knowledge_of, now_of
from speakerflow.ops.knowledge.lexicon import Lexicon, lexicon_for
from speakerflow.schemas import EDGE_SCHEMA

#: What :class:`Invalidate` produces: the facts a call added or changed (validated,
#: invalidated), as :data:`~speakerflow.schemas.EDGE_SCHEMA` rows plus ``superseded_by``.
FACT_SCHEMA = EDGE_SCHEMA.append(pa.field("superseded_by", pa.string()))


class UpsertConfig(BaseModel):
    """``invalidation``: write-time invalidation on (InKH) or off (KH-NoInv); ``delta``: Gamma
    threshold."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    invalidation: bool = True
    delta: float = 0.55


@dataclass
class UpsertResult:
    """Counts of one :func:`upsert_facts` call; ``touched``: ids of the facts it added or
    changed."""

    added: int = 0
    validated: int = 0
    invalidated: int = 0
    kept_conflicts: int = 0
    touched: list[str] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict[str, int]:
        return {
            "added": self.added,
            "validated": self.validated,
            "invalidated": self.invalidated,
            "kept_conflicts": self.kept_conflicts,
        }


def object_of(c: Candidate, lex: Lexicon | None = None) -> str:
    rel = (lex or lexicon_for()).relation_by_name.get(c.relation)
    literal = rel is None or rel.literal
    return VALUE_PREFIX + c.value if literal else c.value


def slot_facts(fg: FactGraph, item: FactItem, lex: Lexicon) -> list[FactItem]:
    """The current facts ``item`` may contradict: its slot's, or every value of the subject's
    relation when the relation holds one entity at a time (a team's on-call person)."""
    if item.relation not in lex.single_entity:
        return fg.current(item.slot)
    return [
        k
        for f in fg.by_entity.get(item.subject_id, ())
        if (k := fg.items[f]).subject_id == item.subject_id
        and k.relation == item.relation
        and k.invalid_at is None
    ]


def current_regime(fg: FactGraph, entity_id: str, lex: Lexicon | None = None) -> str | None:
    """The newest valid value of the pack's state relation for an entity (its state M_t)."""
    return fg.regime(entity_id, relation=(lex or lexicon_for()).state_relation)


def upsert_facts(
    fg: FactGraph,
    candidates: list[Candidate],
    now: datetime,
    cfg: UpsertConfig | None = None,
    lex: Lexicon | None = None,
) -> UpsertResult:
    """Apply ``candidates`` to ``fg`` (cache now; Kuzu on ``fg.flush()``).

    * ``assert``: a value already current from a source of the same standing (first-hand:
      trust tier 1-2; rumour: tier 3) is *validated*; otherwise a new fact is added and
      invalidates the slot's values it contradicts (Gamma > delta). A first-hand source
      stating a value first heard as a rumour is a new fact with its own tier, time and
      evidence, which supersedes the rumour and the old value. A rumour repeating a
      first-hand value validates nothing.
    * ``end``: every current fact of the slot with Gamma > delta becomes invalid at the
      candidate's time; nothing is added ("that exposure is gone").
    * ``correct``: the value ``replaces`` that the same speaker stated last is retracted
      (``invalid_at = valid_at``: it never held) and the corrected value holds from the
      wrong statement's time, resting on the correction event.

    ``lex``: the domain pack of the candidates (default: the default pack).
    """
    cfg = cfg or UpsertConfig()
    lex = lex or lexicon_for()
    res = UpsertResult()
    for c in candidates:
        for m in c.evidence_ids:
            fg.note_message(m, c.valid_at, c.speaker)
        if c.op == "end":
            _end(fg, c, now, cfg, res, lex)
            continue
        if c.op == "correct":
            if _correct(fg, c, now, cfg, res, lex):
                continue
            if not c.subject_id or not c.relation:
                continue
        obj = object_of(c, lex)
        probe = FactItem(
            "", fg.group_id, c.subject_id, c.relation, obj, "", [], c.valid_at, now, now
        )
        valid = slot_facts(fg, probe, lex)
        same = [i for i in valid if i.object_id == obj]
        rumour = c.trust_tier >= 3
        if rumour and any(i.trust_tier < 3 for i in same):
            continue  # a rumour repeating first-hand knowledge validates nothing
        peers = [i for i in same if (i.trust_tier >= 3) == rumour]
        if peers:
            _validate(fg, peers[-1], c, now)
            res.validated += 1
            res.touched.append(peers[-1].edge_id)
            continue
        item = _new_item(fg, c, obj, now, lex)
        if not fg.add(item):
            continue
        res.added += 1
        res.touched.append(item.edge_id)
        for old in valid:
            gamma = c.confidence if c.valid_at >= old.valid_at else 0.0
            if old.object_id == obj and old.trust_tier >= 3 and not rumour:
                gamma = 1.0  # a better source confirms a rumour: the rumour's fact is superseded
            if cfg.invalidation and gamma > cfg.delta:
                old.maturity = "deprecated"
                fg.invalidate(old.edge_id, at=c.valid_at, by=item.edge_id, now=now)
                res.invalidated += 1
                res.touched.append(old.edge_id)
            else:
                res.kept_conflicts += 1
    return res


def _end(
    fg: FactGraph, c: Candidate, now: datetime, cfg: UpsertConfig, res: UpsertResult, lex: Lexicon
) -> None:
    obj = object_of(c, lex)
    probe = FactItem("", fg.group_id, c.subject_id, c.relation, obj, "", [], c.valid_at, now, now)
    for old in fg.current(probe.slot):
        if old.object_id != obj:  # "no longer ranging" ends ranging, not another value of the slot
            continue
        gamma = c.confidence if c.valid_at >= old.valid_at else 0.0
        if cfg.invalidation and gamma > cfg.delta:
            old.maturity = "deprecated"
            fg.invalidate(old.edge_id, at=c.valid_at, by=None, now=now)
            res.invalidated += 1
            res.touched.append(old.edge_id)
        else:
            res.kept_conflicts += 1


def _correct(
    fg: FactGraph, c: Candidate, now: datetime, cfg: UpsertConfig, res: UpsertResult, lex: Lexicon
) -> bool:
    """Retract the value the same speaker stated last (``c.replaces``) and put ``c.value`` in its
    place; False when no such statement is found (the candidate is then read as a plain claim)."""
    wrong = None
    for item in sorted(fg.items.values(), key=lambda i: i.valid_at, reverse=True):
        if (
            item.invalid_at is not None
            or item.valid_at > c.valid_at
            or item.edge_id.startswith("rec_")
        ):
            continue
        if c.subject_id and (item.subject_id, item.relation) != (c.subject_id, c.relation):
            continue
        if not c.subject_id and c.relation and item.relation != c.relation:
            continue
        if c.replaces is not None and item.value != c.replaces:
            continue
        if c.replaces is None and (
            item.value == c.value or item.value.endswith("%") != c.value.endswith("%")
        ):
            continue
        speakers = {fg.msg_meta[m][1] for m in item.evidence_ids if m in fg.msg_meta}
        if c.speaker in speakers:
            wrong = item
            break
    if wrong is None:
        return False
    rel = lex.relation_by_name.get(wrong.relation)
    fixed = Candidate(
        wrong.subject_id,
        wrong.relation,
        c.value,
        c.description,
        c.evidence_ids,
        c.confidence,
        wrong.scope if rel is None or rel.owner_scoped else c.scope,
        wrong.valid_at,
        c.trust_tier,
        "assert",
        None,
        c.speaker,
    )
    obj = object_of(fixed, lex)
    item = _new_item(fg, fixed, obj, now, lex)
    if not fg.add(item):
        return True
    res.added += 1
    wrong.maturity = "deprecated"
    fg.invalidate(wrong.edge_id, at=wrong.valid_at, by=item.edge_id, now=now)
    res.invalidated += 1
    res.touched += [item.edge_id, wrong.edge_id]
    return True


def _validate(fg: FactGraph, item: FactItem, c: Candidate, now: datetime) -> None:
    if c.evidence_ids[0] in item.evidence_ids:
        return
    if item.maturity == "deprecated" and item.invalid_at is None:
        item.maturity = "candidate"  # deprecated by the staleness sweep: fresh evidence revives it
    item.evidence_ids = [*item.evidence_ids, *c.evidence_ids]
    item.validations += 1
    item.last_validated = max(item.last_validated or item.valid_at, c.valid_at)
    item.confidence = max(item.confidence, c.confidence)
    item.updated_at = now
    item.maturity = next_maturity(item.maturity, item.reuse_count, item.validations, item.utility)
    fg.touch(item.edge_id)


def _new_item(fg: FactGraph, c: Candidate, obj: str, now: datetime, lex: Lexicon) -> FactItem:
    validations = 1 if c.trust_tier == 1 else 0
    state = lex.state_relation
    regime = fg.regime(c.subject_id, c.valid_at, state) if c.relation != state else c.value
    return FactItem(
        edge_id=edge_id_for(fg.group_id, c.subject_id, c.relation, obj, c.evidence_ids[0]),
        group_id=fg.group_id,
        subject_id=c.subject_id,
        relation=c.relation,
        object_id=obj,
        description=c.description,
        evidence_ids=list(c.evidence_ids),
        valid_at=c.valid_at,
        updated_at=now,
        created_at=now,
        confidence=c.confidence,
        maturity=next_maturity("candidate", 0, validations, 0.0),
        regime_tag=regime,
        scope=c.scope,
        validations=validations,
        last_validated=c.valid_at,
        trust_tier=c.trust_tier,
    )


def candidates_from(table: pa.Table) -> list[Candidate]:
    """The :class:`Candidate` of each row of a :data:`CANDIDATE_SCHEMA` table, in row order."""
    names = [f.name for f in CANDIDATE_SCHEMA]
    cols = [n for n in names if n in table.column_names]
    out = []
    for r in table.select(cols).to_pylist():
        r["evidence_ids"] = tuple(r["evidence_ids"] or ())
        out.append(Candidate(**{k: v for k, v in r.items() if v is not None or k == "replaces"}))
    return out


def facts_table(fg: FactGraph, edge_ids: list[str]) -> pa.Table:
    """The facts ``edge_ids`` (first occurrence order, each once) as a :data:`FACT_SCHEMA` table."""
    rows = []
    for e in dict.fromkeys(edge_ids):
        item = fg.items.get(e)
        if item is not None:
            rows.append({**item.row(), "superseded_by": item.superseded_by})
    return pa.Table.from_pylist(rows, schema=FACT_SCHEMA)


class InvalidateConfig(OperatorConfig):
    """``invalidation``: write-time invalidation (False: the KH-NoInv ablation); ``delta``: the
    Gamma threshold; ``flush``: write the graph (facts, entities) to the store after the call;
    ``merge_log``: append the alias merges of the run to ``<group>/merge_log.jsonl``."""

    invalidation: bool = True
    delta: float = 0.55
    flush: bool = True
    merge_log: bool = True


@register
class Invalidate(Operator):
    """Candidate facts -> the upserted facts, with write-time invalidations applied.

    Each candidate row (``ExtractKnowledge``'s output, in row order) goes through
    :func:`upsert_facts` on the group's fact graph
    (:func:`~speakerflow.ops.knowledge.group_state.knowledge_of`:
    ``ctx.store``'s graph, loaded once per run). The output holds every fact the call added,
    validated or invalidated (``invalid_at``, ``expired_at``, ``superseded_by`` set on the
    invalidated ones). Stats: ``added``, ``validated``, ``invalidated``, ``kept_conflicts``,
    ``writes`` (graph writes flushed). ``now`` is ``ctx.clock()`` when set.
    """

    name = "invalidate"
    consumes = tuple(
        f.name
        for f in CANDIDATE_SCHEMA
        if f.name not in ("op", "replaces", "speaker", "trust_tier")
    )
    produces = FACT_SCHEMA
    Config = InvalidateConfig
    config: InvalidateConfig

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        fg, canon, _ = knowledge_of(ctx)
        cfg = UpsertConfig(invalidation=self.config.invalidation, delta=self.config.delta)
        res = upsert_facts(fg, candidates_from(table), now_of(ctx), cfg, canon.lexicon)
        for k, v in res.as_dict().items():
            self.stats.bump(k, v)
        out = facts_table(fg, res.touched)
        if self.config.flush:
            fg.put_entities(canon.to_records())
            self.stats.bump("writes", fg.pending())
            fg.flush()
            self._log_merges(ctx, canon.merge_log)
        return out

    def _log_merges(self, ctx: Context, merge_log: list[dict[str, Any]]) -> None:
        """Append the merges not yet logged in this run (``ctx.state["merges_logged"]`` counts
        them)."""
        store = ctx.store
        done = ctx.state.get("merges_logged", 0)
        if not self.config.merge_log or store is None or store.in_memory or done >= len(merge_log):
            return
        with open(Path(store.root) / "merge_log.jsonl", "a") as fh:
            for m in merge_log[done:]:
                fh.write(json.dumps(m) + "\n")
        ctx.state["merges_logged"] = len(merge_log)

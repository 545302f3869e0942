"""Entity and Fact writes in Kuzu, with an in-memory adjacency cache for the online path.

:class:`FactGraph` is the temporal knowledge graph of one group. Kuzu holds the truth:
``Entity`` and ``Fact`` nodes, ``SUBJECT``/``OBJECT`` rels from a fact to its entities,
``FROM_MSG`` from a fact to the raw ``Message`` rows it rests on (provenance), and
``SUPERSEDES`` from the new fact to the one it invalidated. Facts are bi-temporal:
``valid_at``/``invalid_at`` (world time) and ``created_at``/``expired_at`` (when we learned
and retired it). Nothing is ever deleted.

Online injection must not pay a Kuzu round trip per event, so :meth:`FactGraph.load` reads
entities and facts once into dicts (entity -> fact ids, slot -> fact ids). Writes go to the
cache at once and to Kuzu in batches (:meth:`flush`, a handful of statements however many
facts: :mod:`.fact_flush`); :meth:`load` after :meth:`flush` reproduces the same cache. A fact
is a :class:`~.fact_item.FactItem`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from speakerflow.schemas import Entity

from . import fact_flush
from .fact_item import FACT_COLUMNS, VALUE_PREFIX, FactItem, edge_id_for, to_aware
from .tables import message_texts

__all__ = ["FactGraph", "FactItem", "VALUE_PREFIX", "edge_id_for"]


class FactGraph:
    """Cache + batched Kuzu writer for one group's facts. ``graph=None`` is a pure in-memory
    double."""

    def __init__(self, graph=None, group_id: str = "group"):
        self.graph = graph
        self.group_id = group_id
        self.items: dict[str, FactItem] = {}
        self.entities: dict[str, Entity] = {}
        self.by_entity: dict[str, list[str]] = defaultdict(list)
        self.by_slot: dict[tuple, list[str]] = defaultdict(list)
        self._new: list[str] = []
        self._dirty: set[str] = set()
        self._ents_dirty: set[str] = set()
        self._supersedes: list[tuple[str, str]] = []
        self._regime: dict[tuple[str, str], str | None] = {}
        #: entity -> [(fact id, the fact's other entity or None)]: adjacency for the BFS
        self._links: dict[str, list[tuple[str, str | None]]] = defaultdict(list)
        #: msg id -> (event time, speaker) of every evidence event (as-of views, corrections)
        self.msg_meta: dict[str, tuple[datetime, str]] = {}
        self._span: dict[str, tuple[datetime, datetime]] = {}
        #: facts first known after their valid_at (corrections): the as-of fast path skips them
        self._late: set[str] = set()
        self._late_by: set[str] = set()
        #: the latest time any evidence or fact refers to: an as-of view at or after it is the
        #: current view
        self.horizon: datetime | None = None
        #: number of tier-3 (rumour) facts: injection skips the rumour pass when there are none
        self.rumours = 0
        #: ``(file name, JSON state)`` the next flush commits with its facts (the entity path's
        #: processed ids): written after the Kuzu commit, and by recovery if a kill came between
        self.commit_state: tuple[str, dict] | None = None

    # -- reading ------------------------------------------------------------------------
    def load(self, with_records: bool = True) -> FactGraph:
        """(Re)build the cache from Kuzu: every Entity and Fact (and SpeakerMem record heads)."""
        for table in (
            self.items,
            self.entities,
            self.by_entity,
            self.by_slot,
            self._regime,
            self._links,
            self._span,
        ):
            table.clear()
        self._late.clear()
        self._late_by.clear()
        self.horizon, self.rumours = None, 0
        if self.graph is None:
            return self
        for r in self.graph.rows(
            "MATCH (m:Message) RETURN m.msg_id AS id, m.ts AS ts, m.speaker AS speaker"
        ):
            if r["ts"] is not None:
                self.note_message(r["id"], to_aware(r["ts"]), r["speaker"] or "")
        for r in self.graph.rows(
            "MATCH (e:Entity) RETURN e.entity_id AS entity_id, e.group_id AS group_id, "
            "e.name AS name, e.etype AS etype, e.aliases AS aliases"
        ):
            self.entities[r["entity_id"]] = Entity(**r)
        cols = ", ".join(f"f.{c} AS {c}" for c in FACT_COLUMNS)
        for r in self.graph.arrow(f"MATCH (f:Fact) RETURN {cols}").to_pylist():
            for k, v in r.items():
                if isinstance(v, datetime):
                    r[k] = to_aware(v)
            self._index(FactItem(**r))
        for r in self.graph.rows(
            "MATCH (a:Fact)-[:SUPERSEDES]->(b:Fact) RETURN a.edge_id AS a, b.edge_id AS b"
        ):
            if r["b"] in self.items:
                self.items[r["b"]].superseded_by = r["a"]
        if with_records:
            self._load_records()
        self._clear_pending()
        return self

    def _load_records(self) -> None:
        """SpeakerMem record heads become person facts (a person's stance is knowledge too)."""
        rows = self.graph.rows(
            "MATCH (r:Record) WHERE r.invalid_at IS NULL RETURN r.entry_id AS id, r.owner AS "
            "owner, r.utype AS utype, "
            "r.content AS content, r.from_ids AS from_ids, r.valid_at AS valid_at, r.confidence AS "
            "confidence, "
            "r.maturity AS maturity, r.layer AS layer"
        )
        for r in rows:
            subject = f"person:{r['owner']}" if r["owner"] != "GROUP" else "group:GROUP"
            t = to_aware(r["valid_at"])
            item = FactItem(
                f"rec_{r['id']}",
                self.group_id,
                subject,
                r["utype"],
                VALUE_PREFIX + r["content"][:200],
                r["content"][:200],
                list(r["from_ids"]),
                t,
                t,
                t,
                float(r["confidence"]),
                r["maturity"],
            )
            self._index(item)

    def _index(self, item: FactItem) -> None:
        self._regime.clear()
        if self.horizon is None or item.valid_at > self.horizon:
            self.horizon = item.valid_at
        self.rumours += item.trust_tier >= 3
        if (
            item.evidence_ids
            and item.evidence_ids[0] in self.msg_meta
            and self.msg_meta[item.evidence_ids[0]][0] > item.valid_at
        ):
            self._late.add(item.edge_id)
            self._late_by.add(item.edge_id)
        self.items[item.edge_id] = item
        self.by_entity[item.subject_id].append(item.edge_id)
        obj = None if item.object_id.startswith(VALUE_PREFIX) else item.object_id
        self._links[item.subject_id].append((item.edge_id, obj))
        if obj is not None:
            self.by_entity[obj].append(item.edge_id)
            self._links[obj].append((item.edge_id, item.subject_id))
        self.by_slot[item.slot].append(item.edge_id)

    def neighbourhood(
        self,
        entity_ids,
        hops: int = 1,
        limit: int = 300,
        fanout: int = 25,
        at: datetime | None = None,
    ) -> list[FactItem]:
        """Facts within ``hops`` of ``entity_ids`` (BFS over subject/object links), newest first
        per entity, at most ``limit`` (the structural candidate pool); beyond the first hop at
        most ``fanout`` facts per entity, so a hub reached by a hop cannot fill the pool.
        With ``at``, facts nobody knew of at ``at`` are skipped (not counted in the limit)."""
        seen_e, seen_f, frontier, out = set(entity_ids), set(), list(entity_ids), []
        items, links, last = self.items, self._links, max(1, hops) - 1
        for hop in range(max(1, hops)):
            nxt = []
            for eid in frontier:
                adj: Sequence[tuple[str, str | None]] = links.get(eid, ())
                if hop and len(adj) > fanout:
                    adj = adj[-fanout:]
                for fid, other in reversed(adj):
                    if fid in seen_f:
                        continue
                    seen_f.add(fid)
                    if (
                        at is not None
                        and (items[fid].valid_at > at or fid in self._late)
                        and self.known_span(items[fid])[0] > at
                    ):
                        continue
                    out.append(items[fid])
                    if len(out) >= limit:
                        return out
                    if hop < last and other is not None and other not in seen_e:
                        seen_e.add(other)
                        nxt.append(other)
            frontier = nxt
        return out

    def neighbourhood_kuzu(self, entity_ids: list[str], hops: int = 1) -> list[str]:
        """The same neighbourhood computed by Kuzu (fact ids; for checks and audits)."""
        found: set[str] = set()
        frontier = set(entity_ids)
        seen = set(entity_ids)
        for _ in range(max(1, hops)):
            rows = self.graph.rows(
                "MATCH (f:Fact)-[:SUBJECT|:OBJECT]->(e:Entity) WHERE e.entity_id IN $ids "
                "OPTIONAL MATCH (f)-[:SUBJECT|:OBJECT]->(o:Entity) RETURN f.edge_id AS f, "
                "o.entity_id AS o",
                {"ids": sorted(frontier)},
            )
            found |= {r["f"] for r in rows}
            frontier = {r["o"] for r in rows if r["o"] and r["o"] not in seen}
            seen |= frontier
        return sorted(found)

    def provenance(self, edge_id: str) -> list[dict]:
        """The raw Message rows a fact rests on (via FROM_MSG); the text is read from the
        group's Parquet parts (the graph does not keep it)."""

        rows = self.graph.rows(
            "MATCH (f:Fact)-[:FROM_MSG]->(m:Message) WHERE f.edge_id = $id RETURN m.msg_id AS "
            "msg_id, "
            "m.source_type AS source_type, m.source_ref AS source_ref, m.ts AS ts, m.speaker AS "
            "speaker",
            {"id": edge_id},
        )
        texts = message_texts(Path(self.graph.path).parent, [r["msg_id"] for r in rows])
        return [{**r, "text": texts.get(r["msg_id"])} for r in rows]

    def regime(
        self, entity_id: str, at: datetime | None = None, relation: str | None = None
    ) -> str | None:
        """The state M_t of an entity (its market regime, a service's health ...): the newest
        first-hand (trust tier 1-2) value of ``relation`` (the domain pack's state relation;
        None: the pack has none) valid at ``at`` (default: now, cached until a write). A tier-3
        rumour never sets it."""
        if relation is None:
            return None
        if at is not None:
            cur = [
                v
                for i in self.by_slot.get((entity_id, relation), ())
                if self.items[i].trust_tier < 3 and (v := self.as_of(self.items[i], at)) is not None
            ]
            return max(cur, key=lambda i: i.valid_at).value if cur else None
        key = (entity_id, relation)
        if key not in self._regime:
            cur = [i for i in self.current(key) if i.trust_tier < 3]
            self._regime[key] = max(cur, key=lambda i: i.valid_at).value if cur else None
        return self._regime[key]

    # -- as-of views ----------------------------------------------------------------------
    def note_message(self, msg_id: str, ts: datetime, speaker: str = "") -> None:
        """Remember when (and by whom) an evidence event was emitted."""
        if msg_id not in self.msg_meta:
            self.msg_meta[msg_id] = (ts, speaker)
        if self.horizon is None or ts > self.horizon:
            self.horizon = ts

    def known_span(self, item: FactItem) -> tuple[datetime, datetime]:
        """(first, last) time of the item's evidence events (its ``valid_at`` when unknown)."""
        sp = self._span.get(item.edge_id)
        if sp is None:
            ts = [self.msg_meta[m][0] for m in item.evidence_ids if m in self.msg_meta] or [
                item.valid_at
            ]
            sp = self._span[item.edge_id] = (min(ts), max(ts))
        return sp

    def invalidation_known(self, item: FactItem) -> datetime | None:
        """When the invalidation of ``item`` became known: the first evidence of the fact that
        superseded it (a correction retracts a value only from the correction's time), else
        ``invalid_at``."""
        if item.invalid_at is None:
            return None
        by = self.items.get(item.superseded_by) if item.superseded_by else None
        return max(item.invalid_at, self.known_span(by)[0]) if by is not None else item.invalid_at

    def as_of(self, item: FactItem, at: datetime) -> FactItem | None:
        """``item`` as it stood at ``at`` from the evidence seen up to ``at``: None if nothing
        about it was known yet or it was already invalid; else the item itself or a copy with
        only the evidence up to ``at`` (validations, last validation and maturity recomputed,
        a later invalidation undone)."""
        if (
            len(item.evidence_ids) <= 1 and item.edge_id not in self._late
        ):  # fast path: one event, known at valid_at
            if item.valid_at > at:
                return None
            if item.invalid_at is None:
                return item
            if item.invalid_at <= at and (
                item.superseded_by is None or item.superseded_by not in self._late_by
            ):
                known = self.invalidation_known(item)  # a datetime: the item is invalidated
                if known is not None and known <= at:
                    return None
        first, last = self.known_span(item)
        if first > at:
            return None
        if item.invalid_at is not None:
            known = self.invalidation_known(item)
            if item.invalid_at <= at and known is not None and known <= at:
                return None
        elif last <= at:
            return item
        from .maturity import next_maturity

        meta = self.msg_meta
        ev = [m for m in item.evidence_ids if (meta[m][0] if m in meta else item.valid_at) <= at]
        dropped = len(item.evidence_ids) - len(ev)
        validations = max(0, item.validations - dropped)
        lv = max((meta[m][0] for m in ev if m in meta), default=item.valid_at)
        return replace(
            item,
            evidence_ids=ev,
            validations=validations,
            last_validated=max(lv, item.valid_at),
            invalid_at=None,
            expired_at=None,
            superseded_by=None,
            maturity=next_maturity("candidate", item.reuse_count, validations, item.utility),
        )

    def current(self, slot: tuple, at: datetime | None = None) -> list[FactItem]:
        """Facts of ``slot`` not invalidated (at ``at``, default: ever)."""
        items = (self.items[f] for f in self.by_slot.get(slot, ()))
        return [k for k in items if k.invalid_at is None or (at is not None and k.invalid_at > at)]

    # -- writing (cache now, Kuzu on flush) ----------------------------------------------
    def put_entities(self, entities: list[Entity]) -> None:
        for e in entities:
            if self.entities.get(e.entity_id) != e:
                self.entities[e.entity_id] = e
                self._ents_dirty.add(e.entity_id)

    def add(self, item: FactItem) -> bool:
        """Add a new fact; False if its id is already there (idempotent reruns)."""
        if item.edge_id in self.items:
            return False
        self._index(item)
        self._new.append(item.edge_id)
        return True

    def touch(self, edge_id: str) -> None:
        """Mark a cached fact as changed so the next flush writes its fields."""
        self._span.pop(edge_id, None)
        if edge_id not in self._new:
            self._dirty.add(edge_id)

    def invalidate(self, edge_id: str, at: datetime, by: str | None, now: datetime) -> None:
        """Set ``invalid_at``/``expired_at`` on a fact (kept, never deleted) and link ``by``
        SUPERSEDES it."""
        item = self.items[edge_id]
        self._regime.clear()
        item.invalid_at, item.expired_at, item.updated_at = at, now, now
        item.superseded_by = by
        self.touch(edge_id)
        if by:
            self._supersedes.append((by, edge_id))

    def _clear_pending(self) -> None:
        self._new.clear()
        self._dirty.clear()
        self._ents_dirty.clear()
        self._supersedes.clear()

    def pending(self) -> int:
        return len(self._new) + len(self._dirty) + len(self._ents_dirty) + len(self._supersedes)

    def flush(self) -> int:
        """Write the pending changes to Kuzu (:func:`.fact_flush.flush`); returns their count."""
        return fact_flush.flush(self)

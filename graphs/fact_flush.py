"""Writing the fact graph's pending changes to Kuzu (:func:`flush`, what ``FactGraph.flush``
runs) and finishing a flush a killed process left half done (:func:`recover_facts`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from speakerflow.schemas import EDGE_SCHEMA, Entity

from . import batch
from .batch import failpoint
from .fact_item import VALUE_PREFIX, to_naive


def store_root(graph) -> Path | None:
    """The group folder of an on-disk graph (``<group>/graph.kuzu``), else ``None``."""
    path = getattr(graph, "path", None)
    return Path(path).parent if path is not None and Path(path).name == "graph.kuzu" else None


def recover_facts(store, man: dict) -> dict:
    """An interrupted fact flush: the Kuzu transaction decides. Committed (its new facts are
    in the graph) -> the state committed with it (the entity path's processed ids) is written;
    not committed -> Kuzu discarded it, and the entity path redoes those events."""
    ids = list(man.get("facts", []))
    found = (
        {
            r["id"]
            for r in store.graph.rows(
                "MATCH (f:Fact) WHERE f.edge_id IN $ids RETURN f.edge_id AS id", {"ids": ids}
            )
        }
        if ids
        else set()
    )
    if found and len(found) != len(ids):
        raise RuntimeError(
            f"group {store.group_id!r}: facts batch half in the graph ({len(found)} of "
            f"{len(ids)}); "
            "Kuzu transactions should make this impossible"
        )
    committed = bool(found)  # a flush of updates only cannot tell: its events are redone
    if committed and man.get("state_file"):
        batch.write_json_atomic(Path(store.root) / man["state_file"], man["state"])
    return {"action": "rolled forward" if committed else "rolled back", "facts": len(ids)}


def flush(self: Any) -> int:
    """Write the pending entities, facts, rels and updates of the fact graph ``self`` to Kuzu
    in one transaction of a few batched statements (a ``facts`` batch manifest around it on
    disk, :func:`recover_facts` finishing it after a kill); returns how many were pending."""
    if self.graph is None:
        n = self.pending()
        self._clear_pending()
        return n
    g, n = self.graph, self.pending()
    if not n:
        return 0
    root = store_root(g)
    # the folder of the manifest, when this flush writes one (never inside another batch)
    manifest = root if root is not None and batch.pending(root) is None else None
    if manifest is not None:
        state = (
            {"state_file": self.commit_state[0], "state": self.commit_state[1]}
            if self.commit_state
            else {}
        )
        batch.begin(
            manifest,
            {"kind": "facts", "facts": list(self._new), "new": [], "hide": [], **state},
        )
        failpoint("facts.manifest")
    g.execute("BEGIN TRANSACTION")
    try:
        _flush_statements(self, g)
        failpoint("facts.written")
    except BaseException:
        try:
            g.execute("ROLLBACK")
        except RuntimeError:  # Kuzu already rolled back a failed statement's transaction
            pass
        if manifest is not None:
            batch.end(manifest)
        raise
    g.execute("COMMIT")
    failpoint("facts.committed")
    if root is not None and self.commit_state:
        batch.write_json_atomic(root / self.commit_state[0], self.commit_state[1])
        self.commit_state = None
    failpoint("facts.state")
    if manifest is not None:
        batch.end(manifest)
        failpoint("facts.done")
    self._clear_pending()
    return n


def _flush_statements(self: Any, g: Any) -> None:
    """The statements of :func:`flush` (run inside its transaction)."""
    if self._ents_dirty:
        rows = [self.entities[e].model_dump() for e in sorted(self._ents_dirty)]
        g.execute(
            "UNWIND $rows AS r MERGE (e:Entity {entity_id: r.entity_id}) SET e.group_id = "
            "r.group_id, "
            "e.name = r.name, e.etype = r.etype, e.aliases = r.aliases",
            {"rows": rows},
        )
    new = [self.items[f] for f in self._new]
    if new:
        _ensure_entities(
            self,
            {i.subject_id for i in new}
            | {i.object_id for i in new if not i.object_id.startswith(VALUE_PREFIX)},
        )
        table = pa.Table.from_pylist([i.row() for i in new], schema=EDGE_SCHEMA)
        g.copy_nodes("Fact", table)
        subj = [{"f": i.edge_id, "e": i.subject_id} for i in new]
        obj = [
            {"f": i.edge_id, "e": i.object_id}
            for i in new
            if not i.object_id.startswith(VALUE_PREFIX)
        ]
        ev = [{"f": i.edge_id, "m": m} for i in new for m in i.evidence_ids]
        g.execute(
            "UNWIND $rows AS r MATCH (f:Fact {edge_id: r.f}), (e:Entity {entity_id: r.e}) "
            "CREATE (f)-[:SUBJECT]->(e)",
            {"rows": subj},
        )
        if obj:
            g.execute(
                "UNWIND $rows AS r MATCH (f:Fact {edge_id: r.f}), (e:Entity {entity_id: r.e}) "
                "CREATE (f)-[:OBJECT]->(e)",
                {"rows": obj},
            )
        g.execute(
            "UNWIND $rows AS r MATCH (f:Fact {edge_id: r.f}), (m:Message {msg_id: r.m}) CREATE "
            "(f)-[:FROM_MSG]->(m)",
            {"rows": ev},
        )
    dirty = [
        self.items[f] for f in sorted(self._dirty) if f in self.items and not f.startswith("rec_")
    ]
    if dirty:
        rows = [
            {
                "id": i.edge_id,
                "inv": to_naive(i.invalid_at),
                "exp": to_naive(i.expired_at),
                "upd": to_naive(i.updated_at),
                "mat": i.maturity,
                "conf": i.confidence,
                "reuse": i.reuse_count,
                "val": i.validations,
                "util": i.utility,
                "lv": to_naive(i.last_validated),
                "ev": i.evidence_ids,
            }
            for i in dirty
        ]
        g.execute(
            "UNWIND $rows AS r MATCH (f:Fact {edge_id: r.id}) SET f.invalid_at = CAST(r.inv AS "
            "TIMESTAMP), f.expired_at = CAST(r.exp AS TIMESTAMP), "
            "f.updated_at = r.upd, f.maturity = r.mat, f.confidence = r.conf, f.reuse_count = "
            "r.reuse, "
            "f.validations = r.val, f.utility = r.util, f.last_validated = CAST(r.lv AS "
            "TIMESTAMP), f.evidence_ids = r.ev",
            {"rows": rows},
        )
    if self._supersedes:
        rows = [{"a": a, "b": b} for a, b in self._supersedes]
        g.execute(
            "UNWIND $rows AS r MATCH (a:Fact {edge_id: r.a}), (b:Fact {edge_id: r.b}) CREATE "
            "(a)-[:SUPERSEDES]->(b)",
            {"rows": rows},
        )


def _ensure_entities(self: Any, ids: set[str]) -> None:
    missing = [e for e in ids if e not in self.entities]
    if missing:
        self.put_entities(
            [
                Entity(
                    entity_id=e,
                    group_id=self.group_id,
                    name=e.split(":", 1)[-1],
                    etype=e.split(":", 1)[0] if ":" in e else "unknown",
                )
                for e in missing
            ]
        )
        rows = [self.entities[e].model_dump() for e in missing]
        self.graph.execute(
            "UNWIND $rows AS r MERGE (e:Entity {entity_id: r.entity_id}) SET e.group_id = "
            "r.group_id, "
            "e.name = r.name, e.etype = r.etype, e.aliases = r.aliases",
            {"rows": rows},
        )
        self._ents_dirty -= set(missing)

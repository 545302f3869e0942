"""Applying a planned forget (:func:`~.forget.plan_forget`) to every copy of a group: the
graph, the Parquet parts, the text index, the embedding caches, the logs and the roster; and
redoing it after a kill (:func:`recover_forget`; every step is idempotent)."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .batch import failpoint, write_json_atomic
from .records import WRITTEN_KEY

LOGS = ("merge_log.jsonl", "maintenance_log.jsonl", "review_queue.jsonl")


@dataclass
class ForgetReport:
    """What a forget removed (or, with ``dry_run``, would remove)."""

    group_id: str
    mode: str
    dry_run: bool
    messages: int = 0
    records_deleted: int = 0
    records_trimmed: int = 0
    records_relinked: int = 0
    facts_deleted: int = 0
    facts_trimmed: int = 0
    entities_deleted: int = 0
    roster_removed: list[str] = field(default_factory=list)
    rederive: int = 0
    parts_rewritten: int = 0
    embeddings_removed: int = 0
    log_lines_removed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def recover_forget(store: Any, man: dict[str, Any]) -> dict[str, Any]:
    """Redo an interrupted forget batch (every step is idempotent)."""
    report = ForgetReport(store.group_id, man["mode"], False)
    apply_forget(store, man, report)
    return {"action": "rolled forward", "messages": len(man["msg_ids"])}


def apply_forget(store: Any, man: dict[str, Any], report: ForgetReport) -> None:
    targets = set(man["msg_ids"])
    del_recs = list(man["delete_records"])
    if store.in_memory:
        _apply_in_memory(store, man)
    else:
        _apply_graph(store, man)
        failpoint("forget.graph")
        store.compact_graph()  # DETACH DELETE frees pages but leaves their bytes in the file
        failpoint("forget.compacted")
        report.parts_rewritten = _rewrite_parts(Path(store.root) / "messages", targets)
        store._messages = None
        store.set_records_table(None)
        failpoint("forget.parquet")
        store.rebuild_index()  # not a delete: deleted documents would stay in old segments
        failpoint("forget.index")
        report.embeddings_removed = _prune_embeddings(
            Path(store.root) / "embeddings", targets | set(del_recs)
        )
        failpoint("forget.embeddings")
        report.log_lines_removed = _prune_logs(store, man)
    _prune_meta(store, man)
    failpoint("forget.meta")
    if not store.in_memory:
        _audit_line(store, man, report)
    if not store.in_memory:
        store._messages = None
        store.set_records_table(None)
    if hasattr(store, "_embedding_memo"):
        store._embedding_memo = {}
    # per-store caches built from the old messages: the ANN index (it would be saved again,
    # forgotten vectors included) and the group view (its window embeddings)
    for cache in ("_ann_indexes", "_group_view"):
        store.__dict__.pop(cache, None)


def _apply_in_memory(store: Any, man: dict[str, Any]) -> None:
    targets = set(man["msg_ids"])
    keep = pc.invert(pc.is_in(store._messages["msg_id"], pa.array(sorted(targets), pa.string())))
    store._messages = store._messages.filter(keep)
    rows = []
    dele = set(man["delete_records"])
    for r in store.records().to_pylist():
        if r["entry_id"] in dele:
            continue
        if r["entry_id"] in man["trim_records"]:
            r["from_ids"] = man["trim_records"][r["entry_id"]]
        if r["entry_id"] in man["relink"]:
            sup, sb, inv = man["relink"][r["entry_id"]]
            r["supersedes"], r["superseded_by"] = sup, sb
            r["invalid_at"] = datetime.fromisoformat(inv) if inv else None
        rows.append(r)
    from speakerflow.schemas import RECORD_SCHEMA

    store.set_records_table(pa.Table.from_pylist(rows, schema=RECORD_SCHEMA))
    store.index.delete(sorted(targets | dele))


def _apply_graph(store: Any, man: dict[str, Any]) -> None:
    g = store.graph
    trims = [{"id": k, "ev": v} for k, v in man["trim_records"].items()]
    links = [
        {
            "id": k,
            "sup": v[0],
            "sb": v[1],
            "t": datetime.fromisoformat(v[2]).astimezone(UTC).replace(tzinfo=None)
            if v[2]
            else None,
        }
        for k, v in man["relink"].items()
    ]
    ftrims = [{"id": k, "ev": v} for k, v in man["trim_facts"].items()]
    g.execute("BEGIN TRANSACTION")
    try:
        if man["delete_records"]:
            g.execute(
                "MATCH (r:Record) WHERE r.entry_id IN $ids DETACH DELETE r",
                {"ids": man["delete_records"]},
            )
        if trims:
            g.execute(
                "UNWIND $rows AS t MATCH (r:Record {entry_id: t.id}) SET r.from_ids = t.ev",
                {"rows": trims},
            )
        if links:
            g.execute(
                "UNWIND $rows AS l MATCH (r:Record {entry_id: l.id}) SET r.supersedes = CAST(l.sup "
                "AS STRING), "
                "r.superseded_by = CAST(l.sb AS STRING), r.invalid_at = CAST(l.t AS TIMESTAMP)",
                {"rows": links},
            )
            pairs = [{"n": k, "o": v[0]} for k, v in man["relink"].items() if v[0]]
            if pairs:
                g.execute(
                    "UNWIND $rows AS p MATCH (n:Record {entry_id: p.n}), (o:Record {entry_id: "
                    "p.o}) "
                    "MERGE (n)-[:SUPERSEDES]->(o)",
                    {"rows": pairs},
                )
        if man["delete_facts"]:
            g.execute(
                "MATCH (f:Fact) WHERE f.edge_id IN $ids DETACH DELETE f",
                {"ids": man["delete_facts"]},
            )
        if ftrims:
            g.execute(
                "UNWIND $rows AS t MATCH (f:Fact {edge_id: t.id}) SET f.evidence_ids = t.ev",
                {"rows": ftrims},
            )
        if man["reset_facts"]:
            g.execute(
                "MATCH (f:Fact) WHERE f.edge_id IN $ids SET f.invalid_at = CAST(NULL AS "
                "TIMESTAMP), "
                "f.expired_at = CAST(NULL AS TIMESTAMP)",
                {"ids": man["reset_facts"]},
            )
        if man["delete_entities"]:
            g.execute(
                "MATCH (e:Entity) WHERE e.entity_id IN $ids DETACH DELETE e",
                {"ids": man["delete_entities"]},
            )
        if man["msg_ids"]:
            g.execute(
                "MATCH (m:Message) WHERE m.msg_id IN $ids DETACH DELETE m", {"ids": man["msg_ids"]}
            )
    except BaseException:
        try:
            g.execute("ROLLBACK")
        except RuntimeError:
            pass
        raise
    g.execute("COMMIT")


def _rewrite_parts(folder: Path, targets: set[str]) -> int:
    n = 0
    if not folder.exists() or not targets:
        return 0
    ids = pa.array(sorted(targets), pa.string())
    for part in sorted(folder.glob("part-*.parquet")):
        table = pq.read_table(part)
        hit = pc.is_in(table["msg_id"], ids)
        if not pc.any(hit).as_py():
            continue
        kept = table.filter(pc.invert(hit))
        if kept.num_rows == 0:
            part.unlink()
        else:
            tmp = folder / f".{part.name}.forget.tmp"
            pq.write_table(kept, tmp)
            tmp.replace(part)
        n += 1
    return n


def _names_forgotten(key: str, ids: set[str]) -> bool:
    """Whether a cache key names a forgotten id: the id itself, or a window key (the ids of
    its messages joined by ``+``, :meth:`~speakerflow.ops.query.recall.GroupView.window_matrix`)."""
    return key in ids or ("+" in key and not ids.isdisjoint(key.split("+")))


def _prune_embeddings(folder: Path, ids: set[str]) -> int:
    """Drop the cached vectors of forgotten messages and records, and of every window that
    spans a forgotten message (its vector was computed from that message's text). An ANN
    index file (``*.faiss`` and its ``.ids.npy``) holding a forgotten id is deleted whole:
    it is a cache, rebuilt from the remaining vectors on the next query above its threshold,
    and HNSW keeps a removed vector's bytes until a rebuild."""
    removed = 0
    if not folder.exists():
        return 0
    for ids_file in sorted(folder.glob("*.faiss.ids.npy")):
        index_file = ids_file.with_name(ids_file.name.removesuffix(".ids.npy"))
        try:
            keys = np.load(ids_file, allow_pickle=False).tolist()
        except (OSError, ValueError):
            keys = None  # unreadable: a cache, so drop it rather than guess
        hit = [k for k in keys or [] if _names_forgotten(k, ids)]
        if keys is None or hit:
            removed += len(hit)
            index_file.unlink(missing_ok=True)
            ids_file.unlink(missing_ok=True)
    for path in sorted(folder.glob("*.npz")):
        if path.name.endswith(".tmp.npz"):
            path.unlink()
            continue
        with np.load(path, allow_pickle=False) as data:
            keys, vecs = data["ids"].tolist(), data["vecs"]
        keep = [i for i, k in enumerate(keys) if not _names_forgotten(k, ids)]
        if len(keep) == len(keys):
            continue
        removed += len(keys) - len(keep)
        if not keep:
            path.unlink()
            continue
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, ids=np.array([keys[i] for i in keep], dtype=str), vecs=vecs[keep])
        tmp.replace(path)
    return removed


def _prune_logs(store: Any, man: dict[str, Any]) -> int:
    """Drop log lines that name a forgotten message, deleted fact/entity, or a forgotten person."""
    root = Path(store.root)
    tokens = (
        set(man["msg_ids"])
        | set(man["delete_facts"])
        | set(man["delete_entities"])
        | set(man["delete_records"])
    )
    names = [re.compile(rf"\b{re.escape(n)}\b", re.I) for n in man["person_names"]]
    removed = 0
    for name in LOGS:
        path = root / name
        if not path.exists():
            continue
        lines = path.read_text().splitlines()
        kept = [
            x
            for x in lines
            if not any(t in x for t in tokens if t) and not any(p.search(x) for p in names)
        ]
        if len(kept) != len(lines):
            removed += len(lines) - len(kept)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text("".join(x + "\n" for x in kept))
            tmp.replace(path)
    ep = root / "entity_path.json"
    if ep.exists():
        state = json.loads(ep.read_text())
        done = state.get("processed", [])
        left = [m for m in done if m not in set(man["msg_ids"])]
        if len(left) != len(done):
            write_json_atomic(ep, {**state, "processed": left})
    return removed


def _prune_meta(store: Any, man: dict[str, Any]) -> None:
    meta = store._meta
    gone = set(man["roster_remove"])
    names = {n.lower() for n in man["person_names"]}
    meta["roster"] = [
        {**p, "aliases": [a for a in p.get("aliases", []) if a.lower() not in names]}
        for p in meta["roster"]
        if p["name"] not in gone
    ]
    targets = set(man["msg_ids"]) | set(man.get("rederive", []))
    if WRITTEN_KEY in meta:
        meta[WRITTEN_KEY] = [m for m in meta[WRITTEN_KEY] if m not in targets]
    store._save_meta()


def _audit_line(store: Any, man: dict[str, Any], report: ForgetReport) -> None:
    path = Path(store.root) / "forget_log.jsonl"
    if path.exists() and man["batch_id"] in path.read_text():
        return  # already logged (a recovery re-running the batch)
    line = {
        "batch_id": man["batch_id"],
        "at": man["at"],
        "mode": man["mode"],
        "selector_sha256": man["selector_sha256"],
        "messages": len(man["msg_ids"]),
        "records_deleted": len(man["delete_records"]),
        "records_trimmed": len(man["trim_records"]),
        "facts_deleted": len(man["delete_facts"]),
        "facts_trimmed": len(man["trim_facts"]),
        "entities_deleted": len(man["delete_entities"]),
        "roster_removed": len(man["roster_remove"]),
    }
    with open(path, "a") as fh:
        fh.write(json.dumps(line, sort_keys=True) + "\n")

"""Forget: remove messages (a person's, some ids, or all) from every copy of a group's store.

:func:`forget` plans the deletion, writes it as a batch manifest (``batch.json``, kind
``forget``), then applies it store by store; every step is idempotent, so a process killed
half way is finished by the next writable open (:meth:`GroupStore.recover` calls
:func:`recover_forget`). What is removed:

* the messages: Parquet parts rewritten without them, Kuzu ``Message`` nodes (and their
  ``FROM_MSG``/``REPLY_TO``/``MENTIONS`` rels), Tantivy documents, embedding-cache rows;
* derived records whose evidence was only those messages, records sourced by a forgotten
  person (what they said), and records carrying a phrase (5 words) found only in
  forgotten messages (a quote); records with other evidence keep it, trimmed to what
  remains. Records other people's messages state about a forgotten person stay (they
  rest on those people's messages, which stay too). Remaining messages that lost a
  record leave the writer watermark (``rederive``), so the Writer derives them again
  (:func:`speakerflow.pipelines.forget.forget_group` does it at once);
  update chains are re-linked around deleted states;
* facts likewise (evidence only forgotten, about a forgotten person's entity, or quoting
  forgotten text); facts a deleted fact had invalidated become current again;
* the person from the roster and alias lists, the person's entities, the writer watermark
  and entity-path bookkeeping entries, and log lines naming deleted ids;
* then one line is appended to ``forget_log.jsonl``: time, mode, counts and a SHA-256 of
  the selector, never names or text.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import batch
from .batch import failpoint, write_json_atomic
from .records import WRITTEN_KEY
from .tables import StoreError

_WORD = re.compile(r"[a-z0-9]+")
SHINGLE = 5
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


_FOLD = frozenset(
    "i me my mine you your yours we our ours he him his she her hers they them their".split()
)


def shingles(text: str, n: int = SHINGLE, names: frozenset[str] = frozenset()) -> set[str]:
    """Word n-grams of lower-cased ``text`` (a text of 3 to ``n`` words is one shingle).

    Pronouns and the group's names fold into one token and a possessive ``s`` is dropped,
    so a Writer's rewording of a quote ("is this your own painting" -> "is this Mel's own
    painting") still matches the message it came from.
    """
    words = [
        "_" if w in _FOLD or w in names else w
        for w in _WORD.findall((text or "").lower())
        if w != "s"
    ]
    if len(words) < n:
        return {" ".join(words)} if len(words) >= 3 else set()
    return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}


def _selector_hash(group_id: str, mode: str, value: Any) -> str:
    return hashlib.sha256(json.dumps([group_id, mode, value], sort_keys=True).encode()).hexdigest()


def plan_forget(
    store: Any,
    speaker: str | None = None,
    message_ids: list[str] | None = None,
    everything: bool = False,
    rewrite_records: bool = False,
) -> dict[str, Any]:
    """The forget batch (manifest) for one selector: exactly one of ``speaker``,
    ``message_ids`` or ``everything``. Raises :class:`~speakerflow.graphs.StoreError` for a
    speaker or message id the group does not have. ``rewrite_records``: every record is
    deleted and every remaining message leaves the writer watermark, so the Writer derives
    the group's records again from what remains (what a group that never had the messages
    would hold), instead of the cascade."""

    if sum(bool(x) for x in (speaker, message_ids, everything)) != 1:
        raise StoreError("forget needs exactly one of: a speaker, message ids, or everything")
    msgs = store.messages().select(["msg_id", "speaker", "text"]).to_pylist()
    mode = "all" if everything else "speaker" if speaker else "messages"
    roster_remove: list[str] = []
    if speaker:
        names = {speaker} | {n for n, al in store.aliases().items() if speaker in al}
        name = next((n for n in store.roster() if n in names), None)
        if name is None and not any(m["speaker"] == speaker for m in msgs):
            raise StoreError(
                f"group {store.group_id!r} has no speaker {speaker!r} (roster: {store.roster()})"
            )
        name = name or speaker
        targets = {m["msg_id"] for m in msgs if m["speaker"] == name}
        roster_remove = [name]
        person_names: set[str] = {name, *store.aliases().get(name, [])}
    elif message_ids:
        have = {m["msg_id"] for m in msgs}
        unknown = [m for m in message_ids if m not in have]
        if unknown:
            raise StoreError(
                f"group {store.group_id!r} has no message(s) {unknown[:5]}"
                f"{' ...' if len(unknown) > 5 else ''}; nothing was forgotten"
            )
        targets = set(message_ids)
        person_names = set()
    else:
        targets = {m["msg_id"] for m in msgs}
        roster_remove = list(store.roster())
        person_names = set(roster_remove)
    gone_sh: set[str] = set()
    kept_sh: set[str] = set()
    name_words = frozenset(
        w
        for n in [*store.roster(), *(a for al in store.aliases().values() for a in al)]
        for w in _WORD.findall(n.lower())
    )
    for m in msgs:
        (gone_sh if m["msg_id"] in targets else kept_sh).update(
            shingles(m["text"], names=name_words)
        )
    exclusive = gone_sh - kept_sh

    def quotes(text: str | None) -> bool:
        return bool(exclusive) and not shingles(text or "", names=name_words).isdisjoint(exclusive)

    # -- records ----------------------------------------------------------------------
    recs = store.records().to_pylist()
    by_id = {r["entry_id"]: r for r in recs}
    delete: set[str] = set()
    trim: dict[str, list[str]] = {}
    for r in recs:
        ev = list(r["from_ids"] or [])
        hit = [m for m in ev if m in targets]
        if (
            everything
            or (ev and len(hit) == len(ev))
            or r["source"] in roster_remove
            or quotes(r["content"])
            or quotes(r["event"])
        ):
            delete.add(r["entry_id"])
        elif hit:
            trim[r["entry_id"]] = [m for m in ev if m not in targets]
    # messages that stay but lost a record (it quoted forgotten text, or its other evidence
    # was forgotten): they leave the writer watermark so the Writer derives them again
    rederive = sorted(
        {m for rid in delete for m in (by_id[rid]["from_ids"] or []) if m not in targets}
    )
    if rewrite_records and not everything:
        delete, trim = set(by_id), {}
        rederive = sorted({m["msg_id"] for m in msgs} - targets)
    relink: dict[str, list[Any]] = {}
    for r in recs:
        if r["entry_id"] in delete:
            continue
        sup, sb = r["supersedes"], r["superseded_by"]
        while sup is not None and sup in delete:
            sup = by_id[sup]["supersedes"] if sup in by_id else None
        while sb is not None and sb in delete:
            sb = by_id[sb]["superseded_by"] if sb in by_id else None
        if (sup, sb) != (r["supersedes"], r["superseded_by"]):
            inv = by_id[sb]["valid_at"] if sb is not None and sb in by_id else None
            relink[r["entry_id"]] = [sup, sb, inv.isoformat() if inv is not None else None]
    # -- facts and entities (on-disk stores with an entity graph) ----------------------
    del_facts: set[str] = set()
    trim_facts: dict[str, list[str]] = {}
    reset_facts: list[str] = []
    del_ents: list[str] = []
    if not store.in_memory and (Path(store.root) / "graph.kuzu").exists():
        g = store.graph
        ents = g.rows(
            "MATCH (e:Entity) RETURN e.entity_id AS id, e.name AS name, e.aliases AS aliases"
        )
        low = {n.lower() for n in person_names}
        del_ents = sorted(
            e["id"]
            for e in ents
            if everything
            or (e["name"] or "").lower() in low
            or any((a or "").lower() in low for a in e["aliases"] or [])
        )
        de = set(del_ents)
        for f in g.rows(
            "MATCH (f:Fact) RETURN f.edge_id AS id, f.evidence_ids AS ev, f.description AS d, "
            "f.subject_id AS s, f.object_id AS o"
        ):
            ev = list(f["ev"] or [])
            hit = [m for m in ev if m in targets]
            if (
                everything
                or (ev and len(hit) == len(ev))
                or f["s"] in de
                or f["o"] in de
                or quotes(f["d"])
            ):
                del_facts.add(f["id"])
            elif hit:
                trim_facts[f["id"]] = [m for m in ev if m not in targets]
        superseders: dict[str, list[str]] = {}
        for r in g.rows(
            "MATCH (a:Fact)-[:SUPERSEDES]->(b:Fact) RETURN a.edge_id AS a, b.edge_id AS b"
        ):
            superseders.setdefault(r["b"], []).append(r["a"])
        reset_facts = sorted(
            b
            for b, al in superseders.items()
            if b not in del_facts and all(a in del_facts for a in al)
        )
    return {
        "kind": "forget",
        "batch_id": uuid.uuid4().hex,
        "at": datetime.now(UTC).isoformat(),
        "mode": mode,
        "selector_sha256": _selector_hash(
            store.group_id, mode, speaker or sorted(message_ids or []) or "all"
        ),
        "msg_ids": sorted(targets),
        "roster_remove": roster_remove,
        "person_names": sorted(person_names),
        "new": [],  # readers hide nothing extra: forgotten ids are what they must stop seeing
        "hide": sorted(targets | delete),
        "delete_records": sorted(delete),
        "trim_records": trim,
        "relink": relink,
        "delete_facts": sorted(del_facts),
        "trim_facts": trim_facts,
        "reset_facts": reset_facts,
        "delete_entities": del_ents,
        "rederive": [] if everything else rederive,
    }


def forget(
    store: Any,
    speaker: str | None = None,
    message_ids: list[str] | None = None,
    everything: bool = False,
    dry_run: bool = False,
    rewrite_records: bool = False,
) -> ForgetReport:
    """Forget a speaker, some messages, or everything in ``store`` (writable); see the module
    doc (``rewrite_records``: see :func:`plan_forget`)."""
    man = plan_forget(store, speaker, message_ids, everything, rewrite_records)
    report = ForgetReport(
        store.group_id,
        man["mode"],
        dry_run,
        messages=len(man["msg_ids"]),
        records_deleted=len(man["delete_records"]),
        records_trimmed=len(man["trim_records"]),
        records_relinked=len(man["relink"]),
        facts_deleted=len(man["delete_facts"]),
        facts_trimmed=len(man["trim_facts"]),
        entities_deleted=len(man["delete_entities"]),
        roster_removed=list(man["roster_remove"]),
        rederive=len(man["rederive"]),
    )
    if dry_run or not man["msg_ids"] and not man["roster_remove"]:
        return report
    store._require_writable()
    if store.in_memory:
        _apply(store, man, report)
        return report
    batch.begin(store.root, man)
    failpoint("forget.manifest")
    _apply(store, man, report)
    batch.end(store.root)
    failpoint("forget.done")
    return report


def recover_forget(store: Any, man: dict[str, Any]) -> dict[str, Any]:
    """Redo an interrupted forget batch (every step is idempotent)."""
    report = ForgetReport(store.group_id, man["mode"], False)
    _apply(store, man, report)
    return {"action": "rolled forward", "messages": len(man["msg_ids"])}


def _apply(store: Any, man: dict[str, Any], report: ForgetReport) -> None:
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

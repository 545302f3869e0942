"""Repairing a group's store: finishing or rolling back a batch a killed process left
half written (run by every writable open), rewriting the text index from the stores of
record, and compacting the Kuzu graph. :class:`~speakerflow.graphs.store.GroupStore`'s
``recover``, ``rebuild_index`` and ``compact_graph`` call these."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import batch
from .append import index_columns
from .batch import failpoint
from .fact_flush import recover_facts
from .forget_apply import recover_forget
from .records import _columns, record_row_docs, recover_records
from .tables import StoreError

#: the fields of a text index document, messages and records together
INDEX_FIELDS = (
    "doc_id",
    "kind",
    "group_id",
    "speaker",
    "owner",
    "layer",
    "session_id",
    "text",
    "ts",
)


def recover(store: Any) -> dict[str, Any] | None:
    """Complete or roll back an interrupted batch of ``store``.

    Messages roll forward: the staged Parquet part is the record of truth; the graph gets
    the rows it lacks, the index is rewritten for those ids, the part renamed, the
    roster saved. Records roll forward if the Kuzu transaction committed (the index and
    watermark are completed), else back (index documents removed). Forget batches are
    re-run (every step is idempotent). Returns what was done, or ``None``.
    """
    if store.in_memory:
        return None
    folder = store.root / "messages"
    for stray in folder.glob(".part-*.tmp") if folder.exists() else ():
        man = batch.pending(store.root)
        if not man or man.get("kind") != "messages" or stray.name != f".{man.get('part')}.tmp":
            stray.unlink()  # staged before its manifest was written: never part of a batch
    man = batch.pending(store.root)
    if man is None:
        return None
    kind = man.get("kind")
    finish = {
        "messages": recover_messages,
        "records": recover_records,
        "forget": recover_forget,
        "facts": recover_facts,
    }.get(str(kind))
    if finish is None:
        raise StoreError(
            f"group {store.group_id!r}: unknown batch kind {kind!r} in {batch.MANIFEST}"
        )
    done = finish(store, man)
    batch.end(store.root)
    store._messages = None
    store._records = None
    return {"kind": kind, **done}


def recover_messages(store: Any, man: dict[str, Any]) -> dict[str, Any]:
    """Roll an interrupted message batch forward from its staged (or renamed) part."""
    folder = store.root / "messages"
    final, tmp = folder / man["part"], folder / f".{man['part']}.tmp"
    path = tmp if tmp.exists() else final
    if not path.exists():  # nothing staged survived: nothing of the batch can be anywhere
        return {"action": "none"}
    new = pq.read_table(path)
    ids = new["msg_id"].to_pylist()
    graph = store.graph
    have = {
        r["id"]
        for r in graph.rows(
            "MATCH (m:Message) WHERE m.msg_id IN $ids RETURN m.msg_id AS id", {"ids": ids}
        )
    }
    missing = [i for i, mid in enumerate(ids) if mid not in have]
    if missing:
        graph.copy_nodes("Message", new.take(pa.array(missing)))
    store.index.replace_columns(index_columns(new))
    if tmp.exists():
        tmp.replace(final)
    store._add_speakers(pc.unique(new["speaker"]).to_pylist())
    return {"action": "rolled forward", "rows": len(ids), "graph_rows_added": len(missing)}


def rebuild_index(store: Any) -> int:
    """Rewrite the text index of ``store`` from the stores of record (Parquet messages,
    Kuzu records); returns the documents written. Old segment files are deleted."""
    msgs = index_columns(store.messages())
    recs = _columns(record_row_docs(store.records().to_pylist()))
    columns = {k: msgs.get(k, [None] * len(msgs["doc_id"])) + recs.get(k, []) for k in INDEX_FIELDS}
    store.index.rebuild(columns)
    return len(columns["doc_id"])


def compact_graph(store: Any) -> dict[str, int] | None:
    """Rewrite ``graph.kuzu`` as a fresh copy of what it holds (so deleted rows leave no
    bytes behind), swapped in with one rename; ``None`` if there is no graph or its
    write-ahead log was not empty on close (then the old file is kept)."""
    root = store.root
    path = root / "graph.kuzu"
    if store.in_memory or not path.exists():
        return None
    tmp = root / "graph.kuzu.compact"
    for stale in root.glob("graph.kuzu.compact*"):
        stale.unlink()
    counts = store.graph.copy_into(tmp)
    failpoint("compact.copied")
    store._graph.close()
    store._graph = None
    if any(p.stat().st_size for p in root.glob("graph.kuzu.wal*")) or any(
        root.glob("graph.kuzu.compact.wal*")
    ):
        for stale in root.glob("graph.kuzu.compact*"):
            stale.unlink()
        return None
    tmp.replace(path)
    for wal in root.glob("graph.kuzu.wal*"):
        wal.unlink()
    store._records = None
    return counts

"""Derived records (System 2) on a :class:`~speakerflow.graphs.GroupStore`: write, heads, chains.

Records are append-only. An UPDATE writes a new record whose ``supersedes`` is the old
``entry_id`` and sets the old record's ``superseded_by`` and ``invalid_at``; nothing is
deleted. A *head* is a record with no ``superseded_by``; a *chain* is the list of records
linked by ``supersedes`` from its first state to its head.

On a disk store a batch goes to Kuzu (Record nodes, FROM_MSG and SUPERSEDES rels, in one
transaction) and to Tantivy (one document per record: ``kind="record"``, ``owner``,
``speaker`` = source, ``layer``); if either fails the other is undone. The in-memory
store keeps the same rows in its records table and its BM25 double.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from speakerflow.schemas import RECORD_SCHEMA, KnowledgeItem, to_table, utc

from . import batch
from .batch import failpoint
from .kuzu_graph import _kuzu_type, naive_utc

#: group.json key of the write-path watermark: ids of messages already given to a Writer.
WRITTEN_KEY = "writer_written_msg_ids"
#: group.json key of the names of the Writer backends that have written the group.
BACKENDS_KEY = "writer_backends"

# explicit casts: Kuzu infers a column that is null in every row as STRING
_PROPS = ", ".join(f"{f.name}: CAST(row.{f.name} AS {_kuzu_type(f.type)})" for f in RECORD_SCHEMA)


def all_records(store: Any) -> list[dict[str, Any]]:
    """Every record of the group as dicts, in write order (do not mutate them)."""
    rows = getattr(store, "record_rows", None)
    return list(rows()) if rows is not None else store.records().to_pylist()


def heads(store: Any, owner: str | None = None, layer: str | None = None) -> list[dict[str, Any]]:
    """Current records (not superseded), optionally of one ``owner`` and/or ``layer``."""
    return [
        r
        for r in all_records(store)
        if r["superseded_by"] is None
        and (owner is None or r["owner"] == owner)
        and (layer is None or r["layer"] == layer)
    ]


def chains(
    store: Any, owner: str | None = None, layer: str | None = None
) -> list[list[dict[str, Any]]]:
    """Update chains (oldest state first, head last) ending at the selected heads."""
    by_id = {r["entry_id"]: r for r in all_records(store)}
    out = []
    for head in heads(store, owner, layer):
        chain = [head]
        while chain[0]["supersedes"] is not None and chain[0]["supersedes"] in by_id:
            chain.insert(0, by_id[chain[0]["supersedes"]])
        out.append(chain)
    return out


def next_write_order(store: Any) -> int:
    """The global write order the next record gets (1 + the largest so far; 0 when empty)."""
    orders = [r["write_order"] for r in all_records(store)]
    return (max(orders) + 1) if orders else 0


def written_ids(store: Any) -> set[str]:
    """Ids of messages already processed by the write path (the watermark; do not mutate).

    A :class:`RecordBuffer` answers with the store's watermark plus what it has staged.
    """
    staged = getattr(store, "written_ids", None)
    return staged() if staged is not None else set(store.meta(WRITTEN_KEY, []))


def mark_written(store: Any, msg_ids: Sequence[str]) -> None:
    """Add ``msg_ids`` to the watermark (saved in group.json; a :class:`RecordBuffer`
    stages them and saves them when it flushes the records written from them)."""
    stage = getattr(store, "mark_written", None)
    if stage is not None:
        stage(msg_ids)
        return
    store.set_meta(WRITTEN_KEY, sorted(written_ids(store) | set(msg_ids)))


def record_docs(records: Sequence[KnowledgeItem]) -> list[dict[str, Any]]:
    """Text-index documents for records (the event/matter key is searchable too)."""
    return [
        {
            "doc_id": r.entry_id,
            "kind": "record",
            "group_id": r.group_id,
            "speaker": r.source,
            "owner": r.owner,
            "layer": r.layer,
            "session_id": r.session_id,
            "text": f"{r.content} {r.event or ''}".strip(),
            "ts": r.valid_at,
        }
        for r in records
    ]


def write_records(
    store: Any,
    new: Sequence[KnowledgeItem],
    supersede: Sequence[tuple[str, str, datetime]] = (),
    mark: Sequence[str] = (),
) -> int:
    """Append records and close superseded ones, all or nothing; returns records written.

    Parameters
    ----------
    new
        Records to add; ``entry_id`` already present in the store are skipped (re-running
        a batch is idempotent).
    supersede
        ``(old_entry_id, new_entry_id, invalid_at)``: the old record gets ``superseded_by``
        and ``invalid_at``; its content is kept.
    mark
        Message ids to add to the writer watermark in the same batch (on disk: in the
        batch manifest, so records and watermark survive a crash together or not at all).
    """
    store._require_writable()
    existing = {r["entry_id"]: r for r in all_records(store)}
    new = [r for r in new if r.entry_id not in existing]
    supersede = [
        s for s in supersede if s[0] in existing and existing[s[0]]["superseded_by"] is None
    ]
    if any(r.group_id != store.group_id for r in new):
        bad = next(r for r in new if r.group_id != store.group_id)
        raise ValueError(
            f"record {bad.entry_id}: field 'group_id' is {bad.group_id!r}; "
            f"the store of group {store.group_id!r} only takes its own records"
        )
    if not new and not supersede:
        if mark:
            mark_written(store, mark)
        return 0
    if store.in_memory:
        _write_in_memory(store, new, supersede)
        if mark:
            mark_written(store, mark)
    else:
        batch.begin(
            store.root,
            {
                "kind": "records",
                "new": [r.entry_id for r in new],
                "supersede": [[o, n] for o, n, _ in supersede],
                "mark": sorted(set(mark)),
            },
        )
        failpoint("records.manifest")
        try:
            _write_on_disk(store, new, supersede)
        except BaseException:
            batch.end(store.root)  # undone in every store by _write_on_disk
            raise
        failpoint("records.committed")
        if mark:
            mark_written(store, mark)
        failpoint("records.watermark")
        batch.end(store.root)
        failpoint("records.done")
    return len(new)


def record_row_docs(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`record_docs` for record rows (dicts of the records table)."""
    return [
        {
            "doc_id": r["entry_id"],
            "kind": "record",
            "group_id": r["group_id"],
            "speaker": r["source"],
            "owner": r["owner"],
            "layer": r["layer"],
            "session_id": r["session_id"],
            "text": f"{r['content']} {r['event'] or ''}".strip(),
            "ts": r["valid_at"],
        }
        for r in rows
    ]


def recover_records(store: Any, man: dict[str, Any]) -> dict[str, Any]:
    """Finish an interrupted records batch: the Kuzu commit decides (see ``GroupStore.recover``)."""
    ids = list(man.get("new", []))
    graph = store.graph
    found = {
        r["id"]: r["sb"]
        for r in graph.rows(
            "MATCH (r:Record) WHERE r.entry_id IN $ids RETURN r.entry_id AS id, r.superseded_by AS "
            "sb",
            {"ids": ids},
        )
    }
    links = [tuple(x) for x in man.get("supersede", [])]
    closed = (
        {
            r["id"]: r["sb"]
            for r in graph.rows(
                "MATCH (r:Record) WHERE r.entry_id IN $ids RETURN r.entry_id AS id, "
                "r.superseded_by AS sb",
                {"ids": [o for o, _ in links]},
            )
        }
        if links
        else {}
    )
    committed = len(found) == len(ids) and all(closed.get(o) == n for o, n in links)
    if ids and found and not committed and len(found) != len(ids):
        raise RuntimeError(
            f"group {store.group_id!r}: records batch half in the graph "
            f"({len(found)} of {len(ids)}); Kuzu transactions should make this impossible"
        )
    store.set_records_table(None)
    if committed:
        rows = [r for r in store.records().to_pylist() if r["entry_id"] in set(ids)]
        store.index.replace_columns(_columns(record_row_docs(rows)))
        if man.get("mark"):
            mark_written(store, man["mark"])
        return {"action": "rolled forward", "records": len(ids)}
    if ids:
        store.index.delete(ids)
    return {"action": "rolled back", "records": len(ids)}


def _columns(docs: list[dict[str, Any]]) -> dict[str, list[Any]]:
    names = ("doc_id", "kind", "group_id", "speaker", "owner", "layer", "session_id", "text", "ts")
    return {k: [d.get(k) for d in docs] for k in names} if docs else {}


def _write_in_memory(
    store: Any, new: Sequence[KnowledgeItem], supersede: Sequence[tuple[str, str, datetime]]
) -> None:
    closing = {old: (nid, t) for old, nid, t in supersede}
    rows = []
    for r in all_records(store):
        if r["entry_id"] in closing:
            r = {
                **r,
                "superseded_by": closing[r["entry_id"]][0],
                "invalid_at": closing[r["entry_id"]][1],
            }
        rows.append(r)
    rows.extend(r.model_dump() for r in new)
    store.index.add(record_docs(new))
    if hasattr(store, "set_record_rows"):
        store.set_record_rows(rows)
    else:
        store.set_records_table(pa.Table.from_pylist(rows, schema=RECORD_SCHEMA))


def _write_on_disk(
    store: Any, new: Sequence[KnowledgeItem], supersede: Sequence[tuple[str, str, datetime]]
) -> None:
    graph = store.graph
    rows = naive_utc(to_table(list(new), KnowledgeItem)).to_pylist() if new else []
    links = [{"old": o, "new": n, "t": utc(t).replace(tzinfo=None)} for o, n, t in supersede]
    graph.execute("BEGIN TRANSACTION")
    try:
        if rows:
            graph.execute(f"UNWIND $rows AS row CREATE (r:Record {{{_PROPS}}})", {"rows": rows})
            graph.execute(
                "UNWIND $rows AS row MATCH (r:Record {entry_id: row.entry_id}) "
                "UNWIND row.from_ids AS mid MATCH (m:Message {msg_id: mid}) CREATE "
                "(r)-[:FROM_MSG]->(m)",
                {"rows": rows},
            )
            chained = [
                {"new": r["entry_id"], "old": r["supersedes"]} for r in rows if r["supersedes"]
            ]
            if chained:  # old states in the store or in this batch
                graph.execute(
                    "UNWIND $links AS l MATCH (o:Record {entry_id: l.old}), (n:Record {entry_id: "
                    "l.new}) "
                    "CREATE (n)-[:SUPERSEDES]->(o)",
                    {"links": chained},
                )
        if links:
            graph.execute(
                "UNWIND $links AS l MATCH (o:Record {entry_id: l.old}) "
                "SET o.superseded_by = l.new, o.invalid_at = l.t",
                {"links": links},
            )
        store.index.add(record_docs(new))
        failpoint("records.indexed")
    except BaseException:
        try:
            graph.execute("ROLLBACK")
        except RuntimeError:  # Kuzu already rolled back a failed statement's transaction
            pass
        raise
    try:
        graph.execute("COMMIT")
    except BaseException:
        store.index.delete([r.entry_id for r in new])
        raise
    finally:
        store.set_records_table(None)


#: A RecordBuffer waits for the end of a session before an automatic flush, but flushes
#: anyway after this many times ``flush_every`` segments (very long sessions).
SESSION_FLUSH_CAP = 8


class RecordBuffer:
    """Stage records of many segments in memory, then write them to the store in one batch.

    It looks like a writable in-memory store to the write path (``records()``, ``roster()``,
    ``aliases()``, ``messages()``, ``group_id``), so the Writer of a later segment sees the
    heads an earlier one staged. :meth:`flush` writes what is staged with one Kuzu
    transaction and one Tantivy commit (all or nothing), which is much faster on disk
    than a commit per segment.

    The watermark is staged too (:func:`mark_written`): message ids join the store's
    watermark only when the records written from them are flushed. With ``flush_every``
    set, the buffer flushes by itself after that many :func:`mark_written` calls (the
    Upsert operator makes one per batch, i.e. one per segment under
    ``ForEach("segment_id", ...)``), at the end of a session (so that a run resumed after
    a crash cuts the same segments; at the latest after ``SESSION_FLUSH_CAP`` times as
    many); call :meth:`flush` once more at the end.
    """

    in_memory = True

    def __init__(self, store: Any, flush_every: int | None = None):
        if flush_every is not None and flush_every < 1:
            raise ValueError(
                "flush_every must be >= 1 batch (or None: flush only when asked), got "
                f"{flush_every}"
            )
        self.store = store
        self.group_id = store.group_id
        self.flush_every = flush_every
        msgs = store.messages()
        self._session_of = dict(
            zip(msgs["msg_id"].to_pylist(), msgs["session_id"].to_pylist(), strict=True)
        )
        self._session_msgs: dict[str, list[str]] = {}
        for mid, sid in self._session_of.items():
            self._session_msgs.setdefault(sid, []).append(mid)
        self._load()
        self.index = _DiscardIndex()

    def _load(self) -> None:
        self._rows = self.store.records().to_pylist()
        self._original = {r["entry_id"]: r["superseded_by"] for r in self._rows}
        self._written = set(self.store.meta(WRITTEN_KEY, []))
        self._staged: list[str] = []
        self._batches = 0

    def written_ids(self) -> set[str]:
        """The store's watermark plus the message ids staged since the last flush."""
        return self._written

    def mark_written(self, msg_ids: Sequence[str]) -> None:
        """Stage message ids for the watermark; flushes when ``flush_every`` batches are staged."""
        fresh = [m for m in msg_ids if m not in self._written]
        self._written.update(fresh)
        self._staged.extend(fresh)
        self._batches += 1
        if (
            self.flush_every is not None
            and self._batches >= self.flush_every
            and (
                self._session_complete(msg_ids)
                or self._batches >= SESSION_FLUSH_CAP * self.flush_every
            )
        ):
            self.flush()

    def _session_complete(self, msg_ids: Sequence[str]) -> bool:
        """True if the session of the last segment is now wholly in the watermark: a flush
        there leaves a resume (after a crash) starting at a session start, so it cuts the
        same segments, with the same ids, as an uninterrupted run."""
        sid = self._session_of.get(msg_ids[-1]) if msg_ids else None
        return sid is None or all(m in self._written for m in self._session_msgs.get(sid, ()))

    def records(self) -> pa.Table:
        return pa.Table.from_pylist(self._rows, schema=RECORD_SCHEMA)

    def record_rows(self) -> list[dict[str, Any]]:
        return self._rows

    def set_record_rows(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows

    def roster(self) -> list[str]:
        return self.store.roster()

    def aliases(self) -> dict[str, list[str]]:
        return self.store.aliases()

    def messages(self) -> pa.Table:
        return self.store.messages()

    def _require_writable(self) -> None:
        self.store._require_writable()

    @property
    def pending(self) -> int:
        """Records staged and not yet flushed."""
        return len(self._rows) - len(self._original)

    def flush(self) -> int:
        """Write the staged records (and close the stored heads they supersede), then add the
        staged message ids to the store's watermark; returns records written."""
        rows = self._rows
        new = [KnowledgeItem.model_validate(r) for r in rows if r["entry_id"] not in self._original]
        closing = [
            (r["entry_id"], r["superseded_by"], r["invalid_at"])
            for r in rows
            if r["entry_id"] in self._original
            and r["superseded_by"]
            and not self._original[r["entry_id"]]
        ]
        written = write_records(self.store, new, closing, mark=self._staged)
        self._load()
        return written


class _DiscardIndex:
    """The buffer's index: documents are indexed by the store at flush time."""

    def add(self, docs: list[dict[str, Any]]) -> None:
        pass

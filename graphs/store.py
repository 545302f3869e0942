"""One store per group: the verbatim track (Parquet + Kuzu + Tantivy) and derived records.

``<home>/groups/<group_id>/`` holds ``graph.kuzu`` (the temporal graph), ``index/`` (BM25),
``messages/part-*.parquet`` (the append-only verbatim track) and ``group.json`` (roster).
A group is the unit of isolation, of write serialisation (one writer process, enforced by
a lock file and by Kuzu itself) and of parallelism (groups run in parallel processes).
Appending is in :mod:`.append`, crash recovery and repairs in :mod:`.recovery`.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from speakerflow.schemas import MESSAGE_SCHEMA, RECORD_SCHEMA
from speakerflow.settings import setting

from . import append, batch, recovery
from .tables import (
    MESSAGE_ORDER,
    GroupBusyError,
    IngestResult,
    StoreError,
    check_group_id,
    conform,
    utc_columns,
)
from .text_index import Hit, InMemoryIndex, SearchFilter, TantivyIndex


class GroupStore:
    """A group's store. Open it with :meth:`Home.open`; close it (or use ``with``)."""

    def __init__(
        self,
        root: Path,
        group_id: str,
        writable: bool = True,
        in_memory: bool = False,
        wait_s: float | None = None,
    ):
        self.group_id = check_group_id(group_id)
        self.root = Path(root)
        self.writable = writable
        self.in_memory = in_memory
        self._lock_fd: int | None = None
        self._graph: Any = None
        self._index = InMemoryIndex() if in_memory else None
        self._messages: pa.Table | None = MESSAGE_SCHEMA.empty_table() if in_memory else None
        self._records: pa.Table | None = RECORD_SCHEMA.empty_table() if in_memory else None
        self._meta: dict[str, Any] = {"group_id": group_id, "roster": []}
        #: what :meth:`recover` did when this writable store was opened (``None``: nothing to do)
        self.recovered: dict[str, Any] | None = None
        #: wall seconds per step of :meth:`append_messages`, summed (see :meth:`ingest_profile`)
        self.timings: dict[str, float] = defaultdict(float)
        if not in_memory:
            if writable:
                self.root.mkdir(parents=True, exist_ok=True)
                self._acquire_lock(wait_s)
            elif not self.root.exists():
                raise StoreError(f"group {group_id!r} has no store under {self.root.parent}")
            meta = self.root / "group.json"
            if meta.exists():
                self._meta = json.loads(meta.read_text())
            if writable:
                try:
                    self.recovered = self.recover()
                except BaseException:
                    self.close()
                    raise

    @property
    def _messages(self) -> pa.Table | None:
        """The cached messages table (``None``: read the Parquet parts on next use)."""
        return self.__dict__.get("_messages_table")

    @_messages.setter
    def _messages(self, table: pa.Table | None) -> None:
        # any change of the cached table (an append, a forget) also drops the id column cache
        self.__dict__["_messages_table"] = table
        self.__dict__["_stored_ids"] = None

    def _msg_ids(self) -> pa.ChunkedArray:
        """Every stored message id (a column, any order): the messages table's when it is
        loaded, else the ``msg_id`` column of the Parquet parts, read once and then extended
        by each append (an append does not read or sort the whole group)."""
        if self._messages is not None:
            return self._messages["msg_id"]
        ids = self.__dict__.get("_stored_ids")
        if ids is None:
            parts = sorted((self.root / "messages").glob("part-*.parquet"))
            man = None if self.writable else self.pending_batch()
            if man and man.get("kind") == "messages":
                parts = [p for p in parts if p.name != man["part"]]
            chunks = [
                c for p in parts for c in pq.read_table(p, columns=["msg_id"])["msg_id"].chunks
            ]
            ids = pa.chunked_array(chunks, pa.string())
            if man and man.get("hide"):
                ids = ids.filter(pc.invert(pc.is_in(ids, pa.array(man["hide"], pa.string()))))
            self.__dict__["_stored_ids"] = ids
        return ids

    # -- lifecycle ----------------------------------------------------------------------
    def _acquire_lock(self, wait_s: float | None = None) -> None:
        """Take the group's writer lock, waiting up to ``wait_s`` seconds (default
        ``$SPEAKERFLOW_LOCK_WAIT``, else 0: fail at once) for another writer to finish."""
        if wait_s is None:
            wait_s = setting("lock_wait")
        fd = os.open(self.root / ".writer.lock", os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + max(0.0, wait_s)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                os.close(fd)
                waited = f" (waited {wait_s:g} s)" if wait_s > 0 else ""
                raise GroupBusyError(
                    f"group {self.group_id!r} is being written by another process{waited}; "
                    "groups are written by one process at a time (run different groups in "
                    "parallel, "
                    "or wait longer: SPEAKERFLOW_LOCK_WAIT=seconds)"
                ) from None
        self._lock_fd = fd

    def close(self) -> None:
        """Close the graph and index and release the writer lock."""
        if self._graph is not None:
            self._graph.close()
            self._graph = None
        if self._index is not None:
            # dropped, not only closed: Tantivy's reader watches the index folder from a thread
            # of its own (a reload after a change takes the meta lock, a file in the folder),
            # so a closed store holding it could still write there, e.g. while the folder
            # is being removed
            self._index.close()
            self._index = None
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> GroupStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- components ---------------------------------------------------------------------
    @property
    def graph(self):
        """The group's :class:`~speakerflow.graphs.KuzuGraph` (opened on first use)."""
        if self.in_memory:
            raise StoreError("an in-memory store has no Kuzu graph")
        if self._graph is None:
            from .kuzu_graph import KuzuGraph

            path = self.root / "graph.kuzu"
            if not self.writable and not path.exists():
                raise StoreError(f"group {self.group_id!r} has no graph yet; ingest first")
            self._graph = KuzuGraph(path, read_only=not self.writable)
        return self._graph

    @property
    def index(self):
        """The group's text index (Tantivy, or in-memory BM25 for an in-memory store)."""
        if self._index is None:
            # a writable store keeps one index writer until it is closed: its merges run in
            # the background of the next appends (``SPEAKERFLOW_INDEX_KEEP_WRITER=0``: one
            # writer per commit, waiting for its merges)
            keep = setting("index_keep_writer")
            self._index = TantivyIndex(self.root / "index", self.writable, keep_writer=keep)
        return self._index

    def _require_writable(self) -> None:
        if not self.writable:
            raise PermissionError(f"group {self.group_id!r} was opened read-only")

    # -- roster -------------------------------------------------------------------------
    def roster(self) -> list[str]:
        """Speaker names of this group, in order of first appearance."""
        return [p["name"] for p in self._meta["roster"]]

    def aliases(self) -> dict[str, list[str]]:
        """Aliases per roster name (configured, never guessed here)."""
        return {p["name"]: list(p.get("aliases", [])) for p in self._meta["roster"]}

    def _save_meta(self) -> None:
        if self.in_memory:
            return
        tmp = self.root / "group.json.tmp"
        tmp.write_text(json.dumps(self._meta, indent=1, sort_keys=True))
        tmp.replace(self.root / "group.json")

    # -- System 1: the verbatim track ---------------------------------------------------
    def messages(self) -> pa.Table:
        """All messages of the group, ordered by (ts, session, turn)."""
        if self._messages is None:
            parts = sorted((self.root / "messages").glob("part-*.parquet"))
            man = None if self.writable else self.pending_batch()
            if man and man.get("kind") == "messages":
                parts = [p for p in parts if p.name != man["part"]]
            hide = pa.array(man.get("hide", []) if man else [], pa.string())
            tables = [pq.read_table(p) for p in parts]
            table = pa.concat_tables(tables) if tables else MESSAGE_SCHEMA.empty_table()
            if len(hide):
                table = table.filter(pc.invert(pc.is_in(table["msg_id"], hide)))
            self._messages = table.sort_by(MESSAGE_ORDER)
        return self._messages

    def append_messages(self, table: pa.Table) -> IngestResult:
        """Append messages; rows whose ``msg_id`` is already stored are skipped (idempotent),
        all or nothing, also across a crash (:func:`.append.append_messages`)."""
        return append.append_messages(self, table)

    def _add_speakers(self, names: list[str]) -> None:
        known = set(self.roster())
        added = False
        for name in names:
            if name not in known:
                known.add(name)
                self._meta["roster"].append({"name": name, "aliases": []})
                added = True
        if (
            added or not (self.root / "group.json").exists()
        ):  # group.json (and its watermark) only rewritten on change
            self._save_meta()

    def ingest_profile(self) -> dict[str, float]:
        """Wall seconds per step of the appends so far (this store object): ``validate``
        (columns cast and checked), ``dedup``, ``parquet`` (the staged part), ``manifest``
        (written, the part renamed, removed), ``open_stores`` (Kuzu and Tantivy opened),
        ``index`` (the Tantivy write, beside the COPY: ``index.docs`` JSON lines and keys,
        ``index.add``, ``index.commit``, ``index.merge_wait``), ``kuzu_copy`` (the COPY's own
        time, in its thread), ``kuzu_wait`` (the COPY still running after the index was
        done), ``roster``. The wall time of an append is about the sum without
        ``kuzu_copy`` and the ``index.*`` parts."""
        out = dict(self.timings)
        if self._index is not None and hasattr(self._index, "timings"):
            out.update(self._index.timings)
        return {k: round(v, 3) for k, v in sorted(out.items())}

    def rebuild_index(self) -> int:
        """Rewrite the text index from the stores of record; returns the documents written
        (:func:`.recovery.rebuild_index`)."""
        return recovery.rebuild_index(self)

    def compact_graph(self) -> dict[str, int] | None:
        """Rewrite ``graph.kuzu`` as a fresh copy of what it holds
        (:func:`.recovery.compact_graph`)."""
        return recovery.compact_graph(self)

    # -- crash recovery -----------------------------------------------------------------
    def pending_batch(self) -> dict[str, Any] | None:
        """The manifest of a batch that has not finished (being written, or interrupted)."""
        return None if self.in_memory else batch.pending(self.root)

    def recover(self) -> dict[str, Any] | None:
        """Complete or roll back an interrupted batch (run by every writable open; see
        :func:`.recovery.recover`). Returns what was done, or ``None``."""
        return recovery.recover(self)

    def _hidden_ids(self) -> set[str]:
        """Ids a reader must not see: those of a batch that has not finished."""
        man = self.pending_batch()
        if not man:
            return set()
        if man.get("kind") == "messages":
            folder = self.root / "messages"
            for path in (folder / f".{man['part']}.tmp", folder / man["part"]):
                if path.exists():
                    try:
                        return set(pq.read_table(path, columns=["msg_id"])["msg_id"].to_pylist())
                    except (OSError, pa.ArrowInvalid):
                        return set()
            return set()
        return set(man.get("new", [])) | set(man.get("hide", []))

    # -- System 2: derived records ------------------------------------------------------
    def records(self) -> pa.Table:
        """All derived records / knowledge items of the group (heads and superseded)."""
        if self._records is None:
            from .kuzu_graph import NODE_TABLES  # noqa: F401 - schema owner

            path = self.root / "graph.kuzu"
            if not path.exists():
                return RECORD_SCHEMA.empty_table()
            cols = ", ".join(f"r.{n} AS {n}" for n in RECORD_SCHEMA.names)
            raw = self.graph.arrow(f"MATCH (r:Record) RETURN {cols} ORDER BY r.write_order")
            table = conform(utc_columns(raw), RECORD_SCHEMA, f"group {self.group_id!r} records")
            hidden = set() if self.writable else self._hidden_ids()
            if hidden:  # a reader does not see the records of an unfinished batch
                table = table.filter(
                    pc.invert(pc.is_in(table["entry_id"], pa.array(sorted(hidden), pa.string())))
                )
            self._records = table
        return self._records

    def set_records_table(self, table: pa.Table | None) -> None:
        """Replace the cached records table (in-memory store: the table itself); ``None``
        makes the next :meth:`records` call re-read the graph (after a write)."""
        if self.in_memory and table is None:
            raise StoreError("an in-memory store keeps its records table; pass the new table")
        self._records = table

    def meta(self, key: str, default: Any = None) -> Any:
        """A value saved in ``group.json`` (writer watermark ...), or ``default``."""
        return self._meta.get(key, default)

    def set_meta(self, key: str, value: Any) -> None:
        """Save a JSON-able value in ``group.json`` (roster and group id are not settable)."""
        self._require_writable()
        if key in ("group_id", "roster"):
            raise StoreError(f"group.json field {key!r} is managed by the store")
        self._meta[key] = value
        self._save_meta()

    def search(self, query: str, k: int = 10, flt: SearchFilter | None = None) -> list[Hit]:
        """BM25 search within this group only (a reader skips a batch still being written)."""
        hidden = set() if self.writable else self._hidden_ids()
        if not hidden:
            return self.index.search(query, k, flt)
        return [
            h for h in self.index.search(query, k + len(hidden), flt) if h.doc_id not in hidden
        ][:k]

    def search_keys(
        self, query: str, k: int = 10, flt: SearchFilter | None = None
    ) -> tuple[list[int], list[float]] | None:
        """:meth:`search` as (:func:`~speakerflow.graphs.text_index.doc_key` of each hit,
        scores), without fetching each hit's stored id; ``None`` when the index has no keys
        or a reader must hide a batch still being written (then use :meth:`search`)."""
        if not self.writable and self._hidden_ids():
            return None
        return self.index.search_keys(query, k, flt)

    def stats(self) -> dict[str, int]:
        """Counts of messages, speakers, sessions and records."""
        msgs = self.messages()
        return {
            "messages": msgs.num_rows,
            "speakers": len(self.roster()),
            "sessions": pc.count_distinct(msgs["session_id"]).as_py(),
            "records": self.records().num_rows,
        }

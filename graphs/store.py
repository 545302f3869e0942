"""One store per group: the verbatim track (Parquet + Kuzu + Tantivy) and derived records.

``<home>/groups/<group_id>/`` holds ``graph.kuzu`` (the temporal graph), ``index/`` (BM25),
``messages/part-*.parquet`` (the append-only verbatim track) and ``group.json`` (roster).
A group is the unit of isolation, of write serialisation (one writer process, enforced by
a lock file and by Kuzu itself) and of parallelism (groups run in parallel processes).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from speakerflow.schemas import MESSAGE_SCHEMA, RECORD_SCHEMA

from . import batch
from .batch import failpoint
from .text_index import Hit, InMemoryIndex, SearchFilter, TantivyIndex, index_threads

GROUP_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
#: the order of :meth:`GroupStore.messages`
MESSAGE_ORDER = [("ts", "ascending"), ("session_id", "ascending"), ("turn", "ascending")]


class GroupBusyError(RuntimeError):
    """Another process is writing this group's store."""


class StoreError(ValueError):
    """Input that would corrupt the store (wrong group, bad columns); nothing was written."""


def check_group_id(group_id: str) -> str:
    """Return ``group_id`` if it is a safe folder name, else raise :class:`StoreError`."""
    if not isinstance(group_id, str) or not GROUP_ID.match(group_id):
        raise StoreError(
            f"invalid group id {group_id!r}: use letters, digits, '.', '_' or '-' (max 128), "
            "starting with a letter or digit"
        )
    return group_id


@dataclass
class IngestResult:
    """What one append did: rows ``added``, rows ``skipped`` as already stored."""

    group_id: str
    added: int = 0
    skipped: int = 0
    new_speakers: list[str] = field(default_factory=list)


def conform(table: pa.Table, schema: pa.Schema, what: str) -> pa.Table:
    """Select and cast ``table`` to ``schema``; missing nullable columns become nulls."""
    cols = []
    for f in schema:
        if f.name in table.column_names:
            try:
                cols.append(table[f.name].cast(f.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise StoreError(
                    f"{what}: column '{f.name}' cannot be read as {f.type}: {exc}"
                ) from None
        elif f.nullable:
            cols.append(pa.nulls(table.num_rows, f.type))
        else:
            raise StoreError(f"{what}: required column '{f.name}' is missing")
    out = pa.Table.from_arrays(cols, schema=schema)
    for f in schema:
        if not f.nullable and out[f.name].null_count:
            row = pc.index(pc.is_null(out[f.name]), True).as_py()
            raise StoreError(f"{what}: row {row}: field '{f.name}' is empty but required")
    return out


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
            wait_s = float(os.environ.get("SPEAKERFLOW_LOCK_WAIT") or 0)
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
            self._index.close()
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
            keep = os.environ.get("SPEAKERFLOW_INDEX_KEEP_WRITER", "1") == "1"
            self._index = TantivyIndex(
                self.root / "index", writable=self.writable, keep_writer=keep
            )
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

    def set_aliases(self, name: str, aliases: list[str]) -> None:
        """Record aliases for a roster member (``Mum`` -> ``Mother``)."""
        self._require_writable()
        for p in self._meta["roster"]:
            if p["name"] == name:
                p["aliases"] = sorted(set(aliases))
                self._save_meta()
                return
        raise StoreError(f"{name!r} is not in the roster of group {self.group_id!r}")

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
        """Append messages; rows whose ``msg_id`` is already stored are skipped (idempotent).

        All or nothing, also across a crash: the batch is checked first, staged as a Parquet
        temp part, recorded in a batch manifest (``batch.json``), then written to Kuzu (one
        COPY), Tantivy (one commit), the part renamed into place and the roster saved; the
        manifest is removed last. A failure in a step undoes the earlier ones; a process
        killed in between is completed on the next writable open (:meth:`recover`).
        """
        self._require_writable()
        t0 = time.perf_counter()
        where = f"group {self.group_id!r}"
        table = conform(table, MESSAGE_SCHEMA, where)
        bad = pc.not_equal(table["group_id"], self.group_id)
        if pc.any(bad).as_py():
            row = pc.index(bad, True).as_py()
            raise StoreError(
                f"{where}: row {row}: field 'group_id' is {table['group_id'][row].as_py()!r}; "
                "a group's store only takes its own messages"
            )
        t1 = time.perf_counter()
        self.timings["validate"] += t1 - t0
        keep, repeats = self._new_rows(table["msg_id"])
        if len(
            repeats
        ):  # a repeat is skipped only if it is the same message, never silently replaced
            self._check_repeats(table, keep, repeats, where)
        result = IngestResult(self.group_id, added=len(keep), skipped=table.num_rows - len(keep))
        if not len(keep):
            self.timings["dedup"] += time.perf_counter() - t1
            return result
        new = table.take(pa.array(keep)) if len(keep) < table.num_rows else table
        known = set(self.roster())
        result.new_speakers = [s for s in pc.unique(new["speaker"]).to_pylist() if s not in known]
        before = self._msg_ids()
        self.timings["dedup"] += time.perf_counter() - t1
        self._write_messages(new)
        if not self.in_memory:  # the id column grows by the batch; nothing is re-read
            self.__dict__["_stored_ids"] = pa.chunked_array(
                [*before.chunks, *new["msg_id"].chunks], pa.string()
            )
        return result

    def _new_rows(self, ids: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of a batch to write (first time an id is seen: neither stored nor earlier in
        the batch) and rows to skip, found column-wise: the stored ids are probed against a
        hash of the batch's (``pc.is_in``), not loaded into a Python set."""
        stored = self._msg_ids()
        batch_ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
        hits = stored.filter(pc.is_in(stored, value_set=batch_ids)) if len(stored) else stored
        old = (
            pc.is_in(batch_ids, value_set=hits.combine_chunks()).to_numpy(zero_copy_only=False)
            if len(hits)
            else np.zeros(len(batch_ids), dtype=bool)
        )
        first = np.ones(len(batch_ids), dtype=bool)
        distinct = pc.unique(batch_ids)
        if len(distinct) < len(
            batch_ids
        ):  # repeats inside the batch: only the first occurrence counts
            code = pc.index_in(batch_ids, value_set=distinct).to_numpy()
            at = np.full(len(distinct), len(batch_ids))
            np.minimum.at(at, code, np.arange(len(batch_ids)))
            first[:] = False
            first[at] = True
        fresh = first & ~old
        return np.flatnonzero(fresh), np.flatnonzero(~fresh)

    def _check_repeats(
        self, table: pa.Table, keep: np.ndarray, repeats: np.ndarray, where: str
    ) -> None:
        """Raise :class:`StoreError` when a repeated id comes with another text than the
        stored one (or than its first occurrence in the batch)."""
        ids, texts = table["msg_id"].to_pylist(), table["text"].to_pylist()
        wanted = pa.array(sorted({ids[i] for i in repeats}), pa.string())
        stored = self.messages()
        have = stored.filter(pc.is_in(stored["msg_id"], value_set=wanted))
        known = dict(zip(have["msg_id"].to_pylist(), have["text"].to_pylist(), strict=True))
        first: dict[str, str] = {}
        for i in keep:
            first.setdefault(ids[i], texts[i])
        for i in repeats:
            old = known.get(ids[i], first.get(ids[i]))
            if old != texts[i]:
                raise StoreError(
                    f"{where}: row {i}: field 'msg_id' {ids[i]!r} is already stored with "
                    "different text; messages are immutable (nothing was written)"
                )

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

    @staticmethod
    def _index_columns(new: pa.Table) -> dict[str, list]:
        n = new.num_rows
        return {
            "doc_id": new["msg_id"].to_pylist(),
            "kind": ["message"] * n,
            "group_id": new["group_id"].to_pylist(),
            "speaker": new["speaker"].to_pylist(),
            "session_id": new["session_id"].to_pylist(),
            "text": new["text"].to_pylist(),
            "ts": new["ts"].to_pylist(),
        }

    def _next_part(self) -> str:
        folder = self.root / "messages"
        nums = [
            int(p.stem.split("-")[1])
            for p in folder.glob("part-*.parquet")
            if p.stem.split("-")[1].isdigit()
        ]
        return f"part-{(max(nums) + 1) if nums else 0:06d}.parquet"

    @staticmethod
    def _index_table(new: pa.Table) -> pa.Table:
        """The text index's fields of messages as Arrow columns (see :meth:`_index_columns`)."""
        return pa.table(
            {
                "doc_id": new["msg_id"],
                "kind": pa.repeat("message", new.num_rows).cast(pa.string()),
                "group_id": new["group_id"],
                "speaker": new["speaker"],
                "session_id": new["session_id"],
                "text": new["text"],
                "ts": new["ts"],
            }
        )

    def _write_messages(self, new: pa.Table) -> None:
        speakers = pc.unique(new["speaker"]).to_pylist()  # in order of first appearance
        if self.in_memory:
            columns = self._index_columns(new)
            self.index.add(
                [
                    dict(zip(columns, row, strict=True))
                    for row in zip(*columns.values(), strict=True)
                ]
            )
            self._messages = pa.concat_tables([self._messages, new]).sort_by(MESSAGE_ORDER)
            self._add_speakers(speakers)
            return
        timings, clock = self.timings, time.perf_counter
        t0 = clock()
        folder = self.root / "messages"
        folder.mkdir(exist_ok=True)
        part = self._next_part()
        final = folder / part
        tmp = folder / f".{part}.tmp"
        pq.write_table(new, tmp, compression="zstd")  # ~2x smaller than snappy on chat text
        failpoint("messages.staged")
        t1 = clock()
        batch.begin(self.root, {"kind": "messages", "part": part, "rows": new.num_rows})
        failpoint("messages.manifest")
        t2 = clock()
        timings["parquet"] += t1 - t0
        timings["manifest"] += t2 - t1
        graph = self.graph  # open in this thread; the COPY runs beside the Tantivy indexing
        index = self.index
        # Kuzu's COPY and Tantivy's indexing both release the GIL: the cores not taken by
        # the index writer's threads go to the COPY
        kuzu_threads = max(1, (os.cpu_count() or 1) - index_threads())

        def copy() -> None:
            c0 = clock()
            graph.copy_nodes("Message", new, threads=kuzu_threads)
            timings["kuzu_copy"] += clock() - c0

        t3 = clock()
        timings["open_stores"] += t3 - t2
        with ThreadPoolExecutor(max_workers=1) as pool:
            copied = pool.submit(copy)
            try:
                index.add_table(self._index_table(new))  # rolls itself back on error
                index_error = None
            except BaseException as exc:  # noqa: BLE001 - re-raised below after undoing the graph
                index_error = exc
            t4 = clock()
            graph_error = copied.exception()
        t5 = clock()
        timings["index"] += t4 - t3
        timings["kuzu_wait"] += t5 - t4  # the COPY still running when the index was done
        if graph_error is not None or index_error is not None:
            ids = new["msg_id"].to_pylist()
            if graph_error is None:
                graph.execute(
                    "MATCH (m:Message) WHERE m.msg_id IN $ids DETACH DELETE m", {"ids": ids}
                )
            if index_error is None:
                self.index.delete(ids)
            tmp.unlink(missing_ok=True)
            batch.end(self.root)
            if graph_error is not None:
                raise graph_error
            assert index_error is not None  # one of the two failed
            raise index_error
        failpoint("messages.indexed")
        tmp.replace(final)
        if self._messages is not None:
            # the cached table gains the part's rows: what re-reading every part would give
            # (a stable sort), without reading them all again on each append
            self._messages = pa.concat_tables(
                [self._messages, new.cast(self._messages.schema)]
            ).sort_by(MESSAGE_ORDER)
        failpoint("messages.renamed")
        t6 = clock()
        self._add_speakers(speakers)
        failpoint("messages.roster")
        t7 = clock()
        batch.end(self.root)
        failpoint("messages.done")
        timings["roster"] += t7 - t6
        timings["manifest"] += clock() - t7 + t6 - t5  # the rename and the manifest's removal

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
        """Rewrite the text index from the stores of record (Parquet messages, Kuzu records);
        returns the documents written. Old segment files are deleted."""
        from .records import _columns, record_row_docs

        msgs = self._index_columns(self.messages())
        recs = _columns(record_row_docs(self.records().to_pylist()))
        columns = {
            k: msgs.get(k, [None] * len(msgs["doc_id"])) + recs.get(k, [])
            for k in (
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
        }
        self.index.rebuild(columns)
        return len(columns["doc_id"])

    def compact_graph(self) -> dict[str, int] | None:
        """Rewrite ``graph.kuzu`` as a fresh copy of what it holds (so deleted rows leave no
        bytes behind), swapped in with one rename; ``None`` if there is no graph or its
        write-ahead log was not empty on close (then the old file is kept)."""
        path = self.root / "graph.kuzu"
        if self.in_memory or not path.exists():
            return None
        tmp = self.root / "graph.kuzu.compact"
        for stale in self.root.glob("graph.kuzu.compact*"):
            stale.unlink()
        counts = self.graph.copy_into(tmp)
        failpoint("compact.copied")
        self._graph.close()
        self._graph = None
        if any(p.stat().st_size for p in self.root.glob("graph.kuzu.wal*")) or any(
            self.root.glob("graph.kuzu.compact.wal*")
        ):
            for stale in self.root.glob("graph.kuzu.compact*"):
                stale.unlink()
            return None
        tmp.replace(path)
        for wal in self.root.glob("graph.kuzu.wal*"):
            wal.unlink()
        self._records = None
        return counts

    # -- crash recovery -----------------------------------------------------------------
    def pending_batch(self) -> dict[str, Any] | None:
        """The manifest of a batch that has not finished (being written, or interrupted)."""
        return None if self.in_memory else batch.pending(self.root)

    def recover(self) -> dict[str, Any] | None:
        """Complete or roll back an interrupted batch (run by every writable open).

        Messages roll forward: the staged Parquet part is the record of truth; the graph gets
        the rows it lacks, the index is rewritten for those ids, the part renamed, the
        roster saved. Records roll forward if the Kuzu transaction committed (the index and
        watermark are completed), else back (index documents removed). Forget batches are
        re-run (every step is idempotent). Returns what was done, or ``None``.
        """
        if self.in_memory:
            return None
        for stray in (
            (self.root / "messages").glob(".part-*.tmp")
            if (self.root / "messages").exists()
            else ()
        ):
            man = batch.pending(self.root)
            if not man or man.get("kind") != "messages" or stray.name != f".{man.get('part')}.tmp":
                stray.unlink()  # staged before its manifest was written: never part of a batch
        man = batch.pending(self.root)
        if man is None:
            return None
        kind = man.get("kind")
        if kind == "messages":
            done = self._recover_messages(man)
        elif kind == "records":
            from .records import recover_records

            done = recover_records(self, man)
        elif kind == "forget":
            from .forget import recover_forget

            done = recover_forget(self, man)
        elif kind == "facts":
            from .facts import recover_facts

            done = recover_facts(self, man)
        else:
            raise StoreError(
                f"group {self.group_id!r}: unknown batch kind {kind!r} in {batch.MANIFEST}"
            )
        batch.end(self.root)
        self._messages = None
        self._records = None
        return {"kind": kind, **done}

    def _recover_messages(self, man: dict[str, Any]) -> dict[str, Any]:
        folder = self.root / "messages"
        final, tmp = folder / man["part"], folder / f".{man['part']}.tmp"
        path = tmp if tmp.exists() else final
        if not path.exists():  # nothing staged survived: nothing of the batch can be anywhere
            return {"action": "none"}
        new = pq.read_table(path)
        ids = new["msg_id"].to_pylist()
        graph = self.graph
        have = {
            r["id"]
            for r in graph.rows(
                "MATCH (m:Message) WHERE m.msg_id IN $ids RETURN m.msg_id AS id", {"ids": ids}
            )
        }
        missing = [i for i, mid in enumerate(ids) if mid not in have]
        if missing:
            graph.copy_nodes("Message", new.take(pa.array(missing)))
        self.index.replace_columns(self._index_columns(new))
        if tmp.exists():
            tmp.replace(final)
        self._add_speakers(pc.unique(new["speaker"]).to_pylist())
        return {"action": "rolled forward", "rows": len(ids), "graph_rows_added": len(missing)}

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
            table = conform(_utc_columns(raw), RECORD_SCHEMA, f"group {self.group_id!r} records")
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


def message_texts(root: str | Path, ids: list[str]) -> dict[str, str]:
    """The text of each of the messages ``ids`` of the group stored at ``root``, read from
    its Parquet parts (the record of truth; the graph keeps no text): only the ``msg_id``
    and ``text`` columns, filtered by id. Ids not stored are left out."""
    folder = Path(root) / "messages"
    if not ids or not folder.exists():
        return {}
    wanted = pa.array(sorted(set(ids)), pa.string())
    out: dict[str, str] = {}
    for part in sorted(folder.glob("part-*.parquet")):
        t = pq.read_table(part, columns=["msg_id", "text"])
        t = t.filter(pc.is_in(t["msg_id"], value_set=wanted))
        out.update(zip(t["msg_id"].to_pylist(), t["text"].to_pylist(), strict=True))
    return out


def _utc_columns(table: pa.Table) -> pa.Table:
    cols = []
    for f, col in zip(table.schema, table.columns, strict=True):
        if pa.types.is_timestamp(f.type) and f.type.tz is None:
            col = col.cast(pa.timestamp("us")).cast(pa.timestamp("us", tz="UTC"))
        cols.append(col)
    return pa.Table.from_arrays(cols, names=table.column_names)


#: Subfolder of the store home watched by the Dagster inbox sensor (``<home>/inbox``).
INBOX_DIRNAME = "inbox"


class Home:
    """The folder that holds every group's store.

    Resolved from the explicit ``root``, else ``$SPEAKERFLOW_HOME``, else ``./.speakerflow``.
    """

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root or os.environ.get("SPEAKERFLOW_HOME") or ".speakerflow").resolve()

    def groups(self) -> list[str]:
        """Ids of the groups that have a store, sorted."""
        base = self.root / "groups"
        return (
            sorted(p.name for p in base.iterdir() if p.is_dir() and GROUP_ID.match(p.name))
            if base.exists()
            else []
        )

    def group_path(self, group_id: str) -> Path:
        return self.root / "groups" / check_group_id(group_id)

    def open(
        self, group_id: str, writable: bool = False, wait_s: float | None = None
    ) -> GroupStore:
        """Open a group's store; ``writable=True`` takes the group's single-writer lock,
        waiting up to ``wait_s`` seconds for another writer (default ``$SPEAKERFLOW_LOCK_WAIT``
        or 0) before :class:`GroupBusyError`. A writable open also creates ``<home>/inbox``,
        the folder the Dagster inbox sensor watches."""
        if writable:
            (self.root / INBOX_DIRNAME).mkdir(parents=True, exist_ok=True)
        return GroupStore(self.group_path(group_id), group_id, writable=writable, wait_s=wait_s)

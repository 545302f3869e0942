"""Read snapshots shared between processes: the writer process publishes each group's new
read snapshot under ``<group>/snapshot/``; reader processes serve reads from the latest one.

Kuzu allows one process per database file, so a reader never opens the group's store. What
the reads need is on disk without it: the Parquet parts of the verbatim track (append-only;
a forget rewrites them), the embedding caches (``embeddings/*.npz``, replaced atomically),
the Tantivy index (read-only readers are safe beside its writer). The publisher adds what
lives in Kuzu or in the writer's memory, as of the snapshot: the records table
(``records-<seq>.parquet``), the group's knowledge for ``inject`` (``knowledge-<seq>.pkl``:
the fact graph, alias table and detector, loaded by the writer) and ``manifest.json``
(replaced last, atomically: the part names, row counts, the roster and ``group.json``
values, the index's document count). A reader reloads a group when its manifest changes
(polled every ``poll_s``) and builds the query path's caches on the new snapshot before
it swaps it in, so no request pays for the reload.

The pickle is read only from the home the server was given, written by its own writer
process: whoever can write there can already change every store in it.
"""

from __future__ import annotations

import copy
import json
import logging
import pickle
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from speakerflow.graphs import GroupStore, check_group_id
from speakerflow.graphs.store import MESSAGE_ORDER
from speakerflow.memory import GroupNotFoundError, Memory, ReadSnapshot
from speakerflow.pipelines.forget import SNAPSHOT_DIRNAME
from speakerflow.schemas import MESSAGE_SCHEMA

from .app import SnapshotUnavailableError

log = logging.getLogger("speakerflow.server")

FOLDER = SNAPSHOT_DIRNAME
#: what :meth:`ReplicaMemory._load` returns for a group whose reads the writer serves
FORWARD = object()
MANIFEST = "manifest.json"
RETRACTED = "manifest.retracted"


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


class SnapshotPublisher:
    """The writer process's side: :meth:`publish` is :attr:`Memory.on_publish` (called with
    the group's lock held, so no append runs between the snapshot and its files)."""

    def publish(self, store: GroupStore, snap: ReadSnapshot | None) -> None:
        """Write ``snap``'s files and manifest; ``None`` (a group past the ANN threshold,
        which has no snapshot): a manifest that sends the group's reads to the writer."""
        folder = Path(store.root) / FOLDER
        folder.mkdir(exist_ok=True)
        old = _read_manifest(folder / MANIFEST) or _read_manifest(folder / RETRACTED) or {}
        seq = int(old.get("seq", 0)) + 1
        if snap is None:
            forward = {"seq": seq, "group": store.group_id, "forward": True}
            _replace(folder / MANIFEST, json.dumps(forward).encode())
            (folder / RETRACTED).unlink(missing_ok=True)
            return
        records = f"records-{seq}.parquet"
        pq.write_table(snap.records(), folder / f".{records}.tmp")
        (folder / f".{records}.tmp").replace(folder / records)
        knowledge = None
        if snap.knowledge is not None:
            fg, canon, det = snap.knowledge
            fg = copy.copy(fg)
            fg.graph = None  # the cache only: inject reads no Kuzu
            knowledge = f"knowledge-{seq}.pkl"
            _replace(folder / knowledge, pickle.dumps((fg, canon, det), protocol=5))
        parts = sorted(p.name for p in (Path(store.root) / "messages").glob("part-*.parquet"))
        manifest = {
            "seq": seq,
            "group": store.group_id,
            "parts": parts,
            "messages": snap.messages().num_rows,
            "records": records,
            "knowledge": knowledge,
            "meta": snap._meta,
            "index_docs": snap._docs,
            "published_at": time.time(),
        }
        _replace(folder / MANIFEST, json.dumps(manifest).encode())
        (folder / RETRACTED).unlink(missing_ok=True)
        for f in folder.glob("*-*.*"):  # keep this and the previous snapshot's files
            stem = f.name.split(".")[0].rsplit("-", 1)[-1]
            if stem.isdigit() and int(stem) < seq - 1:
                f.unlink(missing_ok=True)

    def retract(self, group_root: Path) -> bool:
        """Withdraw the group's snapshot (readers stop serving it) before a forget; True if
        there was one."""
        folder = Path(group_root) / FOLDER
        try:
            (folder / MANIFEST).replace(folder / RETRACTED)
        except FileNotFoundError:
            return False
        return True

    def restore(self, group_root: Path) -> None:
        """Put a retracted snapshot back (the forget failed before it changed anything),
        unless a new one was published meanwhile."""
        folder = Path(group_root) / FOLDER
        if (folder / MANIFEST).exists():
            (folder / RETRACTED).unlink(missing_ok=True)
        elif (folder / RETRACTED).exists():
            (folder / RETRACTED).replace(folder / MANIFEST)


def _read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


def _file_key(path: Path) -> tuple:
    st = path.stat()
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class _DiskGroup:
    """A published snapshot's files as the store-like object :class:`ReadSnapshot` copies."""

    def __init__(self, root: Path, manifest: dict, messages: pa.Table, records: pa.Table, memo):
        self.root = root
        self.group_id = manifest["group"]
        self._meta = manifest["meta"]
        self._messages, self._records = messages, records
        self._embedding_memo = memo

    def messages(self) -> pa.Table:
        return self._messages

    def records(self) -> pa.Table:
        return self._records

    def roster(self) -> list[str]:
        return [p["name"] for p in self._meta["roster"]]

    def aliases(self) -> dict[str, list[str]]:
        return {p["name"]: list(p.get("aliases", [])) for p in self._meta["roster"]}


class _Loaded:
    """What a reader keeps per group: the snapshot, its manifest's file key, the file
    caches (Parquet parts, embedding files) and the group's read-only Tantivy reader."""

    def __init__(self) -> None:
        self.snapshot: ReadSnapshot | None = None
        self.forward = False  # the writer keeps this group's reads (past the ANN threshold)
        self.key: tuple | None = None
        self.parts: dict[str, tuple[tuple, pa.Table]] = {}
        self.vectors: dict[str, tuple[tuple, dict[str, np.ndarray]]] = {}
        self.reader: Any = None
        self.lock = threading.Lock()  # one load at a time (the poller, a first request)


class ReplicaMemory(Memory):
    """A :class:`~speakerflow.memory.Memory` for a reader process: every read (``ask``,
    ``search``, ``memory``, ``inject``, ``stats``) runs on the group's snapshot as the writer
    process last published it; nothing is opened for writing and no store lock is taken.
    A group not loaded yet is loaded on first use, waiting up to ``wait_s`` for its first
    snapshot (then :class:`SnapshotUnavailableError`); :meth:`start` runs the poller. A
    group the writer reads itself (past the ANN threshold: :meth:`forwarded`) has no
    snapshot here; the reader's app forwards its reads."""

    def __init__(
        self,
        home: str | Path | None = None,
        embedder: str = "minilm",
        batch_queries: bool = True,
        max_open: int = 64,
        poll_s: float = 0.25,
        wait_s: float = 30.0,
    ):
        super().__init__(
            home=home,
            embedder=embedder,
            writer="none",
            read_only=True,
            batch_queries=batch_queries,
            max_open=max_open,
        )
        self.poll_s, self.wait_s = poll_s, wait_s
        self._loaded: dict[str, _Loaded] = {}
        self._load_lock = threading.Lock()
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        #: snapshots loaded since start (first loads and reloads)
        self.loads = 0

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Start the thread that reloads a group when the writer publishes a new snapshot."""
        if self._poller is None:
            self._poller = threading.Thread(
                target=self._poll, name="speakerflow-snapshots", daemon=True
            )
            self._poller.start()

    def close(self) -> None:
        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=5)
        super().close()

    def exists(self, group: str) -> bool:
        return self.home.group_path(group).exists()

    def forwarded(self, group: str) -> bool:
        """Whether the writer process serves this group's reads (its manifest says so; a
        loaded group's flag is kept current by the poller, another's manifest is read)."""
        loaded = self._loaded.get(group)
        if loaded is not None and loaded.key is not None:
            return loaded.forward
        try:
            check_group_id(group)
        except ValueError:
            return False
        manifest = _read_manifest(self.home.group_path(group) / FOLDER / MANIFEST)
        return bool(manifest and manifest.get("forward"))

    def published_groups(self) -> list[str]:
        """The groups of the home with a published snapshot (what a reader warms)."""
        out = []
        for g in self.groups():
            manifest = _read_manifest(self.home.group_path(g) / FOLDER / MANIFEST)
            if manifest is not None and not manifest.get("forward"):
                out.append(g)
        return out

    # -- snapshots ------------------------------------------------------------------------
    def current_snapshot(self, group: str) -> ReadSnapshot | None:
        loaded = self._loaded.get(group)
        return loaded.snapshot if loaded is not None else None

    def snapshot(self, group: str) -> ReadSnapshot:
        check_group_id(group)
        loaded = self._loaded.get(group)
        if loaded is not None and loaded.snapshot is not None:
            return loaded.snapshot
        root = self.home.group_path(group)
        deadline = time.monotonic() + self.wait_s
        while True:
            if not root.exists():
                raise GroupNotFoundError(f"group {group!r} has no store yet; add messages first")
            snap = self._refresh(group)
            if snap is not None:
                return snap
            if self._loaded[group].forward:
                raise SnapshotUnavailableError(
                    f"group {group!r} is read by the writer process (past the ANN threshold)"
                )
            if time.monotonic() >= deadline:
                raise SnapshotUnavailableError(
                    f"group {group!r}: no read snapshot published yet (its first write is "
                    "running, or a forget is rewriting it); retry shortly"
                )
            time.sleep(min(self.poll_s, 0.1))

    def _refresh(self, group: str) -> ReadSnapshot | None:
        """Load the group's published snapshot if its manifest changed (``None``: none)."""
        root = self.home.group_path(group)
        with self._load_lock:
            loaded = self._loaded.setdefault(group, _Loaded())
        with loaded.lock:
            return self._refresh_locked(group, root, loaded)

    def _refresh_locked(self, group: str, root: Path, loaded: _Loaded) -> ReadSnapshot | None:
        try:
            key = _file_key(root / FOLDER / MANIFEST)
        except FileNotFoundError:
            loaded.snapshot, loaded.key = None, None  # retracted (a forget) or never written
            return None
        if key == loaded.key and (loaded.snapshot is not None or loaded.forward):
            return loaded.snapshot
        for attempt in range(5):  # a forget or a merge may change files between two reads
            try:
                snap = self._load(root, loaded)
            except (FileNotFoundError, ValueError, OSError) as exc:
                if attempt == 4:
                    log.warning("group %r: snapshot not loaded: %s", group, exc)
                    return loaded.snapshot
                time.sleep(0.05)
                continue
            if snap is FORWARD:
                loaded.snapshot, loaded.key, loaded.forward = None, key, True
                return None
            if snap is None:
                return None
            loaded.snapshot, loaded.key, loaded.forward = snap, key, False
            self.loads += 1
            return snap
        return loaded.snapshot

    def _load(self, root: Path, loaded: _Loaded) -> Any:
        from speakerflow.graphs.text_index import TantivyIndex

        folder = root / FOLDER
        manifest = _read_manifest(folder / MANIFEST)
        if manifest is None:
            return None
        if manifest.get("forward"):
            return FORWARD
        tables = []
        for name in manifest["parts"]:
            path = root / "messages" / name
            key = _file_key(path)
            cached = loaded.parts.get(name)
            if cached is None or cached[0] != key:
                cached = loaded.parts[name] = (key, pq.read_table(path))
            tables.append(cached[1])
        loaded.parts = {n: loaded.parts[n] for n in manifest["parts"]}
        messages = (
            pa.concat_tables(tables).sort_by(MESSAGE_ORDER)
            if tables
            else MESSAGE_SCHEMA.empty_table()
        )
        if messages.num_rows != manifest["messages"]:
            raise ValueError(f"{root.name}: the parts changed since the snapshot was published")
        records = pq.read_table(folder / manifest["records"])
        memo = {}
        for path in sorted((root / "embeddings").glob("*.npz")):
            key = _file_key(path)
            cached = loaded.vectors.get(path.stem)
            if cached is None or cached[0] != key:
                with np.load(path, allow_pickle=False) as data:
                    vecs = dict(zip(data["ids"].tolist(), data["vecs"], strict=True))
                cached = loaded.vectors[path.stem] = (key, vecs)
            memo[path.stem] = cached[1]
        if messages.num_rows and loaded.reader is None:
            loaded.reader = TantivyIndex(root / "index", writable=False)
        disk = _DiskGroup(root, manifest, messages, records, memo)
        snap = ReadSnapshot(disk, manifest["seq"], loaded.reader, docs=manifest["index_docs"])
        if manifest.get("knowledge"):
            with (folder / manifest["knowledge"]).open("rb") as fh:
                snap.knowledge = pickle.load(fh)  # noqa: S301 - this server's own files (above)
        if messages.num_rows:
            self._warm(snap)
        return snap

    def _poll(self) -> None:
        while not self._stop.wait(self.poll_s):
            for group in list(self._loaded):
                try:
                    self._refresh(group)
                except Exception:  # noqa: BLE001 - logged; the last snapshot keeps serving
                    log.exception("group %r: snapshot reload failed", group)

    def _knowing(self, group: str) -> tuple[ReadSnapshot, tuple]:
        """The group's snapshot and the knowledge it carries (a reader cannot open Kuzu)."""
        snap = self.snapshot(group)
        if snap.knowledge is None:
            raise SnapshotUnavailableError(
                f"group {group!r}: its snapshot carries no knowledge (published by a writer "
                "without it); retry shortly"
            )
        return snap, snap.knowledge

    def inject(self, group: str, event, user=None, budget: int = 600, hops: int = 2):
        """:meth:`Memory.inject` on the published knowledge."""
        from speakerflow.memory import inject_context

        return inject_context(self._knowing(group)[1], event, user, budget, hops)

    def wiki(self, group: str) -> dict[str, str]:
        """:meth:`Memory.wiki` on the published knowledge."""
        from speakerflow.ops.knowledge.wiki import wiki_pages

        return wiki_pages(*self._knowing(group))

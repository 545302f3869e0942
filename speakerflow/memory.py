"""``from speakerflow import Memory``: the store, the query path and the harness as one
Python object, with the embedder and every group's store opened once.

>>> import tempfile
>>> from speakerflow import Memory
>>> with Memory(home=tempfile.mkdtemp(), embedder="hashing") as mem:
...     added = mem.add("team", [{"msg_id": "m1", "ts": "2026-03-06T14:15:00Z", "speaker": "Ana",
...                              "text": "The offsite will be in Porto, 12 to 14 May."}])
...     result = mem.ask("team", "Where will the offsite be?")
>>> added.ingested, "m1" in result.cited_ids()
(1, True)

Every group is opened on first use and kept open (writable: the group's single-writer
lock is held until :meth:`Memory.close`), so the message table, the BM25 index, the
Kuzu graph, the embedding caches and the model stay warm between calls. Writes to one
group are serialised by a per-group lock; different groups may be used from different
threads at once. ``ask`` and ``search`` read a :class:`ReadSnapshot` (the group as of its
last complete write, with every cache the query path needs built) without taking the
group's lock, so they never wait for a write. The functions below the class work on one open
:class:`~speakerflow.graphs.GroupStore` and are what the CLI calls too.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

from speakerflow.graphs import GroupStore, Home, SearchFilter, check_group_id
from speakerflow.graphs.records import chains
from speakerflow.schemas import KnowledgeItem, Message

__all__ = [
    "AddResult",
    "GroupNotFoundError",
    "Memory",
    "ReadSnapshot",
    "SearchHit",
    "UnknownSpeakerError",
    "Warmth",
    "inject_context",
    "memory_chains",
    "messages_table",
    "parse_event",
    "search_messages",
    "warm_up",
]


class GroupNotFoundError(LookupError):
    """The group has no store under this home (ingest first)."""


class UnknownSpeakerError(ValueError):
    """A speaker/owner name that is not in the group's roster; the message lists the roster."""


class SearchHit(Message):
    """A message found by BM25 search, with its ``score``."""

    score: float


@dataclass
class AddResult:
    """What :meth:`Memory.add` did: messages ``ingested`` and ``already_stored`` (skipped by
    ``msg_id``), speakers new to the roster, and the write-path report (``None`` when the
    Writer did not run)."""

    group_id: str
    ingested: int
    already_stored: int
    new_speakers: list[str] = field(default_factory=list)
    write: Any = None

    def as_dict(self) -> dict[str, Any]:
        out = {
            "group": self.group_id,
            "ingested": self.ingested,
            "already_stored": self.already_stored,
            "new_speakers": self.new_speakers,
        }
        if self.write is not None:
            out["write"] = self.write.summary()
        return out


# -- functions on one open store (the CLI calls these too) --------------------------------
def messages_table(group: str, messages: Iterable[dict] | str | Path) -> pa.Table:
    """A validated message table for ``group`` from JSONL-format dicts (docs/formats.md), a
    JSONL string, or the path of a ``.jsonl`` file (a ``Path``, or a string naming a file).
    ``group_id`` in the dicts may be left out; one
    naming another group is an error (a store only takes its own messages)."""
    from speakerflow.ops.loaders import LoadError, load
    from speakerflow.ops.loaders.jsonl import messages_from_objects

    check_group_id(group)
    if (
        isinstance(messages, str)
        and not messages.lstrip().startswith("{")
        and Path(messages).is_file()
    ):
        messages = Path(messages)
    if isinstance(messages, Path):
        loaded = load(messages, "jsonl", group=group)
    else:
        if isinstance(messages, str):
            items = []
            for lineno, line in enumerate(messages.splitlines(), start=1):
                if line.strip():
                    try:
                        items.append(json.loads(line))
                    except ValueError as exc:
                        raise LoadError(f"messages: line {lineno}: invalid JSON ({exc})") from None
        else:
            items = list(messages)
        if not items:
            raise LoadError("no messages given")
        items = [
            {**obj, "group_id": obj.get("group_id") or group} if isinstance(obj, dict) else obj
            for obj in items
        ]
        loaded = messages_from_objects(enumerate(items), "messages", None, unit="item")
    others = sorted({g for g, _ in loaded if g != group})
    if others:
        raise LoadError(f"messages for group {group!r} name other group(s): {', '.join(others)}")
    return pa.concat_tables([t for _, t in loaded])


def check_speaker(
    store: GroupStore | ReadSnapshot, name: str | None, allow_group: bool = False
) -> None:
    """Raise :class:`UnknownSpeakerError` (listing the roster) when ``name`` is not in it."""
    if name is None or (allow_group and name == "GROUP") or name in store.roster():
        return
    roster = ", ".join(store.roster()) or "nobody yet"
    raise UnknownSpeakerError(
        f"{name!r} is not in the roster of {store.group_id!r}: "
        f"{roster}{' or GROUP' if allow_group else ''}"
    )


def search_messages(
    store: GroupStore | ReadSnapshot, query: str, speaker: str | None = None, k: int = 10
) -> list[SearchHit]:
    """BM25 over the group's messages (optionally one ``speaker``'s), best first."""
    check_speaker(store, speaker)
    hits = store.search(query, k, SearchFilter(kind="message", speaker=speaker))
    by_id = message_rows(store)
    return [
        SearchHit(**by_id[h.doc_id], score=round(h.score, 3)) for h in hits if h.doc_id in by_id
    ]


def message_rows(store: GroupStore | ReadSnapshot) -> dict[str, dict]:
    """The group's messages as dicts by ``msg_id`` (cached on the store until it changes)."""
    table = store.messages()
    cached = getattr(store, "_rows_by_id", None)
    if cached is None or cached[0] is not table:
        cached = (table, {r["msg_id"]: r for r in table.to_pylist()})
        setattr(store, "_rows_by_id", cached)  # noqa: B010 - a memo on the store object, not a declared field
    return cached[1]


def _quiet(**_: Any) -> None:
    """A progress callback that reports nowhere."""


def message_objects(store: GroupStore | ReadSnapshot, ids: Iterable[str]) -> list[Message]:
    """The :class:`Message` of each id the group holds, in the order given. Messages are
    frozen records: each is validated once per store table and shared by later asks."""
    table = store.messages()
    memo: tuple[pa.Table, dict[str, Message]] | None = getattr(store, "_message_objects", None)
    if memo is None or memo[0] is not table:
        memo = (table, {})
        setattr(store, "_message_objects", memo)  # noqa: B010 - a memo on the store object
    rows, made = message_rows(store), memo[1]
    out = []
    for m in ids:
        msg = made.get(m)
        if msg is None:
            row = rows.get(m)
            if row is None:
                continue
            msg = made[m] = Message(**row)
        out.append(msg)
    return out


def memory_chains(
    store: GroupStore | ReadSnapshot,
    owner: str | None = None,
    layer: str | None = None,
    history: bool = False,
) -> list[list[KnowledgeItem]]:
    """Derived records as update chains (oldest state first, head last); without
    ``history`` each chain is just its head."""
    check_speaker(store, owner, allow_group=True)
    selected = chains(store, owner, layer)
    if not history:
        selected = [[c[-1]] for c in selected]
    return [[KnowledgeItem(**rec) for rec in chain] for chain in selected]


def parse_event(event: dict | str) -> tuple[str, datetime, str | None]:
    """(text, time, source) of an event: a dict with ``content`` (and optional ``ts`` ISO
    time, ``source``), a JSON string of one, or plain text (time: now)."""
    if isinstance(event, str):
        try:
            event = json.loads(event)
        except ValueError:
            event = {"content": event}
    if not isinstance(event, dict) or not isinstance(event.get("content"), str):
        raise ValueError(
            'an event is JSON with a "content" field, e.g. {"content": "fees on XBT?"}'
        )
    ts = event.get("ts")
    try:
        now = datetime.fromisoformat(ts) if ts else datetime.now(UTC)
    except (TypeError, ValueError):
        raise ValueError(f"event 'ts' {ts!r} is not an ISO-8601 time") from None
    return event["content"], (now if now.tzinfo else now.replace(tzinfo=UTC)), event.get("source")


def inject_context(
    knowledge: tuple, event: dict | str, user: str | None = None, budget: int = 600, hops: int = 2
):
    """The working context passive injection builds for ``event`` from a group's loaded
    ``knowledge`` (:func:`speakerflow.ops.knowledge.load.load_knowledge`); read-only
    (reuse counts are not recorded)."""
    from speakerflow.ops.inject import InjectConfig, PassiveInjector

    text, now, source = parse_event(event)
    fg, canon, det = knowledge
    inj = PassiveInjector(
        fg, canon, det, config=InjectConfig(budget=budget, hops=hops, record_use=False)
    )
    return inj.inject(text, now, user or source)


# -- one model call for the questions of concurrent asks ---------------------------------
class _Memo(dict):
    """The query-vector memo of :func:`~speakerflow.ops.text.embed.encode_query`, safe when
    several threads evict at once (a missing key pops as ``None``; iteration works on a
    copy of the keys)."""

    def pop(self, key, *default):
        return super().pop(key, None)

    def __iter__(self):
        return iter(tuple(dict.keys(self)))


class _Slot:
    __slots__ = ("done", "error", "lead", "text", "vec")

    def __init__(self, text: str):
        self.text = text
        self.vec: Any = None
        self.error: BaseException | None = None
        self.lead = False
        self.done = threading.Event()


class BatchingEmbedder:
    """The process embedder with the one-text calls of concurrent threads (the question
    and issue vectors of asks running side by side) encoded together in one model call.

    MiniLM on torch cost about 12 ms CPU for one short question and about 3 ms per question
    in a batch of 8, most of a single call being per-call overhead; the int8 ONNX default
    costs about 2 ms for one question on an idle core (docs/scaling.md), so batching matters
    less with it. No timer: a call finding the model idle runs at once (alone, as before);
    calls arriving while it runs wait and go together in the next batch, run by the first
    of them. Calls with several texts (ingest-time embeddings) go straight through. With
    torch or fp32 ONNX, vectors differ from one-text calls by float rounding only (max 2e-7
    measured); int8 scales activations per call, so a batched vector differs slightly
    (cosine about 0.99 to the one-text vector)."""

    def __init__(self, inner: Any, max_batch: int = 64):
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._pending: list[_Slot] = []
        self._busy = False
        self.calls = 0  # model calls made for one-text requests (and the requests, below)
        self.requests = 0
        self._query_memo = _Memo()

    def encode(self, texts: list[str]):
        if len(texts) != 1:
            return self.inner.encode(texts)
        slot = _Slot(texts[0])
        with self._lock:
            self.requests += 1
            self._pending.append(slot)
            slot.lead = not self._busy
            self._busy = True
        while not slot.lead:
            slot.done.wait()
            if slot.vec is not None or slot.error is not None:
                break
            slot.done.clear()  # promoted: run the next batch (it starts with this call)
        if slot.lead:
            self._run_batch()
        if slot.error is not None:
            raise slot.error
        return slot.vec[None, :]

    def _run_batch(self) -> None:
        with self._lock:
            batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
            self.calls += 1
        texts = list(dict.fromkeys(s.text for s in batch))
        try:
            vecs = self.inner.encode(texts)
            by_text = {t: vecs[i] for i, t in enumerate(texts)}
            for s in batch:
                s.vec = by_text[s.text]
        except BaseException as exc:  # noqa: BLE001 - every waiting call gets the error
            for s in batch:
                s.error = exc
        with self._lock:
            nxt = self._pending[0] if self._pending else None
            if nxt is None:
                self._busy = False
            else:
                nxt.lead = True
        for s in batch:
            s.done.set()
        if nxt is not None:
            nxt.done.set()


_BATCHING_LOCK = threading.Lock()


def batching_embedder(config) -> BatchingEmbedder | None:
    """The process embedder for ``config``, wrapped once in :class:`BatchingEmbedder` and
    put back where the query path finds it (so every ask of this process shares it)."""
    from speakerflow.pipelines import query_path

    emb = query_path.embedder_for(config)
    if emb is None or isinstance(emb, BatchingEmbedder):
        return emb
    with _BATCHING_LOCK:
        emb = query_path._EMBEDDERS.get(config.embedder)
        if emb is not None and not isinstance(emb, BatchingEmbedder):
            emb = query_path._EMBEDDERS[config.embedder] = BatchingEmbedder(emb)
        return emb


# -- read snapshots ----------------------------------------------------------------------
class ReadSnapshot:
    """A group as of one moment (its last complete write), for reads that run while the
    group is being written.

    It holds the message and record tables, roster and aliases of that moment and copies of
    the store's embedding caches; its own caches (the group view, the record view, rows by
    id) live on it, and it writes nothing (``in_memory``: embeddings a read would compute
    stay on the snapshot). BM25 goes to a separate read-only Tantivy reader of the group's
    index: documents added after the snapshot are dropped from the hits (the search asks
    for as many more hits as the index has gained, so the top ``k`` are those of the
    snapshot). The query path (:func:`~speakerflow.pipelines.query_path.answer_question`)
    and :func:`search_messages` run on it as on a store. ``reader`` is ``None`` for a group
    with no index yet (before its first append: every search finds nothing); ``docs`` is
    the index's document count as of the snapshot (default: the reader's now). ``knowledge``
    is what :meth:`Memory.inject` reads (the fact graph, alias table and detector as of the
    snapshot), or ``None`` until loaded.
    """

    in_memory = True  # caches stay on this object; nothing is written to the group folder
    writable = False

    def __init__(self, store: Any, version: int, reader: Any, docs: int | None = None):
        self.group_id = store.group_id
        self.root = store.root
        self.version = version
        self._messages = store.messages()
        self._records = store.records()
        self._roster = store.roster()
        self._aliases = store.aliases()
        self._meta = json.loads(json.dumps(store._meta))
        memo = getattr(store, "_embedding_memo", None) or {}
        self._embedding_memo = {
            k: dict(v) for k, v in memo.items()
        }  # the Writer keeps adding to the store's
        self._reader = reader
        if reader is not None:
            reader.index.reload()
        if docs is None:
            docs = reader.count() if reader is not None else 0
        self._docs = docs
        self.knowledge: tuple | None = None
        self._ids = set(self._messages["msg_id"].to_pylist()) | set(
            self._records["entry_id"].to_pylist()
        )
        self._keys: set[int] | None = None  # doc keys of the ids, made on first use

    def messages(self) -> pa.Table:
        return self._messages

    def records(self) -> pa.Table:
        return self._records

    def roster(self) -> list[str]:
        return list(self._roster)

    def aliases(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self._aliases.items()}

    def meta(self, key: str, default: Any = None) -> Any:
        return self._meta.get(key, default)

    def search(self, query: str, k: int = 10, flt: SearchFilter | None = None) -> list:
        if self._reader is None:
            return []
        gained = max(0, self._reader.count() - self._docs)
        hits = self._reader.search(query, k + gained, flt)
        return [h for h in hits if h.doc_id in self._ids][:k]

    def search_keys(
        self, query: str, k: int = 10, flt: SearchFilter | None = None
    ) -> tuple[list[int], list[float]] | None:
        """:meth:`search` as (document keys, scores), read from the index's key field instead
        of each hit's stored id (what recall uses); ``None`` for an index without keys."""
        if self._reader is None:
            return [], []
        gained = max(0, self._reader.count() - self._docs)
        found = self._reader.search_keys(query, k + gained, flt)
        if found is None:
            return None
        if self._keys is None:
            from speakerflow.graphs.text_index import doc_key

            self._keys = {doc_key(i) for i in self._ids}
        known = self._keys
        pairs = [(key, s) for key, s in zip(*found, strict=True) if key in known][:k]
        return [key for key, _ in pairs], [s for _, s in pairs]

    def stats(self) -> dict[str, int]:
        msgs = self._messages
        return {
            "messages": msgs.num_rows,
            "speakers": len(self._roster),
            "sessions": len(set(msgs["session_id"].to_pylist())),
            "records": self._records.num_rows,
        }


# -- the object --------------------------------------------------------------------------
@dataclass
class _Group:
    store: GroupStore
    lock: threading.RLock = field(default_factory=threading.RLock)
    knowledge: tuple | None = None
    knowledge_at: int = -1
    closed: bool = False
    used: float = 0.0
    users: int = 0
    version: int = 0  # bumped by every change through this Memory
    snapshot: ReadSnapshot | None = None
    reader: Any = None  # a read-only Tantivy reader of the group's index (for snapshots)
    write_pending: bool = False  # a write is queued: reads may use the last snapshot meanwhile


class Memory:
    """Long-term memory over a store home.

    Parameters
    ----------
    home
        The store home (default ``$SPEAKERFLOW_HOME`` or ``./.speakerflow``).
    embedder
        Dense recall embedder: ``minilm`` (default), ``hashing`` (test double) or ``none``.
    writer
        Writer backend :meth:`add` runs after appending (``rules`` default, ``none``: verbatim
        only).
    read_only
        Open groups read-only (no single-writer lock; :meth:`add` refuses).
    backend, chat
        ``rules`` answers, or ``chat`` with a ChatBackend ``chat`` for Project/Select/Answer.
    max_open
        Groups kept open at most; past it the least recently used idle group is closed
        (and reopened, cold, when it is used again).
    snapshot_reads
        ``ask``/``search`` read the group's :class:`ReadSnapshot` without its lock (default);
        ``False``: they take the group's lock and read the store (waiting for writes).
    batch_queries
        Encode the questions of concurrent asks together (:class:`BatchingEmbedder`, default).
    pipeline
        The query pipeline :meth:`ask` runs (default: the config's
        :func:`~speakerflow.pipelines.query_path.query_pipeline`): any composition of operators
        that takes ``question`` and hands on the projection and Compose's columns, e.g. the
        default one with an operator of your own in between (docs/custom-pipelines.md).
    """

    def __init__(
        self,
        home: str | Path | None = None,
        embedder: str = "minilm",
        writer: str = "rules",
        read_only: bool = False,
        backend: str = "rules",
        chat: Any = None,
        window: int = 25,
        max_open: int = 64,
        snapshot_reads: bool = True,
        batch_queries: bool = True,
        pipeline: Any = None,
    ):
        from speakerflow.pipelines.query_path import QueryConfig, check_query_pipeline
        from speakerflow.settings import home_root

        self.home = Home(home_root(str(home) if home is not None else None))
        self.read_only = read_only
        self.writer = writer
        self.window = window
        self.chat = chat
        self.config = QueryConfig(
            embedder=embedder, backend="chat" if chat is not None else backend
        )
        self._groups: dict[str, _Group] = {}
        self._lock = threading.Lock()
        self._writer = None
        self._closed = False
        self.max_open = max_open
        self.snapshot_reads = snapshot_reads
        self.batch_queries = batch_queries
        self.pipeline = check_query_pipeline(pipeline) if pipeline is not None else None
        self._warm_config: Any = None  # the rules config of the warming query
        #: load each group's knowledge onto its read snapshots, so ``inject`` needs no lock
        #: (the server does; off by default: it costs a Kuzu read per write)
        self.snapshot_knowledge = False
        #: called as ``on_publish(store, snapshot)`` after each new read snapshot (the group's
        #: lock held; ``snapshot`` None for a group past the ANN threshold, read under the
        #: lock): the server's writer process publishes it to its reader processes
        self.on_publish: Callable[[GroupStore, ReadSnapshot | None], None] | None = None

    # -- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        """Close every open group (releasing its writer lock)."""
        with self._lock:
            groups, self._groups = list(self._groups.values()), {}
            self._closed = True
        for g in groups:
            with g.lock:
                g.closed = True
                g.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def groups(self) -> list[str]:
        """Ids of the groups with a store under this home."""
        return self.home.groups()

    def exists(self, group: str) -> bool:
        return group in self._groups or self.home.group_path(group).exists()

    def _group(self, group: str, create: bool = False) -> _Group:
        check_group_id(group)
        with self._lock:
            if self._closed:
                raise RuntimeError("this Memory is closed")
            g = self._groups.get(group)
            if g is None:
                if not create and not self.home.group_path(group).exists():
                    raise GroupNotFoundError(
                        f"group {group!r} has no store yet; add messages first"
                    )
                if create and self.read_only:
                    raise PermissionError(f"group {group!r}: this Memory is read-only")
                self._evict()
                g = self._groups[group] = _Group(self.home.open(group, writable=not self.read_only))
            g.used = time.monotonic()
            return g

    def _evict(self) -> None:
        """Close least recently used idle groups until one more fits (``self._lock`` held)."""
        for name, g in sorted(self._groups.items(), key=lambda kv: kv[1].used):
            if len(self._groups) < self.max_open:
                return
            if g.users == 0 and g.lock.acquire(blocking=False):  # a group in use stays open
                try:
                    g.closed = True
                    g.store.close()
                    del self._groups[name]
                finally:
                    g.lock.release()

    @contextmanager
    def _held(self, group: str, create: bool = False) -> Iterator[_Group]:
        """The group, open, with its lock held (reopened if it was closed meanwhile)."""
        while True:
            g = self._group(group, create)
            with g.lock:
                if not g.closed:
                    g.users += 1
                    try:
                        yield g
                    finally:
                        g.users -= 1
                    return

    @contextmanager
    def use(self, group: str, create: bool = False) -> Iterator[GroupStore]:
        """The group's open store, with the group's lock held (for your own operators)."""
        with self._held(group, create) as g:
            try:
                yield g.store
            finally:
                g.version += 1  # it may have been changed: the next read takes a new snapshot

    @property
    def embedder(self):
        """The dense embedder (loaded once per process, shared by every group; concurrent
        one-text calls batched unless ``batch_queries=False``, see :class:`BatchingEmbedder`)."""
        if not self.batch_queries:
            from speakerflow.pipelines.query_path import embedder_for

            return embedder_for(self.config)
        return batching_embedder(self.config)

    # -- writes -------------------------------------------------------------------------
    def append(
        self, group: str, messages: Iterable[dict] | str | Path, pending_write: bool = False
    ) -> AddResult:
        """Append messages to the verbatim track only (idempotent by ``msg_id``); run
        :meth:`write` afterwards for derived records and embeddings.

        ``pending_write=True`` says a :meth:`write` of the group is queued (the server's
        background queue): until it has run, reads keep using the group's last complete
        snapshot instead of taking a new one that waits for the group (a group without one
        yet, new or opened cold, gets it first: as it was before this append)."""
        table = messages_table(group, messages)  # validated before the group is opened
        with self._held(group, create=True) as g:
            if pending_write and g.snapshot is None:
                self._publish(g)
            res = g.store.append_messages(table)
            if res.added:
                g.version += 1
                g.write_pending = g.write_pending or pending_write
        return AddResult(group, res.added, res.skipped, list(res.new_speakers))

    def write(self, group: str, warm: bool = True, progress: Callable[..., None] | None = None):
        """Run the write path on the group's unwritten messages (a WriteReport), then compute
        the embeddings of new messages and records so the next :meth:`ask` is warm, and take
        the group's new read snapshot.

        ``progress`` is called with keyword fields as the write goes: ``phase`` (``writer``,
        then ``embedding``, ``snapshot``), and in the writer phase ``messages_done`` /
        ``messages_total`` and ``windows_done`` / ``windows_total`` (the Writer's segments)."""
        from speakerflow.pipelines.write_path import write_group

        tell = progress or _quiet
        with self._held(group) as g:
            try:
                tell(phase="writer")
                report = write_group(
                    g.store,
                    self._writer_backend(),
                    window=self.window,
                    progress=False,
                    on_segment=lambda done, total, msgs, msgs_total: tell(
                        windows_done=done,
                        windows_total=total,
                        messages_done=msgs,
                        messages_total=msgs_total,
                    ),
                )
                g.knowledge = None
                g.version += 1
                if warm:
                    self._publish(g, tell)
            finally:
                g.write_pending = False
        return report

    def _writer_backend(self):
        """``rules``/``none`` by name (cheap, nothing shared between groups); a model-backed
        Writer is built once per Memory, so its model loads once."""
        if self.writer in ("rules", "none"):
            return self.writer
        with self._lock:
            if self._writer is None:
                from speakerflow.ops.write.writer.registry import make_writer

                self._writer = make_writer(self.writer)
            return self._writer

    def _warm(self, store: GroupStore | ReadSnapshot) -> None:
        from speakerflow.pipelines.query_path import answer_question

        # one query fills every per-store cache the query path keeps (message and record
        # embeddings of the new rows, the group view, the record view); its answer is dropped.
        # The default rules pipeline: the caches are the store's, whichever pipeline asks
        if self._warm_config is None:
            self._warm_config = self.config.model_copy(update={"backend": "rules"})
        answer_question(store, "what was said?", self._warm_config)
        message_rows(store)

    def _publish(self, g: _Group, tell: Callable[..., None] | None = None) -> ReadSnapshot | None:
        """Take the group's read snapshot now (group lock held): the store's caches are
        warmed first (embeddings of new rows computed and saved), then the snapshot's own,
        and with :attr:`snapshot_knowledge` the group's knowledge (what ``inject`` reads) is
        loaded onto it; :attr:`on_publish` is then called with the store and the snapshot.
        ``None`` (reads take the group's lock instead) for a read-only Memory, which cannot
        know when another process writes, and for a group past the ANN threshold, whose
        shared index is extended in place by writes. ``tell``: progress, as in :meth:`write`."""
        from speakerflow.graphs import ann
        from speakerflow.graphs.text_index import TantivyIndex

        tell = tell or _quiet
        store = g.store
        empty = store.messages().num_rows == 0  # a new group: nothing to warm, no index yet
        if not empty:
            tell(phase="embedding")
            self._warm(store)
        if not self.snapshot_reads or self.read_only or store.in_memory:
            g.snapshot = None
            return None
        if store.messages().num_rows >= ann.THRESHOLD:
            g.snapshot = None
            if self.on_publish is not None:
                self.on_publish(store, None)  # no snapshot: its reads go to this process
            return None
        tell(phase="snapshot")
        if g.reader is None and not empty:
            g.reader = TantivyIndex(store.root / "index", writable=False)
        snap = ReadSnapshot(store, g.version, g.reader)
        if not empty:
            self._warm(snap)
        if self.snapshot_knowledge:
            from speakerflow.ops.knowledge.load import load_knowledge

            snap.knowledge = load_knowledge(store)
        if self.on_publish is not None:
            self.on_publish(store, snap)
        g.snapshot = snap
        return snap

    def current_snapshot(self, group: str) -> ReadSnapshot | None:
        """The group's last read snapshot as it is, current or not (``None`` when the group
        is not open or has none): never opens the group, never waits (``/status``)."""
        g = self._groups.get(group)
        return g.snapshot if g is not None else None

    def snapshot(self, group: str) -> ReadSnapshot | None:
        """The snapshot reads of ``group`` use now: the last one taken, while it is current
        or a write of the group is pending; otherwise a new one (waiting for the group's
        lock). ``None`` where reads take the lock instead (see :meth:`_publish`)."""
        if not self.snapshot_reads or self.read_only:
            return None
        g = self._group(group)
        snap = g.snapshot
        if snap is not None and (snap.version == g.version or g.write_pending):
            return snap
        with self._held(group) as g:
            snap = g.snapshot
            if snap is None or (snap.version != g.version and not g.write_pending):
                snap = self._publish(g)
            return snap

    def add(
        self, group: str, messages: Iterable[dict] | str | Path, write: bool = True
    ) -> AddResult:
        """Append messages (dicts in the JSONL message format, docs/formats.md) and, unless
        ``write=False`` or the writer is ``none``, run the write path on them."""
        result = self.append(group, messages)
        if write and self.writer != "none":
            result.write = self.write(group)
        return result

    # -- reads --------------------------------------------------------------------------
    def ask(self, group: str, question: str):
        """Answer ``question`` from the group's memory: a
        :class:`~speakerflow.pipelines.query_path.QueryResult` (answer, evidence,
        ``cited_ids()``, latency)."""
        return self.ask_cited(group, question)[0]

    def ask_cited(self, group: str, question: str) -> tuple[Any, list[Message]]:
        """:meth:`ask` and the messages the answer cites (in composed order), under one
        hold of the group's lock."""
        from speakerflow.pipelines.query_path import answer_question

        start = time.perf_counter()
        self.embedder  # noqa: B018 - the batching embedder is in place before the query path asks for it
        snap = self.snapshot(group)
        if snap is not None:  # no lock: the snapshot is not changed by writes
            waited = (time.perf_counter() - start) * 1000
            result = answer_question(snap, question, self.config, self.chat, self.pipeline)
            cited = message_objects(snap, result.cited_ids())
        else:
            with self._held(group) as g:
                waited = (time.perf_counter() - start) * 1000
                result = answer_question(g.store, question, self.config, self.chat, self.pipeline)
                cited = message_objects(g.store, result.cited_ids())
        result.stats["group_wait_ms"] = (
            waited  # time spent waiting for the group (a snapshot, writes)
        )
        return result, cited

    def cited_messages(self, group: str, result) -> list[Message]:
        """The messages ``result`` cites, in composed order."""
        snap = self.snapshot(group)
        if snap is not None:
            return message_objects(snap, result.cited_ids())
        with self._held(group) as g:
            return message_objects(g.store, result.cited_ids())

    def search(
        self, group: str, q: str, speaker: str | None = None, k: int = 10
    ) -> list[SearchHit]:
        """BM25 search over the group's messages (of its read snapshot, like :meth:`ask`)."""
        snap = self.snapshot(group)
        if snap is not None:
            return search_messages(snap, q, speaker, k)
        with self._held(group) as g:
            return search_messages(g.store, q, speaker, k)

    def memory(
        self, group: str, owner: str | None = None, layer: str | None = None
    ) -> list[KnowledgeItem]:
        """The current derived records (heads), optionally about one ``owner`` / ``layer``."""
        return [c[-1] for c in self.history(group, owner, layer, full=False)]

    def history(
        self, group: str, owner: str | None = None, layer: str | None = None, full: bool = True
    ) -> list[list[KnowledgeItem]]:
        """Update chains of derived records, oldest state first (of the read snapshot)."""
        snap = self.snapshot(group)
        if snap is not None:
            return memory_chains(snap, owner, layer, history=full)
        with self._held(group) as g:
            return memory_chains(g.store, owner, layer, history=full)

    def inject(
        self,
        group: str,
        event: dict | str,
        user: str | None = None,
        budget: int = 600,
        hops: int = 2,
    ):
        """The working context (InKH passive injection) for one event: a
        :class:`~speakerflow.ops.inject.pipeline.WorkingContext`. From the read snapshot's
        knowledge where it carries one (:attr:`snapshot_knowledge`), else from the store
        under the group's lock."""
        from speakerflow.ops.knowledge.load import load_knowledge

        snap = self.snapshot(group)
        if snap is not None and snap.knowledge is not None:
            return inject_context(snap.knowledge, event, user, budget, hops)
        with self._held(group) as g:
            version = g.store.records().num_rows
            if g.knowledge is None or g.knowledge_at != version:
                g.knowledge, g.knowledge_at = load_knowledge(g.store), version
            return inject_context(g.knowledge, event, user, budget, hops)

    def wiki(self, group: str) -> dict[str, str]:
        """The group's wiki pages, ``{file name: Markdown}`` with ``index.md`` first
        (:func:`~speakerflow.ops.knowledge.wiki.wiki_pages`): from the read snapshot where
        it carries the group's knowledge, else from the store under the group's lock."""
        from speakerflow.ops.knowledge.wiki import wiki_pages

        snap = self.snapshot(group)
        if snap is not None and snap.knowledge is not None:
            return wiki_pages(snap, snap.knowledge)
        with self._held(group) as g:
            return wiki_pages(g.store)

    def forget(
        self,
        group: str,
        speaker: str | None = None,
        message_ids: list[str] | None = None,
        everything: bool = False,
        dry_run: bool = False,
        rederive: Literal["auto", "all", "affected"] = "auto",
    ):
        """Remove a speaker's messages, some messages or all of them from every copy of the
        group, cascading to records and facts (:func:`speakerflow.pipelines.forget.forget_group`,
        which also explains ``rederive``); returns its ForgetReport. The group's store is
        reopened afterwards, so no cache of this Memory still holds what was forgotten."""
        from speakerflow.pipelines.forget import forget_group

        if sum([speaker is not None, bool(message_ids), everything]) != 1:
            raise ValueError("forget needs exactly one of speaker, message_ids or everything=True")
        with self._held(group) as g:
            if speaker is not None:
                check_speaker(g.store, speaker)
            if not dry_run:
                g.snapshot = (
                    None  # a read from now on waits for the forget, then takes a new snapshot
                )
            report = forget_group(
                g.store,
                speaker=speaker,
                message_ids=message_ids,
                everything=everything,
                dry_run=dry_run,
                rederive=rederive,
            )
            if not dry_run and not self.read_only:
                g.snapshot, g.reader = None, None  # no read may hold what was forgotten
                g.version += 1
                g.store.close()
                g.store = self.home.open(group, writable=True)
                g.knowledge = None
        return report

    def stats(self, group: str) -> dict[str, int]:
        """Counts of messages, speakers, sessions and records (of the read snapshot)."""
        snap = self.snapshot(group)
        if snap is not None:
            return snap.stats()
        with self._held(group) as g:
            return g.store.stats()


# -- warm before ready --------------------------------------------------------------------
@dataclass
class Warmth:
    """What one server process has warm: the embedder (model and question session), the
    groups whose read snapshot is taken (with the query path's caches built on it, and the
    group's knowledge for ``inject``) and the injector (the InKH intent classifier: its
    model and exemplar vectors), with the seconds each took."""

    role: str = "server"
    ready: bool = False
    embedder_s: float | None = None
    groups: list[str] = field(default_factory=list)
    groups_s: float | None = None
    injector_s: float | None = None
    seconds: float | None = None
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "ready": self.ready,
            "warm": {
                "embedder": self.embedder_s is not None,
                "groups": len(self.groups),
                "injector": self.injector_s is not None,
                "seconds": {
                    "embedder": self.embedder_s,
                    "groups": self.groups_s,
                    "injector": self.injector_s,
                    "total": self.seconds,
                },
                "errors": self.errors[:10],
            },
        }


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def warm_up(
    memory: Memory,
    warmth: Warmth | None = None,
    say: Callable[[str], None] | None = None,
    max_groups: int | None = None,
    groups: list[str] | None = None,
) -> Warmth:
    """Load, in order: the embedder (a question and a batch encoded: both sessions of
    MiniLM on onnxruntime where they differ), the read snapshot of each
    existing group (or of ``groups``; at most ``max_groups``, default the memory's
    ``max_open``; the query
    path's caches are built on it), and the injector (the InKH intent classifier every
    ``inject`` runs: its MiniLM and exemplar vectors).
    A group that cannot be opened (another process writes it) is listed in ``errors`` and
    skipped. Says what it loads and how long it took on ``say`` (default stderr); marks
    ``warmth`` ready at the end."""
    from speakerflow.ops.knowledge.reader import intent_classifier

    say = say or _stderr
    warmth = warmth or Warmth()
    start = time.perf_counter()
    emb = memory.embedder
    if emb is not None:
        say(f"speakerflow {warmth.role}: loading the embedder {emb.name} ...")
        t0 = time.perf_counter()
        emb.encode(["warm up"])  # a question: the one-text session
        emb.encode([f"warm up {i}" for i in range(8)])  # evidence and new rows: the many-text one
        warmth.embedder_s = round(time.perf_counter() - t0, 2)
    names = (memory.groups() if groups is None else groups)[
        : max_groups if max_groups is not None else memory.max_open
    ]
    if names:
        say(f"speakerflow {warmth.role}: warming {len(names)} group(s) ...")
    t0 = time.perf_counter()
    for name in names:
        try:
            memory.snapshot(name)
            warmth.groups.append(name)
        except Exception as exc:  # noqa: BLE001 - reported by /healthz; the group opens on use
            warmth.errors.append(f"{name}: {type(exc).__name__}: {exc}")
    warmth.groups_s = round(time.perf_counter() - t0, 2)
    say(f"speakerflow {warmth.role}: loading the injector ...")
    t0 = time.perf_counter()
    intent_classifier().best("warm up")
    warmth.injector_s = round(time.perf_counter() - t0, 2)
    warmth.seconds = round(time.perf_counter() - start, 2)
    warmth.ready = True
    parts = [
        f"embedder {warmth.embedder_s} s" if warmth.embedder_s is not None else "no embedder",
        f"{len(warmth.groups)} group(s) {warmth.groups_s} s",
    ]
    if warmth.injector_s is not None:
        parts.append(f"injector {warmth.injector_s} s")
    say(f"speakerflow {warmth.role}: warm in {warmth.seconds} s ({', '.join(parts)})")
    for err in warmth.errors:
        say(f"speakerflow {warmth.role}: not warmed: {err}")
    return warmth

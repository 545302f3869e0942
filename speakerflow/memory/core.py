"""The :class:`Memory` object: writes (append, the write path, read snapshots taken) and reads
(ask, search, memory, inject, forget) over the open groups of a store home."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from speakerflow.graphs import GroupStore, Home
from speakerflow.memory.batching import batching_embedder
from speakerflow.memory.functions import (
    AddResult,
    SearchHit,
    check_speaker,
    inject_context,
    memory_chains,
    message_objects,
    message_rows,
    messages_table,
    search_messages,
)
from speakerflow.memory.groups import OpenGroups, _Group
from speakerflow.memory.snapshot import ReadSnapshot
from speakerflow.schemas import KnowledgeItem, Message


def _quiet(**_: Any) -> None:
    """A progress callback that reports nowhere."""


class Memory(OpenGroups):
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
    reader
        A local model that writes each rules answer in a few words from the evidence, the
        extractive line kept as the quote (``"smollm2-reader"``: the shipped adapter; None,
        the default: extractive answers; docs/query-path.md).
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
        reader: str | None = None,
    ):
        from speakerflow.ops.query.answer_config import AnswerConfig
        from speakerflow.pipelines.query_path import QueryConfig, check_query_pipeline
        from speakerflow.settings import home_root

        super().__init__(
            Home(home_root(str(home) if home is not None else None)), read_only, max_open
        )
        self.writer = writer
        self.window = window
        self.chat = chat
        self.config = QueryConfig(
            embedder=embedder,
            backend="chat" if chat is not None else backend,
            answer=AnswerConfig(reader=reader),
        )
        self._writer = None
        self.snapshot_reads = snapshot_reads
        self.batch_queries = batch_queries
        self.pipeline = check_query_pipeline(pipeline) if pipeline is not None else None
        self._warm_config: Any = None  # the rules config of the warming query
        #: load each group's knowledge onto its read snapshots, so ``inject`` needs no lock
        #: (the server does; off by default: it costs a Kuzu read per write)
        self.snapshot_knowledge = False
        #: build the query path's caches on each new snapshot, so no read pays for them
        #: (the server's writer process does not: its reader processes serve the reads)
        self.warm_snapshots = True
        #: called as ``on_publish(store, snapshot)`` after each new read snapshot (the group's
        #: lock held; ``snapshot`` None for a group past the ANN threshold, read under the
        #: lock): the server's writer process publishes it to its reader processes
        self.on_publish: Callable[[GroupStore, ReadSnapshot | None], None] | None = None

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
        # embeddings of the new rows, the group view, the record view), without the answer
        # stage: its caches are the process's (sentences and their vectors by text), and
        # answering cost most of a warm query (the evidence sentences encoded: ~300 of ~420 ms
        # of CPU per warm of the sample group at load 10), paid twice per write and once per
        # reader process. The default rules pipeline: the caches are the store's, whichever
        # pipeline asks
        if self._warm_config is None:
            self._warm_config = self.config.model_copy(
                update={"backend": "rules", "answer_question": False}
            )
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
        if not empty and self.warm_snapshots:
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

    def maintain(
        self, group: str, now: datetime | None = None, seed: int = 0, backend: str = "rules"
    ) -> dict[str, Any]:
        """The entity path over the group's new rows, then one maintenance tick at ``now``
        (:func:`~speakerflow.pipelines.entity_path.maintain_group`, what ``speakerflow
        maintain --group`` runs), on the open store under the group's lock; returns its
        report. The group's knowledge changed: the next :meth:`inject` loads it again, and a
        group with a read snapshot gets a new one (with its knowledge, where
        :attr:`snapshot_knowledge`) before this returns."""
        from speakerflow.pipelines.entity_path import maintain_group

        if self.read_only:
            raise PermissionError(f"group {group!r}: this Memory is read-only")
        with self._held(group) as g:
            report = maintain_group(g.store, backend=backend, now=now, seed=seed)
            g.knowledge = None
            g.version += 1
            if g.snapshot is not None:
                self._publish(g)
        return report

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

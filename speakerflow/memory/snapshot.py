"""Read snapshots: a group as of its last complete write, read without the group's lock."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from speakerflow.graphs import SearchFilter


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

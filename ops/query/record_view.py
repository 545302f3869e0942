"""A group's derived records (System 2) as a cached view, and the records channel that
lets them rank System 1's messages (:func:`record_channel`); Resolve and recall both read it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from speakerflow.graphs import query_terms
from speakerflow.ops.query.group_view import GroupView
from speakerflow.ops.text.embed import Embedder, encode_query
from speakerflow.ops.text.embed_cache import cached_embeddings


@dataclass
class RecordView:
    """A group's records as Python rows, indexed by owner and by entry id (cached per store)."""

    rows: list[dict]
    by_id: dict[str, dict]
    by_owner: dict[str, list[int]] = field(default_factory=dict)
    by_source: dict[str, list[int]] = field(default_factory=dict)
    terms: list[set[str]] = field(default_factory=list)
    idf: dict[str, float] = field(default_factory=dict)
    #: per (embedder, layers, heads only, message count): record matrix and record -> message rows
    channel_cache: dict = field(default_factory=dict)
    #: term -> the records (ascending) whose ``terms`` hold it: which records an issue word hits
    postings: dict[str, np.ndarray] = field(default_factory=dict)
    #: True for a current head (not superseded, not invalidated)
    heads: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    #: per message count: (message rows each record rests on, flat, and each record's start)
    _rests_on: dict = field(default_factory=dict)

    def rests_on(self, view: GroupView) -> tuple[np.ndarray, np.ndarray]:
        """The message rows of each record's ``from_ids`` that ``view`` holds, as one flat
        array and the start of each record's slice in it (``starts[i]:starts[i + 1]``);
        once per message count."""
        key = len(view)
        found = self._rests_on.get(key)
        if found is None:
            flat: list[int] = []
            starts = np.zeros(len(self.rows) + 1, dtype=np.int64)
            pos = view.pos
            for i, r in enumerate(self.rows):
                flat.extend(pos[m] for m in r["from_ids"] if m in pos)
                starts[i + 1] = len(flat)
            found = self._rests_on[key] = (np.asarray(flat, dtype=np.int64), starts)
        return found

    def in_layers(self, layers) -> np.ndarray:
        """True for the records of ``layers`` (cached per layer tuple)."""
        key = ("layers", tuple(layers))
        found = self.channel_cache.get(key)
        if found is None:
            wanted = set(layers)
            found = self.channel_cache[key] = np.array(
                [r["layer"] in wanted for r in self.rows], dtype=bool
            )
        return found

    @classmethod
    def of(cls, store) -> RecordView:
        table = store.records()
        cached = getattr(store, "_record_view", None)
        if cached is not None and cached[0] is table:
            return cached[1]
        rows = table.to_pylist()
        view = cls(rows, {r["entry_id"]: r for r in rows})
        df: dict[str, int] = {}
        for i, r in enumerate(rows):
            view.by_owner.setdefault(r["owner"], []).append(i)
            view.by_source.setdefault(r["source"], []).append(i)
            terms = set(query_terms(r["content"] + " " + (r.get("event") or "")))
            view.terms.append(terms)
            for t in terms:
                df[t] = df.get(t, 0) + 1
        view.idf = {t: math.log(1 + (len(rows) + 1) / (n + 0.5)) for t, n in df.items()}
        postings: dict[str, list[int]] = {}
        for i, terms in enumerate(view.terms):
            for t in terms:
                postings.setdefault(t, []).append(i)
        view.postings = {t: np.asarray(ix, dtype=np.int64) for t, ix in postings.items()}
        view.heads = np.array(
            [r.get("superseded_by") is None and r.get("invalid_at") is None for r in rows],
            dtype=bool,
        )
        store._record_view = (table, view)
        return view


def record_channel(
    view: GroupView,
    question: str,
    embedder: Embedder | None,
    layers,
    top: int = 20,
) -> np.ndarray:
    """System 2 as one more System 1 recall channel: the ``top`` records most similar to the
    question (MiniLM over ``"owner: content"``) rank the messages they rest on; a message
    scores the similarity of its best such record (0 when no chosen record cites it).

    Every state of a chain takes part, superseded and invalidated ones too: recall finds the
    messages that were said, and an earlier state still says what its messages are about
    (an UPDATE's head is worded for the new state and cites at most ``max_cited`` messages).
    Reading heads only cost LoCoMo recall@10 once the rules Writer linked changes of mind
    (docs/query-path.md, "Recall and update chains").

    Fused as a low-weight reciprocal-rank list, a record that spans messages (across
    sessions, too) lifts all of them without displacing what the other channels found.
    """
    out = np.zeros(len(view), dtype=np.float64)
    if embedder is None or not len(view):
        return out
    records = RecordView.of(view.store)
    key = (embedder.name, tuple(layers), len(view))
    if key not in records.channel_cache:
        usable = [i for i, r in enumerate(records.rows) if r["layer"] in layers]
        ids = [records.rows[i]["entry_id"] for i in usable]
        texts = [f"{records.rows[i]['owner']}: {records.rows[i]['content']}" for i in usable]
        mat = cached_embeddings(view.store, embedder, ids, texts, kind="records")
        rec, rows = [], []  # (usable position, message row) pairs: what each record rests on
        for j, i in enumerate(usable):
            for mid in records.rows[i]["from_ids"]:
                if mid in view.pos:
                    rec.append(j)
                    rows.append(view.pos[mid])
        records.channel_cache[key] = (
            mat,
            np.asarray(rec, dtype=np.int64),
            np.asarray(rows, dtype=np.int64),
        )
    mat, rec, rows = records.channel_cache[key]
    if not len(mat):
        return out
    sims = mat @ encode_query(embedder, question)
    chosen = np.zeros(len(sims), dtype=bool)
    best = np.argsort(-sims, kind="stable")[:top]
    chosen[best[sims[best] > 0]] = True
    keep = chosen[rec]
    np.maximum.at(out, rows[keep], sims[rec[keep]].astype(np.float64))
    return out


def warm_record_embeddings(store, embedder: Embedder | None) -> int:
    """Embed every record of the group now (ingest-time work), so no query pays for it."""
    if embedder is None:
        return 0
    records = RecordView.of(store)
    layers = tuple(dict.fromkeys(r["layer"] for r in records.rows))
    _dense_sims(store, records, layers, "", embedder)
    return len(records.rows)


def _dense_sims(
    store, records: RecordView, layers, question: str, embedder: Embedder | None
) -> np.ndarray:
    """Cosine of each record of ``layers`` to ``question`` (0.0 for the other records and
    without an embedder). The record matrix is read from the group's cache once per record
    view; the question vector is the one recall memoised."""
    out = np.zeros(len(records.rows), dtype=np.float64)
    if embedder is None:
        return out
    key = ("dense", embedder.name, tuple(layers))
    found = records.channel_cache.get(key)
    if found is None:
        usable = np.flatnonzero(records.in_layers(layers))
        ids = [records.rows[i]["entry_id"] for i in usable]
        texts = [f"{records.rows[i]['owner']}: {records.rows[i]['content']}" for i in usable]
        mat = cached_embeddings(store, embedder, ids, texts, kind="records") if ids else None
        found = records.channel_cache[key] = (usable, mat)
    usable, mat = found
    if mat is not None and len(usable):
        out[usable] = (mat @ encode_query(embedder, question)).astype(np.float64)
    return out

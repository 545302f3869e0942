"""BM25 text search over messages and record contents.

:class:`TantivyIndex` is the real index (one per group); :class:`InMemoryIndex` is a small
pure-Python BM25 with the same interface, for fast unit tests.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import numpy as np
import pyarrow as pa

from speakerflow.settings import setting
from speakerflow.words import STOPWORDS, words

#: Filterable fields (exact match, raw tokenizer).
FILTER_FIELDS = ("doc_id", "kind", "group_id", "speaker", "owner", "layer", "session_id")


#: i64 fast field holding :func:`doc_key` of the document id (indexes created since it exists)
KEY_FIELD = "doc_key"


def doc_key(doc_id: str) -> int:
    """A 63-bit key of a document id (blake2b): what the index keeps as a fast field, so a
    search can return ids of many hits without fetching each stored document."""
    return (
        int.from_bytes(hashlib.blake2b(doc_id.encode(), digest_size=8).digest(), "little") >> 1
    )  # fits an i64


def doc_keys(doc_ids: list[str]) -> np.ndarray:
    """:func:`doc_key` of many ids at once, as an ``int64`` array (the same values: one
    blake2b digest per id, the 64-bit words read and shifted by numpy)."""
    b2 = hashlib.blake2b
    raw = b"".join([b2(d.encode(), digest_size=8).digest() for d in doc_ids])
    return (np.frombuffer(raw, dtype="<u8") >> np.uint64(1)).astype(np.int64)


def index_threads() -> int:
    """Indexing threads of a Tantivy writer: ``$SPEAKERFLOW_INDEX_THREADS``, else one per
    two cores (at least 1, at most 4: the Kuzu COPY of the same batch runs beside it)."""
    threads = setting("index_threads")
    if threads is not None:
        return threads
    return max(1, min(4, (os.cpu_count() or 1) // 2))


def query_terms(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` without stopwords (what a BM25 query searches for)."""
    return [w for w in words(text) if w not in STOPWORDS]


@dataclass(frozen=True)
class Hit:
    """One search result: the document id and its BM25 score."""

    doc_id: str
    score: float


@dataclass(frozen=True)
class SearchFilter:
    """Optional filters; ``None`` means "any". Times are inclusive UTC bounds."""

    kind: str | None = None
    speaker: str | None = None
    owner: str | None = None
    layer: str | None = None
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None


class TantivyIndex:
    """A Tantivy index with BM25 over ``text`` and raw filter fields.

    A document is a dict with ``doc_id``, ``kind`` (``message`` or ``record``), ``text``,
    optional filter fields and ``ts`` (aware datetime).
    """

    #: documents per JSON chunk of :meth:`add_table`
    CHUNK = 20_000

    def __init__(
        self,
        path: str | Path,
        writable: bool = True,
        heap_mb: int = 64,
        threads: int | None = None,
        keep_writer: bool | None = None,
    ):
        import tantivy

        self._t = tantivy
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        #: whether documents carry :data:`KEY_FIELD` (an index made before it existed does not)
        self.keyed = True
        self.schema = self._schema(keyed=True)
        try:
            self.index = tantivy.Index(self.schema, path=str(self.path), reuse=True)
        except ValueError as exc:
            if "schema does not match" not in str(exc):
                raise
            self.keyed = False
            self.schema = self._schema(keyed=False)
            self.index = tantivy.Index(self.schema, path=str(self.path), reuse=True)
        #: indexing threads of the writer (:func:`index_threads` unless given)
        self.threads = threads or index_threads()
        self._heap = heap_mb * 1024 * 1024 * self.threads  # ``heap_mb`` per indexing thread
        #: keep one writer across commits (merges run in the background; waited for on
        #: :meth:`close`) instead of a writer per commit that waits for its merges (a store's
        #: index: ``$SPEAKERFLOW_INDEX_KEEP_WRITER``, on by default; any other index: off)
        self.keep_writer = bool(keep_writer)
        self._writer = None
        self._stale = False  # a commit since the last reload: reload before the next search
        self.writable = writable
        #: seconds per write step, summed over this object's life (the ingest profile)
        self.timings: dict[str, float] = defaultdict(float)

    def _schema(self, keyed: bool):
        builder = self._t.SchemaBuilder()
        for name in FILTER_FIELDS:
            builder.add_text_field(name, stored=name == "doc_id", fast=True, tokenizer_name="raw")
        builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
        builder.add_date_field("ts", indexed=True, fast=True)
        if keyed:
            builder.add_integer_field(KEY_FIELD, stored=False, indexed=False, fast=True)
        return builder.build()

    def _with_keys(self, columns: dict[str, list[Any]]) -> dict[str, list[Any]]:
        if not self.keyed or "doc_id" not in columns:
            return columns
        return {**columns, KEY_FIELD: doc_keys(columns["doc_id"]).tolist()}

    def _writer_or_open(self):
        if not self.writable:
            raise PermissionError(f"text index {self.path} was opened read-only")
        if self._writer is None:
            self._writer = self.index.writer(self._heap, self.threads)
        return self._writer

    def _commit(self, fill) -> None:
        """Run ``fill(writer)`` and commit: all or nothing (rolled back on any error). Then
        either wait for the writer's merges and drop it, or (``keep_writer``) keep it for
        the next commit with its merges running in the background. The searcher is
        reloaded lazily, at the next read."""
        writer = self._writer_or_open()
        t0 = time.perf_counter()
        try:
            fill(writer)
            t1 = time.perf_counter()
            writer.commit()
        except BaseException:
            writer.rollback()
            raise
        t2 = time.perf_counter()
        self._stale = True
        if not self.keep_writer:
            self._writer = None
            writer.wait_merging_threads()
        self.timings["index.add"] += t1 - t0
        self.timings["index.commit"] += t2 - t1
        self.timings["index.merge_wait"] += time.perf_counter() - t2

    def _searcher(self):
        if self._stale:
            self.index.reload()
            self._stale = False
        return self.index.searcher()

    def add(self, docs: list[dict[str, Any]]) -> None:
        """Add documents and commit (all or nothing: on error the batch is rolled back)."""
        names = (*FILTER_FIELDS, "text", "ts")
        self.add_columns({k: [d.get(k) for d in docs] for k in names} if docs else {})

    def add_columns(self, columns: dict[str, list[Any]], replace: bool = False) -> None:
        """Bulk form of :meth:`add`: equal-length value lists per field (``None`` = absent).

        Builds each Tantivy document straight from the columns, without per-row dicts: the
        ingest path's hot loop. ``replace=True`` first deletes documents with the same
        ``doc_id`` in the same commit (idempotent: redoing a batch leaves one copy).
        """
        columns = self._with_keys(columns)
        names = [k for k in (*FILTER_FIELDS, "text", "ts", KEY_FIELD) if k in columns]
        if not names or not columns[names[0]]:
            return
        Document = self._t.Document

        def fill(writer) -> None:
            if replace:
                for doc_id in columns["doc_id"]:
                    writer.delete_documents("doc_id", doc_id)
            for values in zip(*(columns[k] for k in names), strict=True):
                fields = {k: v for k, v in zip(names, values, strict=True) if v is not None}
                fields.setdefault("text", "")
                writer.add_document(Document(**fields))

        self._commit(fill)

    def add_table(self, table: pa.Table) -> None:
        """:meth:`add_columns` for an Arrow table with one column per field: the documents go
        to Tantivy as JSON lines that polars writes column-wise (``ts`` as RFC 3339 UTC),
        one ``add_json`` call each, instead of a Python dict and ``Document`` per row. A table
        with nulls takes :meth:`add_columns` (a null field is left out of its document)."""
        names = [k for k in (*FILTER_FIELDS, "text", "ts") if k in table.column_names]
        if not names or not table.num_rows:
            return
        if any(table[k].null_count for k in names):
            self.add_columns(table.select(names).to_pydict())
            return
        import polars as pl

        def lines(lo: int, size: int) -> list[str]:
            t0 = time.perf_counter()
            part = table.slice(lo, size).select(names)
            frame = cast(pl.DataFrame, pl.from_arrow(part))  # a Table gives a DataFrame
            if "ts" in names:
                ts = pl.col("ts")
                zoned = getattr(frame.schema["ts"], "time_zone", None)
                ts = ts.dt.convert_time_zone("UTC") if zoned else ts.dt.replace_time_zone("UTC")
                frame = frame.with_columns(ts.dt.strftime("%Y-%m-%dT%H:%M:%S%.6fZ"))
            if self.keyed and "doc_id" in names:
                frame = frame.with_columns(
                    pl.Series(KEY_FIELD, doc_keys(frame["doc_id"].to_list()), dtype=pl.Int64)
                )
            out = frame.write_ndjson().split("\n")  # JSON escapes newlines inside strings
            self.timings["index.docs"] += time.perf_counter() - t0
            return out

        def fill(writer) -> None:
            # in chunks: the writer's threads index a chunk while the next one is built,
            # and a big table never has all its JSON lines in memory at once
            add = writer.add_json
            for lo in range(0, table.num_rows, self.CHUNK):
                for line in lines(lo, self.CHUNK):
                    if line:
                        add(line)

        self._commit(fill)

    def rebuild(self, columns: dict[str, list[Any]]) -> None:
        """Replace every document with ``columns`` in one commit and delete the old segment
        files (nothing of a removed document stays on disk; used by forget)."""
        writer = self._writer_or_open()
        try:
            writer.delete_all_documents()
            columns = self._with_keys(columns)
            names = [k for k in (*FILTER_FIELDS, "text", "ts", KEY_FIELD) if k in columns]
            for values in zip(*(columns[k] for k in names), strict=True) if names else ():
                fields = {k: v for k, v in zip(names, values, strict=True) if v is not None}
                fields.setdefault("text", "")
                writer.add_document(self._t.Document(**fields))
            writer.commit()
        except BaseException:
            writer.rollback()
            raise
        writer.garbage_collect_files()
        writer.wait_merging_threads()
        self._writer = None
        self._stale = True

    def replace_columns(self, columns: dict[str, list[Any]]) -> None:
        """:meth:`add_columns` that first removes documents with the same ids (one commit)."""
        self.add_columns(columns, replace=True)

    def doc_ids(self, kind: str | None = None) -> list[str]:
        """Every stored document id (optionally of one ``kind``), with repeats (for audits)."""
        searcher = self._searcher()
        n = searcher.num_docs
        if n == 0:
            return []
        q = (
            self._t.Query.term_query(self.schema, "kind", kind)
            if kind
            else self._t.Query.all_query()
        )
        result = searcher.search(q, limit=max(n, 1), count=False)
        return [searcher.doc(addr)["doc_id"][0] for _, addr in result.hits]

    def delete(self, doc_ids: list[str]) -> None:
        """Remove documents by id (used to undo a failed multi-store write)."""

        def fill(writer) -> None:
            for doc_id in doc_ids:
                writer.delete_documents("doc_id", doc_id)

        self._commit(fill)

    def search(self, query: str, k: int = 10, flt: SearchFilter | None = None) -> list[Hit]:
        found = self._search(query, k, flt)
        if found is None:
            return []
        searcher, hits = found
        return [Hit(searcher.doc(addr)["doc_id"][0], float(score)) for score, addr in hits]

    def search_keys(
        self, query: str, k: int = 10, flt: SearchFilter | None = None
    ) -> tuple[list[int], list[float]] | None:
        """:meth:`search` as (:func:`doc_key` of each hit, scores), best first, read from the
        key fast field instead of each stored document; ``None`` for an index without keys."""
        if not self.keyed:
            return None
        found = self._search(query, k, flt)
        if found is None:
            return [], []
        searcher, hits = found
        keys = searcher.fast_field_values(KEY_FIELD, [addr for _, addr in hits])
        if any(key is None for key in keys):  # a segment written without keys: read the ids
            return [doc_key(searcher.doc(addr)["doc_id"][0]) for _, addr in hits], [
                float(s) for s, _ in hits
            ]
        return keys, [float(s) for s, _ in hits]

    def _search(self, query: str, k: int, flt: SearchFilter | None):
        terms = query_terms(query)
        if not terms or k <= 0:
            return None
        Query, Occur = self._t.Query, self._t.Occur
        # terms are plain lower-case words, so the parser sees no operators
        text_q = self.index.parse_query(" ".join(terms), ["text"])
        clauses = [(Occur.Must, text_q)]
        flt = flt or SearchFilter()
        for name in ("kind", "speaker", "owner", "layer", "session_id"):
            value = getattr(flt, name)
            if value is not None:
                clauses.append((Occur.Must, Query.term_query(self.schema, name, value)))
        if flt.since is not None or flt.until is not None:
            clauses.append(
                (
                    Occur.Must,
                    Query.range_query(
                        self.schema, "ts", self._t.FieldType.Date, flt.since, flt.until
                    ),
                )
            )
        searcher = self._searcher()
        result = searcher.search(Query.boolean_query(clauses), limit=k, count=False)
        return searcher, result.hits

    def count(self) -> int:
        return self._searcher().num_docs

    def close(self) -> None:
        """Drop the writer after its merges (anything not committed is dropped with it; not
        ``rollback``, which would also abandon the merges in flight and leave the index
        unmerged)."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            t0 = time.perf_counter()
            writer.wait_merging_threads()
            self.timings["index.merge_wait"] += time.perf_counter() - t0


class InMemoryIndex:
    """A pure-Python BM25 (Lucene idf, ``k1``, ``b``) with the same interface, for unit tests
    and the unstemmed flat-BM25 baseline; ``tokenize`` maps text to terms."""

    def __init__(self, k1: float = 1.2, b: float = 0.75, tokenize=query_terms) -> None:
        self.k1, self.b, self.tokenize = k1, b, tokenize
        self.docs: dict[str, dict[str, Any]] = {}
        self._tf: dict[str, Counter[str]] = {}
        self._df: Counter[str] = Counter()
        self._postings: dict[str, set[str]] = defaultdict(set)

    def add(self, docs: list[dict[str, Any]]) -> None:
        for d in docs:
            if d["doc_id"] in self.docs:
                self.delete([d["doc_id"]])
            tf = Counter(self.tokenize(d.get("text") or ""))
            self.docs[d["doc_id"]] = d
            self._tf[d["doc_id"]] = tf
            for term in tf:
                self._df[term] += 1
                self._postings[term].add(d["doc_id"])

    def search(self, query: str, k: int = 10, flt: SearchFilter | None = None) -> list[Hit]:
        flt = flt or SearchFilter()
        n = len(self.docs) or 1
        avg = sum(sum(tf.values()) for tf in self._tf.values()) / n
        scores: dict[str, float] = defaultdict(float)
        k1, b = self.k1, self.b
        for term in set(self.tokenize(query)):
            idf = math.log(1 + (n - self._df[term] + 0.5) / (self._df[term] + 0.5))
            for doc_id in self._postings.get(term, ()):
                tf = self._tf[doc_id]
                length = sum(tf.values())
                f = tf[term]
                scores[doc_id] += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * length / (avg or 1)))
        hits = [Hit(d, s) for d, s in scores.items() if _matches(self.docs[d], flt)]
        hits.sort(key=lambda h: (-h.score, h.doc_id))
        return hits[:k]

    def count(self) -> int:
        return len(self.docs)

    def search_keys(
        self, query: str, k: int = 10, flt: SearchFilter | None = None
    ) -> tuple[list[int], list[float]]:
        hits = self.search(query, k, flt)
        return [doc_key(h.doc_id) for h in hits], [h.score for h in hits]

    def add_columns(self, columns: dict[str, list[Any]], replace: bool = False) -> None:
        names = list(columns)
        self.add(
            [dict(zip(names, row, strict=True)) for row in zip(*columns.values(), strict=True)]
        )

    def replace_columns(self, columns: dict[str, list[Any]]) -> None:
        self.add_columns(columns, replace=True)

    def add_table(self, table: pa.Table) -> None:
        self.add_columns(table.to_pydict())

    def rebuild(self, columns: dict[str, list[Any]]) -> None:
        self.delete(list(self.docs))
        self.add_columns(columns)

    def doc_ids(self, kind: str | None = None) -> list[str]:
        return [d for d, doc in self.docs.items() if kind is None or doc.get("kind") == kind]

    def delete(self, doc_ids: list[str]) -> None:
        for doc_id in doc_ids:
            tf = self._tf.pop(doc_id, None)
            if doc_id not in self.docs:
                continue
            del self.docs[doc_id]
            for term in tf or ():
                self._df[term] -= 1
                self._postings[term].discard(doc_id)

    def close(self) -> None:
        pass


def _matches(doc: dict[str, Any], flt: SearchFilter) -> bool:
    for name in ("kind", "speaker", "owner", "layer", "session_id"):
        value = getattr(flt, name)
        if value is not None and doc.get(name) != value:
            return False
    ts = doc.get("ts")
    if flt.since is not None and (ts is None or ts < flt.since):
        return False
    return not (flt.until is not None and (ts is None or ts > flt.until))

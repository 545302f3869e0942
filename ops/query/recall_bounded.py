"""Recall in large groups: every channel computed over candidate rows, not over every message.

:func:`speakerflow.ops.query.recall.recall` scores every message of the group per question: a BM25
vector as long as the group, window and session arithmetic over it, a rank (a sort) of
every message per channel. That is exact and cheap in a group of hundreds of messages and
linear (n log n) per question in a group of a million. Above :func:`bounded_above` messages
(``$SPEAKERFLOW_BOUNDED_RECALL_ABOVE``, 20,000 by default, far above any LoCoMo or
SocialMemBench group: those keep the exact path, bit for bit) recall takes this path:

- **BM25 candidates bounded**: Tantivy's top ``bm25_cap`` messages
  (``$SPEAKERFLOW_BM25_CAP``, default :data:`BM25_CAP`), not one hit per matching message;
- **window** scores only for those rows and their session neighbours (the only rows a
  window can score above 0), looked up through the view's ``prev`` / ``next`` rows;
- **session** scores only for the rows of the sessions those candidates are in, read from
  a per-session row index built once per view (:func:`session_rows`);
- **ranks and the fusion** over the rows with a positive score only (a zero score gets
  nothing from the fusion, and positive scores rank first, so their ranks are the full
  ranks), the pool from those rows.

Everything except the cap is exact: with ``bm25_cap`` at least the number of matching
messages the fused scores and the pool are identical to the exact path's
(``tests/unit/test_recall_bounded.py`` checks this bit for bit). The cap is what changes
results in a large group: a message outside the top ``bm25_cap`` by BM25 gets no window or
session score unless a candidate is its neighbour or in its session. Dense channels are
unchanged (the ANN top-k above its own threshold); the dense-window channel is still a
product over every message's window embedding (see docs/scaling.md).

The fused score vector handed to Select and Resolve stays one float per message (a dense
``np.zeros(n)`` written at the candidate rows), so the operators downstream are unchanged;
:func:`fallback_rows` is Resolve's per-person fallback without a pass over every message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from speakerflow.graphs import SearchFilter
from speakerflow.graphs.text_index import doc_key
from speakerflow.ops.query.channels import (
    RecallResult,
    dense_channels,
    protect_confident,
    query_weights,
)
from speakerflow.settings import setting

#: BM25 candidates per question in a large group (measured, docs/scaling.md)
BM25_CAP = 2_000
#: groups with more messages than this take the bounded path
BOUNDED_ABOVE = 20_000


def bounded_above() -> int:
    """Message count above which recall is bounded (``$SPEAKERFLOW_BOUNDED_RECALL_ABOVE``)."""
    above = setting("bounded_recall_above")
    return BOUNDED_ABOVE if above is None else above


def bm25_cap() -> int:
    """BM25 candidates per question on the bounded path (``$SPEAKERFLOW_BM25_CAP``)."""
    cap = setting("bm25_cap")
    return BM25_CAP if cap is None else cap


def is_large(view) -> bool:
    """True when ``view``'s group takes the bounded path."""
    return len(view) > bounded_above()


@dataclass
class SpeakerIndex:
    """Speakers of a view as codes: ``names`` sorted, ``codes[row]`` an index into it."""

    names: list[str]
    codes: np.ndarray

    def code(self, name: str) -> int:
        i = int(np.searchsorted(np.asarray(self.names, dtype=object), name)) if self.names else 0
        return i if i < len(self.names) and self.names[i] == name else -1


def speaker_index(view) -> SpeakerIndex:
    """The view's :class:`SpeakerIndex` (built once per view, cached on it)."""
    index = view.__dict__.get("_speaker_index")
    if index is None:
        names = sorted(set(view.speakers))
        lookup = {s: i for i, s in enumerate(names)}
        codes = np.fromiter(
            (lookup[s] for s in view.speakers), dtype=np.int32, count=len(view.speakers)
        )
        index = view.__dict__["_speaker_index"] = SpeakerIndex(names, codes)
    return index


def session_rows(view) -> tuple[np.ndarray, np.ndarray, bool]:
    """Rows grouped by session: ``order[starts[s]:starts[s + 1]]`` are the rows of session
    number ``s`` (``view.session_of``), ascending; the flag says every session is one run of
    consecutive rows (then ranks over whole sessions need no sort over rows). Once per view."""
    cached = view.__dict__.get("_session_rows")
    if cached is None:
        order = np.argsort(view.session_of, kind="stable")
        counts = np.bincount(
            view.session_of, minlength=int(view.session_of.max()) + 1 if len(view) else 0
        )
        starts = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        same = view.session_of[order[1:]] == view.session_of[order[:-1]]
        contiguous = bool(np.all(np.diff(order)[same] == 1))
        cached = view.__dict__["_session_rows"] = (order, starts, contiguous)
    return cached


def key_rows(view) -> tuple[np.ndarray, np.ndarray] | None:
    """The view's message keys (:func:`~speakerflow.graphs.text_index.doc_key`) sorted, and
    the row of each; ``None`` if two ids share a key (then hits are read by id). Once per view."""
    cached = view.__dict__.get("_key_rows", False)
    if cached is False:
        keys = np.fromiter((doc_key(m) for m in view.ids), dtype=np.int64, count=len(view.ids))
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        cached = None if len(keys) > 1 and bool(np.any(keys[1:] == keys[:-1])) else (keys, order)
        view.__dict__["_key_rows"] = cached
    return cached


def bm25_top(
    view, query: str, cap: int, speaker: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The top ``cap`` messages by BM25 as (rows ascending, scores)."""
    flt = SearchFilter(kind="message", speaker=speaker)
    index = key_rows(view)
    found = (
        view.store.search_keys(query, cap, flt)
        if index is not None and hasattr(view.store, "search_keys")
        else None
    )
    if found is None:
        hits = view.store.search(query, cap, flt)
        pairs = [(view.pos.get(h.doc_id), h.score) for h in hits]
        rows = np.array([r for r, _ in pairs if r is not None], dtype=np.int64)
        scores = np.array([s for r, s in pairs if r is not None], dtype=np.float64)
    else:
        assert index is not None  # search_keys ran: the index is there
        keys, order = index
        hit_keys = np.array(found[0], dtype=np.int64)
        at = np.searchsorted(keys, hit_keys)
        at[at >= len(keys)] = 0
        known = keys[at] == hit_keys if len(keys) else np.zeros(len(hit_keys), dtype=bool)
        rows = order[at[known]].astype(np.int64)
        scores = np.array(found[1], dtype=np.float64)[known]
    # rows ascending; a repeated row keeps its last score, like the exact path's vector write
    order = np.argsort(rows, kind="stable")
    rows, scores = rows[order], scores[order]
    last = np.ones(len(rows), dtype=bool)
    last[:-1] = rows[1:] != rows[:-1]
    return rows[last], scores[last]


def _unique(x: np.ndarray) -> np.ndarray:
    """Sorted distinct values (a sort, not numpy's hash table: faster on these sizes)."""
    x = np.sort(x)
    keep = np.ones(len(x), dtype=bool)
    keep[1:] = x[1:] != x[:-1]
    return x[keep]


def _lookup(rows: np.ndarray, scores: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``scores`` at rows ``at`` (0.0 where ``at`` is -1 or not among ``rows``, sorted)."""
    out = np.zeros(len(at), dtype=np.float64)
    if not len(rows):
        return out
    i = np.searchsorted(rows, at)
    i[i >= len(rows)] = 0
    hit = (at >= 0) & (rows[i] == at)
    out[hit] = scores[i[hit]]
    return out


def window_sparse(
    view, rows: np.ndarray, scores: np.ndarray, weight: float
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~speakerflow.ops.query.recall.window_scores` at the rows it can score above 0: the
    candidates and their same-session neighbours."""
    near = np.concatenate([rows, view.prev[rows], view.next[rows]])
    cand = _unique(near[near >= 0])
    return cand, _lookup(rows, scores, cand) + weight * (
        _lookup(rows, scores, view.prev[cand]) + _lookup(rows, scores, view.next[cand])
    )


def session_sparse(
    view, rows: np.ndarray, scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bool]:
    """:func:`~speakerflow.ops.query.recall.session_scores` at the rows of the candidates' sessions,
    as (rows, scores, ranked): ``ranked`` when the rows come in rank order (best session
    first, ties by row), which holds when every session is a run of consecutive rows."""
    if not len(rows):
        return rows, scores, True
    sess = view.session_of[rows]
    uniq = _unique(sess)
    best = np.zeros(len(uniq))
    np.maximum.at(best, np.searchsorted(uniq, sess), scores)
    order, starts, contiguous = session_rows(view)
    first = order[starts[uniq]]
    if contiguous:  # sessions by (-best, first row): their rows in that order are the ranks
        by = np.lexsort((first, -best))
        uniq, best, first = uniq[by], best[by], first[by]
    sizes = starts[uniq + 1] - starts[uniq]
    out_rows = np.concatenate([order[starts[s] : starts[s + 1]] for s in uniq])
    return out_rows, np.repeat(best, sizes), contiguous


def _positive(vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows = np.flatnonzero(vector > 0)
    return rows, vector[rows]


def fuse_sparse(
    n: int, channels: dict[str, tuple], weights: dict[str, float], rrf_k: float = 60.0
) -> np.ndarray:
    """:func:`~speakerflow.ops.query.recall.fuse` over sparse channels (rows, scores[, ranked]):
    ranks among the positive entries only (the same ranks; zero scores add nothing); a
    channel flagged ``ranked`` already lists its rows in rank order. Returns ``n`` floats."""
    total = np.zeros(n, dtype=np.float64)
    used = False
    for name, channel in channels.items():
        w = weights.get(name, 0.0)
        if w <= 0:
            continue
        used = True
        rows, scores = channel[0], channel[1]
        pos = scores > 0
        rows, scores = rows[pos], scores[pos]
        ranks = w / (rrf_k + np.arange(1, len(rows) + 1, dtype=np.float64))
        if len(channel) > 2 and channel[2]:
            part = ranks
        else:
            part = np.empty(len(rows), dtype=np.float64)
            part[np.lexsort((rows, -scores))] = ranks
        total[rows] += part
    if not used:
        raise ValueError(
            f"fusion has no channel with weight > 0 among {sorted(channels)}; set weights"
        )
    return total


def top_rows(fused: np.ndarray, cand: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` best of rows ``cand`` by (-fused, row), fused > 0 (a partition, then a sort
    of what can make the cut)."""
    cand = cand[fused[cand] > 0]
    if len(cand) > k > 0:
        kth = np.partition(-fused[cand], k - 1)[k - 1]
        cand = cand[-fused[cand] <= kth]
    return cand[np.lexsort((cand, -fused[cand]))][: max(k, 0)]


def recall_bounded(view, query: str, config, embedder=None):
    """:func:`~speakerflow.ops.query.recall.recall` for a large group (see the module doc)."""
    n = len(view)

    rows, scores = bm25_top(view, query, bm25_cap())
    channels: dict[str, tuple] = {"bm25": (rows, scores)}
    weights, kind = query_weights(query, config)  # System 2's weight by question kind (B1)
    if weights.get("window", 0) > 0:
        channels["window"] = window_sparse(view, rows, scores, config.window_weight)
    if weights.get("session", 0) > 0:
        channels["session"] = session_sparse(view, rows, scores)
    dense = {}
    if embedder is not None and n:
        dense = dense_channels(view, query, embedder, weights, config)
    channels.update({k: _positive(v) for k, v in dense.items()})
    fused = fuse_sparse(n, channels, weights, config.rrf_k)
    if (
        kind == "focused"
        and config.protect_top > 0
        and "records" in channels
        and weights.get("records", 0) > 0
        and any(weights.get(k, 0) > 0 for k in channels if k != "records")
    ):
        # System 1's confident hits are protected from the records channel, as in recall() (B1)
        s1 = fuse_sparse(
            n, {k: v for k, v in channels.items() if k != "records"}, weights, config.rrf_k
        )
        fused = protect_confident(
            _Channels(n, channels), weights, fused, config.protect_top, config.rrf_k, s1
        )
    if dense:
        cand = np.flatnonzero(fused > 0)
    elif "session" in channels:  # the candidates' sessions hold every row scored above
        cand = channels["session"][0]
    else:
        cand = _unique(np.concatenate([c[0] for c in channels.values()]))
    pool = [int(i) for i in top_rows(fused, cand, config.pool)]
    return RecallResult(fused, pool, _Channels(n, channels))


class _Channels(Mapping):
    """The channels as :class:`~speakerflow.ops.query.recall.RecallResult` holds them (a score per
    message), each written out only when read: nothing downstream reads them per query."""

    def __init__(self, n: int, sparse: dict[str, tuple]):
        self._n, self._sparse = n, sparse
        self._dense: dict[str, np.ndarray] = {}

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._dense:
            rows, scores = self._sparse[key][:2]
            value = np.zeros(self._n, dtype=np.float64)
            value[rows] = scores
            self._dense[key] = value
        return self._dense[key]

    def __iter__(self):
        return iter(self._sparse)

    def __len__(self) -> int:
        return len(self._sparse)


def fallback_rows(view, fused: np.ndarray, person: str, k: int) -> list[int]:
    """The rows of ``person``'s ``k`` best messages by fused score (> 0), best first, ties by
    row: what Resolve's exact fallback picks, read from the positive rows of ``fused``
    (found once per fused vector) instead of a pass over every message per person."""
    code = speaker_index(view).code(person)
    if code < 0 or k <= 0:
        return []
    cache = view.__dict__.get("_fallback_rows")
    if cache is None or cache[0] is not fused:
        rows = np.flatnonzero(fused > 0)
        cache = view.__dict__["_fallback_rows"] = (fused, rows, speaker_index(view).codes[rows])
    _, rows, codes = cache
    return [int(r) for r in top_rows(fused, rows[codes == code], k)]

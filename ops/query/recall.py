"""System 1 recall: score every message of a group for a query, and take a pool.

Channels (each a vector over the group's messages, in :meth:`GroupStore.messages` order):

- ``bm25``: BM25 from the group's text index (Tantivy with an English stemmer; the
  in-memory BM25 in unit tests), messages only.
- ``window``: the BM25 of a message plus ``window_weight`` times that of its neighbours in
  the same session; a message whose context also matches the query ranks higher (the
  "context window" retrieval that STACK-NOTES measured at 0.657 on LoCoMo).
- ``session``: a session-level prior, the best BM25 inside the message's session.
- ``dense``: cosine similarity to the question under a sentence embedder (optional).
- ``dense_window``: cosine similarity to the question of short windows of consecutive
  messages of one session (a window = a message and ``dense_window`` turns on each side,
  each ``"speaker: text"``); a message scores the best window it belongs to. Evidence that
  reads only in its context (an answer to the turn before, a follow-up) is found by its
  window. Window embeddings are ingest-time work, cached beside the message embeddings.
- ``records`` (System 2): the messages the records most similar to the question rest on
  (:func:`~speakerflow.ops.query.resolve.record_channel`); a low weight, so records add candidates
  without displacing System 1's. The ``s2`` ablation switches it off with System 2.
  Its weight depends on the question's kind (:func:`query_weights`): ``aggregate`` questions,
  whose evidence is spread over sessions, take ``aggregate_weights``, and ``broad`` ones
  (roll-ups over people, group matters, changes: what the records are written for) take
  ``broad_weights``; on ``focused`` single-fact questions System 1's confident hits are
  protected (:func:`protect_confident`).

:func:`fuse` combines the channels by weighted reciprocal-rank fusion, which needs no
score calibration between channels. :class:`Recall` is the operator (question table ->
pool and fused scores); :class:`GroupView` caches the per-group arrays the channels need.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from speakerflow.ops.core.base import Context, Operator, OperatorConfig, put_columns
from speakerflow.ops.core.registry import register
from speakerflow.ops.query.query_tables import CANDIDATE, fused_array, schema_of, with_question_ids
from speakerflow.ops.text.dense_index import dense_scores, group_index
from speakerflow.ops.text.embed import Embedder, cached_embeddings, encode_query

#: Channels a fusion may use.
CHANNELS = ("bm25", "window", "session", "dense", "dense_window", "records")


@dataclass
class GroupView:
    """Arrays over one group's messages, built once per store and reused by every query.

    ``pos`` maps msg_id -> row; ``prev``/``next`` give the neighbouring row in the same
    session (-1 at a session edge); ``session_of`` is a session number per row.
    """

    store: Any
    ids: list[str]
    speakers: list[str]
    texts: list[str]
    ts: list
    sessions: list[str]
    pos: dict[str, int]
    prev: np.ndarray
    next: np.ndarray
    session_of: np.ndarray
    embeddings: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def of(cls, store) -> GroupView:
        """The cached view of ``store`` (rebuilt when the message count changed)."""
        msgs = store.messages()
        view = getattr(store, "_group_view", None)
        if view is not None and len(view.ids) == msgs.num_rows:
            return view
        cols = msgs.select(["msg_id", "speaker", "text", "ts", "session_id"]).to_pydict()
        ids, sessions = cols["msg_id"], cols["session_id"]
        n = len(ids)
        session_num: dict[str, int] = {}
        session_of = np.array(
            [session_num.setdefault(s, len(session_num)) for s in sessions], dtype=np.int64
        )
        prev = np.full(n, -1, dtype=np.int64)
        nxt = np.full(n, -1, dtype=np.int64)
        if n > 1:
            same = session_of[1:] == session_of[:-1]
            idx = np.arange(1, n)
            prev[1:][same] = idx[same] - 1
            nxt[:-1][same] = idx[same]
        view = cls(
            store,
            ids,
            cols["speaker"],
            cols["text"],
            cols["ts"],
            sessions,
            {m: i for i, m in enumerate(ids)},
            prev,
            nxt,
            session_of,
        )
        store._group_view = view
        return view

    def __len__(self) -> int:
        return len(self.ids)

    def dense_matrix(self, embedder: Embedder) -> np.ndarray:
        """Embeddings of ``"speaker: text"`` per message under ``embedder`` (from the group's
        cache)."""
        if embedder.name not in self.embeddings:
            # the speaker label goes into the embedded text: questions name people, and
            # "Ana: I prefer Lisbon" is what the message means in a multi-party chat
            labelled = [f"{s}: {t}" for s, t in zip(self.speakers, self.texts, strict=True)]
            self.embeddings[embedder.name] = cached_embeddings(
                self.store, embedder, self.ids, labelled, kind="messages-labelled"
            )
        return self.embeddings[embedder.name]

    def window_rows(self, row: int, width: int = 1) -> list[int]:
        """``row`` and up to ``width`` turns on each side in the same session, in time order."""
        left, right = [], []
        r = row
        for _ in range(width):
            r = int(self.prev[r]) if r >= 0 else -1
            if r >= 0:
                left.append(r)
        r = row
        for _ in range(width):
            r = int(self.next[r]) if r >= 0 else -1
            if r >= 0:
                right.append(r)
        return left[::-1] + [row] + right

    def window_matrix(self, embedder: Embedder, width: int = 1) -> np.ndarray:
        """Embeddings of each message's window (see the module doc), from the group's cache.

        A window's cache id names all its messages, so a window that gains a neighbour
        later (messages appended to its session) is encoded afresh.
        """
        key = f"{embedder.name}/window-{width}"
        if key not in self.embeddings:
            ids, texts = [], []
            for row in range(len(self)):
                rows = self.window_rows(row, width)
                ids.append("+".join(self.ids[r] for r in rows))
                texts.append("\n".join(f"{self.speakers[r]}: {self.texts[r]}" for r in rows))
            self.embeddings[key] = cached_embeddings(
                self.store, embedder, ids, texts, kind=f"windows-{width}"
            )
        return self.embeddings[key]

    def neighbours(self, row: int, width: int = 1) -> list[int]:
        """Rows within ``width`` turns of ``row`` in the same session, nearest first."""
        out: list[int] = []
        left = right = row
        for _ in range(width):
            left = int(self.prev[left]) if left >= 0 else -1
            right = int(self.next[right]) if right >= 0 else -1
            out.extend(r for r in (left, right) if r >= 0)
        return out


def bm25_scores(view: GroupView, query: str, speaker: str | None = None) -> np.ndarray:
    """BM25 of every message for ``query`` (0.0 where no query term occurs)."""
    out = np.zeros(len(view), dtype=np.float64)
    if not len(view):
        return out
    from speakerflow.ops.query.recall_bounded import (
        bm25_top,  # the hits by key: no stored document read per hit
    )

    rows, scores = bm25_top(view, query, len(view), speaker)
    out[rows] = scores
    return out


def window_scores(view: GroupView, base: np.ndarray, weight: float = 0.5) -> np.ndarray:
    """``base`` plus ``weight`` times the neighbours' ``base`` (same session only)."""
    padded = np.append(base, 0.0)  # index -1 reads the appended 0.0
    return base + weight * (padded[view.prev] + padded[view.next])


def window_max(view: GroupView, scores: np.ndarray, width: int = 1) -> np.ndarray:
    """Each message gets the best score of the windows it belongs to: those centred on a
    message at most ``width`` turns away in the same session."""
    out = scores.copy()
    left = right = np.arange(len(scores))
    for _ in range(width):
        left = np.where(left >= 0, np.append(view.prev, -1)[left], -1)
        right = np.where(right >= 0, np.append(view.next, -1)[right], -1)
        padded = np.append(scores, 0.0)
        out = np.maximum(out, np.maximum(padded[left], padded[right]))
    return out


def session_scores(view: GroupView, base: np.ndarray) -> np.ndarray:
    """Each message gets the best ``base`` score of its session."""
    best = np.zeros(int(view.session_of.max()) + 1 if len(view) else 0)
    np.maximum.at(best, view.session_of, base)
    return best[view.session_of]


def rank_of(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each entry (ties broken by position); zero scores rank last."""
    order = np.argsort(-scores, kind="stable")  # ties by position
    ranks = np.empty(len(scores), dtype=np.float64)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


def fuse(
    channels: dict[str, np.ndarray], weights: dict[str, float], rrf_k: float = 60.0
) -> np.ndarray:
    """Weighted reciprocal-rank fusion: sum of ``w / (rrf_k + rank)`` over channels.

    A message that a channel scores 0 (no evidence at all) gets nothing from it.
    """
    total = None
    for name, scores in channels.items():
        w = weights.get(name, 0.0)
        if w <= 0:
            continue
        part = w / (rrf_k + rank_of(scores))
        part[scores <= 0] = 0.0
        total = part if total is None else total + part
    if total is None:
        raise ValueError(
            f"fusion has no channel with weight > 0 among {sorted(channels)}; set weights"
        )
    return total


class RecallConfig(OperatorConfig):
    """Budgets and weights of System 1 recall.

    ``pool`` is the recall-n of the paper (default 40); weights are per channel in the
    reciprocal-rank fusion (0 disables a channel); ``window_weight`` is how much a
    neighbour's BM25 adds to a message's window score; ``dense_window`` is the number of
    turns on each side of a message in its dense window.
    """

    pool: int = 40
    rrf_k: float = 60.0
    weights: dict[str, float] = {
        "bm25": 0.0,
        "window": 1.0,
        "session": 0.75,
        "dense": 0.5,
        "dense_window": 0.5,
        "records": 0.25,
    }
    window_weight: float = 0.5
    dense_window: int = 1
    #: records channel: how many best-matching records rank their messages, and which layers
    record_top: int = 40
    record_layers: tuple[str, ...] = (
        "per_speaker_core",
        "per_speaker_profile",
        "group_interaction",
        "group_insight",
    )
    #: System 2 by question kind (:func:`~speakerflow.ops.query.project.question_kind`): weight
    #: overrides for ``aggregate`` questions (only channels already on; ``-s2`` stays off)
    aggregate_weights: dict[str, float] = {"records": 0.5}
    #: the same for ``broad`` questions (roll-ups, group matters, changes)
    broad_weights: dict[str, float] = {"records": 0.5}
    #: ``focused`` questions: a message some System 1 channel ranks in its top ``protect_top``
    #: cannot be passed by a message that only the records channel lifts (0: off)
    protect_top: int = 5


@dataclass
class RecallResult:
    """Fused scores over all messages and the pool (rows, best first)."""

    fused: np.ndarray
    pool: list[int]
    channels: Mapping[str, np.ndarray]


def recall(
    view: GroupView, query: str, config: RecallConfig, embedder: Embedder | None = None
) -> RecallResult:
    """Score every message of the group for ``query`` and return the fused pool.

    Groups above :func:`~speakerflow.ops.query.recall_bounded.bounded_above` messages take the
    bounded path (:func:`~speakerflow.ops.query.recall_bounded.recall_bounded`: BM25 top-k, every
    channel over candidate rows); smaller groups are scored here, exactly."""
    from speakerflow.ops.query.recall_bounded import is_large, recall_bounded

    if is_large(view):
        return recall_bounded(view, query, config, embedder)
    base = bm25_scores(view, query)
    channels = {"bm25": base}
    weights, kind = query_weights(query, config)
    if weights.get("window", 0) > 0:
        channels["window"] = window_scores(view, base, config.window_weight)
    if weights.get("session", 0) > 0:
        channels["session"] = session_scores(view, base)
    if embedder is not None and len(view):
        channels.update(dense_channels(view, query, embedder, weights, config))
    fused = fuse(channels, weights, config.rrf_k) if len(view) else np.zeros(0)
    if (
        kind == "focused"
        and config.protect_top > 0
        and "records" in channels
        and weights.get("records", 0) > 0
    ):
        fused = protect_confident(channels, weights, fused, config.protect_top, config.rrf_k)
    order = np.lexsort((np.arange(len(fused)), -fused))
    pool = [int(i) for i in order[: config.pool] if fused[i] > 0]
    return RecallResult(fused, pool, channels)


def query_weights(query: str, config: RecallConfig) -> tuple[dict[str, float], str]:
    """The channel weights for ``query`` and its kind
    (:func:`~speakerflow.ops.query.project.question_kind`): ``aggregate`` and ``broad`` questions
    take ``config.aggregate_weights`` / ``config.broad_weights`` for channels that are on."""
    from speakerflow.ops.query.project import (
        question_kind,  # project sits beside this module; imported lazily
    )

    kind = question_kind(query)
    weights = dict(config.weights)
    override = {"aggregate": config.aggregate_weights, "broad": config.broad_weights}.get(kind, {})
    weights.update({k: w for k, w in override.items() if weights.get(k, 0) > 0})
    return weights, kind


#: the System 1 channels whose top ranks count as confident (the session prior ranks whole
#: sessions alike, so its top ranks say nothing about one message)
CONFIDENT_CHANNELS = ("bm25", "window", "dense", "dense_window")


def top_mask(scores: np.ndarray, top: int) -> np.ndarray:
    """True for the ``top`` best positive entries of ``scores`` (:func:`rank_of` order: ties by
    position), found by partition in linear time."""
    mask = np.zeros(len(scores), dtype=bool)
    positive = np.flatnonzero(scores > 0)
    if top <= 0 or not len(positive):
        return mask
    if len(positive) <= top:
        mask[positive] = True
        return mask
    kth = -np.partition(-scores[positive], top - 1)[top - 1]
    above = positive[scores[positive] > kth]
    ties = positive[scores[positive] == kth][: top - len(above)]
    mask[above] = True
    mask[ties] = True
    return mask


def protect_confident(
    channels,
    weights: dict[str, float],
    fused: np.ndarray,
    top: int,
    rrf_k: float = 60.0,
    s1: np.ndarray | None = None,
) -> np.ndarray:
    """``fused`` (System 1 plus the records channel) with System 1's confident hits protected.

    A message is confident when some System 1 channel (:data:`CONFIDENT_CHANNELS`) ranks it in
    its top ``top``. Every other message keeps its fused score but stays below each confident
    message that System 1 alone (the fusion without ``records``) ranked above it: the records
    channel may lift a confident message, and may reorder the others, but it cannot push a
    confident System 1 hit down by lifting another message past it. By construction, a message
    that System 1 ranked below a confident message passes it only when it is confident itself.
    """
    if s1 is None:
        system1 = {k: v for k, v in channels.items() if k != "records" and weights.get(k, 0) > 0}
        if not system1:
            return fused
        s1 = fuse(system1, weights, rrf_k)
    confident = np.zeros(len(s1), dtype=bool)
    for name in CONFIDENT_CHANNELS:
        if name in channels:
            confident |= top_mask(channels[name], top)
    if not confident.any():
        return fused
    held = np.sort(s1[confident])
    # the lowest confident System 1 score strictly above each message's own System 1 score
    nxt = np.searchsorted(held, s1, side="right")
    cap = np.where(nxt < len(held), held[np.minimum(nxt, len(held) - 1)], np.inf)
    out = fused.copy()
    other = ~confident
    out[other] = np.minimum(fused[other], np.nextafter(cap[other], -np.inf))
    return out


def dense_channels(
    view: GroupView,
    query: str,
    embedder: Embedder,
    weights: Mapping[str, float],
    config: RecallConfig,
) -> dict[str, np.ndarray]:
    """The channels that need the embedder, one score per message of the group, for the
    weights that are on: ``dense`` (the ANN index above a size threshold), ``dense_window``
    and ``records``. Shared by :func:`recall` and the bounded path."""
    out: dict[str, np.ndarray] = {}
    qvec = (
        encode_query(embedder, query)
        if any(weights.get(c, 0) > 0 for c in ("dense", "dense_window"))
        else None
    )
    if qvec is not None and weights.get("dense", 0) > 0:
        out["dense"] = dense_scores(view, embedder, qvec)  # ANN index above a size threshold
    if qvec is not None and weights.get("dense_window", 0) > 0:
        sims = np.clip(view.window_matrix(embedder, config.dense_window) @ qvec, 1e-6, None)
        out["dense_window"] = window_max(view, sims.astype(np.float64), config.dense_window)
    if weights.get("records", 0) > 0 and config.record_layers:
        from speakerflow.ops.query.resolve import record_channel  # resolve builds on this module

        out["records"] = record_channel(
            view, query, embedder, config.record_layers, config.record_top
        )
    return out


def warm_message_embeddings(
    store, embedder: Embedder | None, config: RecallConfig | None = None
) -> int:
    """Embed every message (and, when the config uses them, its dense window) now:
    ingest-time work, so no query pays for it. Returns the number of messages."""
    if embedder is None:
        return 0
    config = config or RecallConfig()
    view = GroupView.of(store)
    if len(view):
        view.dense_matrix(embedder)
        group_index(view, embedder)  # builds / extends the group's ANN index above its threshold
        if config.weights.get("dense_window", 0) > 0:
            view.window_matrix(embedder, config.dense_window)
    return len(view)


def unembedded_messages(store, embedder: Embedder | None) -> int:
    """How many of the group's messages have no cached vector under ``embedder``: what the
    first dense question would embed (0 without an embedder)."""
    if embedder is None:
        return 0
    from speakerflow.ops.text.embed import cached_ids

    ids = GroupView.of(store).ids
    have = cached_ids(store, embedder, "messages-labelled")
    return sum(1 for i in ids if i not in have)


@register
class Recall(Operator):
    """question table (``question``) -> the same rows plus ``pool`` (the recall pool:
    candidates ``msg_id``, ``score``, ``via="recall"``, best first) and ``fused`` (the fused
    score of every message of the group, which Select and Resolve read).

    Needs ``ctx.store``; ``ctx.backends["embedder"]`` (optional) enables dense recall.
    :func:`~speakerflow.ops.query.query_tables.candidates_table` flattens ``pool``.
    """

    name = "recall"
    consumes = ("question",)
    produces = schema_of(("pool", pa.list_(CANDIDATE)), ("fused", pa.list_(pa.float64())))
    passthrough = True
    Config = RecallConfig
    config: RecallConfig

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        view = GroupView.of(ctx.store)
        pools, vectors = [], []
        for question in table["question"].to_pylist():
            result = recall(view, question, self.config, ctx.backends.get("embedder"))
            pools.append(
                [
                    {
                        "msg_id": view.ids[r],
                        "score": float(result.fused[r]),
                        "via": "recall",
                        "anchor": None,
                    }
                    for r in result.pool
                ]
            )
            vectors.append(result.fused)
        return put_columns(
            with_question_ids(table), {"pool": pools, "fused": fused_array(vectors)}, self.produces
        )

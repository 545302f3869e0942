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
  (:func:`~speakerflow.ops.query.record_view.record_channel`); a low weight, so records add
  candidates without displacing System 1's. The ``s2`` ablation switches it off with System 2.
  Its weight depends on the question's kind (:func:`query_weights`): ``aggregate`` questions,
  whose evidence is spread over sessions, take ``aggregate_weights``, and ``broad`` ones
  (roll-ups over people, group matters, changes: what the records are written for) take
  ``broad_weights``; on ``focused`` single-fact questions System 1's confident hits are
  protected (:func:`protect_confident`).

:func:`~speakerflow.ops.query.channels.fuse` combines the channels by weighted
reciprocal-rank fusion, which needs no score calibration between channels (the channels,
their weights and the fusion are in :mod:`~speakerflow.ops.query.channels`). :class:`Recall`
is the operator (question table -> pool and fused scores);
:class:`~speakerflow.ops.query.group_view.GroupView` caches the per-group arrays the channels
need.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from speakerflow.ops.core.base import Batch, Context, Operator
from speakerflow.ops.core.registry import register
from speakerflow.ops.query.channels import (
    RecallConfig,
    RecallResult,
    dense_channels,
    fuse,
    protect_confident,
    query_weights,
    session_scores,
    window_scores,
)
from speakerflow.ops.query.group_view import GroupView
from speakerflow.ops.query.query_tables import (
    CANDIDATE,
    FUSED,
    POOL,
    QUESTIONS,
    schema_of,
    with_question_ids,
)
from speakerflow.ops.query.recall_bounded import bm25_top, is_large, recall_bounded
from speakerflow.ops.text.dense_index import group_index
from speakerflow.ops.text.embed import Embedder


def bm25_scores(view: GroupView, query: str, speaker: str | None = None) -> np.ndarray:
    """BM25 of every message for ``query`` (0.0 where no query term occurs)."""
    out = np.zeros(len(view), dtype=np.float64)
    if not len(view):
        return out
    rows, scores = bm25_top(  # the hits by key: no stored document read per hit
        view, query, len(view), speaker
    )
    out[rows] = scores
    return out


def recall(
    view: GroupView, query: str, config: RecallConfig, embedder: Embedder | None = None
) -> RecallResult:
    """Score every message of the group for ``query`` and return the fused pool.

    Groups above :func:`~speakerflow.ops.query.recall_bounded.bounded_above` messages take the
    bounded path (:func:`~speakerflow.ops.query.recall_bounded.recall_bounded`: BM25 top-k, every
    channel over candidate rows); smaller groups are scored here, exactly."""
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
    from speakerflow.ops.text.embed_cache import cached_ids

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

    def run_batch(self, batch: Batch, ctx: Context) -> Batch:
        view = GroupView.of(ctx.store)
        pools, vectors = [], []
        for question in batch.get(QUESTIONS):
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
        return with_question_ids(batch).put(POOL, pools).put(FUSED, vectors)

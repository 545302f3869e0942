"""The dense channel over a group's message embeddings: brute force in small groups, the
group's ANN index (:mod:`speakerflow.graphs.ann`) above :data:`~speakerflow.graphs.ann.THRESHOLD`.

:func:`dense_scores` returns what :func:`speakerflow.ops.query.recall.recall` puts in its
``dense`` channel: a score per message of the group. Below the threshold (every LoCoMo and
SocialMemBench group) it is exactly the brute-force cosine, clipped at 1e-6. Above it only
the ``k`` nearest messages get their cosine and every other message 0.0, which the fusion
reads as "no evidence" (a rank past ``k`` would add less than ``w / (60 + k)`` anyway).

:func:`group_index` opens the group's index (``<group>/embeddings/<key>.faiss``), adds the
messages it lacks and keeps it on the view, so ingest-time warming
(:func:`speakerflow.ops.query.recall.warm_message_embeddings`) pays the build, not a query.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from speakerflow.graphs import ann

#: messages the index returns per query above the threshold
ANN_K = 256


def _key(embedder) -> str:
    return f"messages-labelled-{embedder.name}"


def group_index(view, embedder) -> ann.AnnIndex | None:
    """The view's ANN index under ``embedder`` (synced with the view's messages), or
    ``None`` when the group is below the threshold or faiss is not installed."""
    if len(view) < ann.THRESHOLD or not ann.available():
        return None
    synced = view.__dict__.setdefault("_ann_synced", {})  # per view: its messages are fixed
    store = view.store
    indexes = store.__dict__.setdefault("_ann_indexes", {})  # per store: survives a new view
    index = indexes.get(embedder.name)
    if index is None:
        path = (
            None if store.in_memory else Path(store.root) / "embeddings" / f"{_key(embedder)}.faiss"
        )
        index = indexes[embedder.name] = ann.AnnIndex(embedder.dim, path)
    if embedder.name not in synced:
        # an index on disk that holds every message already: no need to read the group's
        # vectors (a fresh process's first dense query skips loading the .npz)
        if index.needs_sync(view.ids):
            index.sync(view.ids, view.dense_matrix(embedder), save=not store.in_memory)
        synced[embedder.name] = True
    return index


def dense_scores(view, embedder, qvec: np.ndarray, k: int = ANN_K) -> np.ndarray:
    """Cosine of ``qvec`` to each message (``0.0`` outside the top ``k`` above the threshold)."""
    index = group_index(view, embedder)
    if index is None:
        return np.clip(view.dense_matrix(embedder) @ qvec, 1e-6, None).astype(np.float64)
    ids, sims = index.search(qvec, k, live=view.pos)
    out = np.zeros(len(view), dtype=np.float64)
    if ids:
        out[[view.pos[m] for m in ids]] = np.clip(sims, 1e-6, None)
    return out

"""A group's ANN index reopened by a fresh process: it knows whether it holds every message
(graphs/ann.py ``needs_sync``), so the dense channel skips reading the group's vectors
(ops/text/dense_index.py); the bench's embedding cache refuses another model's vectors."""

from __future__ import annotations

import numpy as np
import pytest

from speakerflow.benchmarks.scale_stream import CachedEmbedder, synthetic_stream
from speakerflow.graphs import GroupStore, ann
from speakerflow.graphs.ann import AnnIndex
from speakerflow.ops.query.recall import GroupView
from speakerflow.ops.text.dense_index import dense_scores, group_index
from speakerflow.ops.text.embed import HashingEmbedder


def _vecs(n: int, dim: int = 16) -> np.ndarray:
    v = np.random.default_rng(3).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_needs_sync_says_when_the_vectors_are_needed(tmp_path):
    ids, vecs = [f"m{i}" for i in range(300)], _vecs(300)
    assert AnnIndex(16).needs_sync(ids[:1])  # empty
    AnnIndex(16, tmp_path / "x.faiss").sync(ids[:200], vecs[:200])
    again = AnnIndex(16, tmp_path / "x.faiss")
    assert not again.needs_sync(ids[:200])
    assert not again.needs_sync(ids[20:200])  # 10 % forgotten: skipped at search time
    assert again.needs_sync(ids[:201])  # a new message
    assert again.needs_sync(ids[60:200])  # 30 % stale: sync rebuilds
    assert again.sync(ids[:201], vecs[:201]) == 1 and not again.needs_sync(ids[:201])


def test_a_reopened_group_queries_its_index_without_reading_its_vectors(tmp_path, monkeypatch):
    monkeypatch.setattr(ann, "THRESHOLD", 500)
    emb = HashingEmbedder(64)
    with GroupStore(tmp_path, "big", writable=True) as store:
        store.append_messages(synthetic_stream(800, "one", group="big"))
        view = GroupView.of(store)
        assert group_index(view, emb) is not None  # ingest-time build, saved beside the group
        q = emb.encode(["What did Ana say about the pottery class?"])[0]
        warm = dense_scores(view, emb, q, k=20)
    with GroupStore(tmp_path, "big", writable=False) as store:  # a fresh reader
        view = GroupView.of(store)
        cold = dense_scores(view, emb, q, k=20)
        assert emb.name not in view.embeddings  # the .npz of message vectors was not read
    np.testing.assert_allclose(cold, warm)
    assert np.count_nonzero(cold) == 20


def test_the_bench_cache_refuses_another_models_vectors(tmp_path):
    path = tmp_path / "c.npz"
    first = CachedEmbedder(HashingEmbedder(16), path)
    first.encode(["a text"])
    first.save()
    assert CachedEmbedder(HashingEmbedder(16), path).encoded == 0
    with pytest.raises(ValueError, match="holds hashing-16 vectors, not hashing-32"):
        CachedEmbedder(HashingEmbedder(32), path)

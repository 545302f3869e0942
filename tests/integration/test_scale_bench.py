"""``speakerflow bench scale`` at 1k messages: the report's shape and positive figures (no timing
thresholds)."""

from __future__ import annotations

import json

import numpy as np

from speakerflow.benchmarks.scale_stream import CachedEmbedder, synthetic_stream
from speakerflow.cli import main
from speakerflow.graphs import GroupStore
from speakerflow.graphs.ann import AnnIndex, top_k_exact
from speakerflow.ops.query.recall import GroupView
from speakerflow.ops.text.dense_index import dense_scores, group_index
from speakerflow.ops.text.embed import HashingEmbedder

FIELDS = (
    "messages",
    "groups",
    "ingest_messages_per_s",
    "writer_messages_per_s",
    "bytes_per_message",
    "peak_rss_mb",
    "query_p50_ms",
    "query_p95_ms",
    "dense_query_p50_ms",
)


def test_bench_scale_1k_report(tmp_path, capsys):
    out = tmp_path / "report.json"
    assert (
        main(
            [
                "bench",
                "scale",
                "--messages",
                "1000",
                "--out",
                str(out),
                "--queries",
                "5",
                "--writer-sample",
                "300",
                "--entity-sample",
                "300",
            ]
        )
        == 0
    )
    report = json.loads(out.read_text())
    assert out.with_suffix(".png").stat().st_size > 0  # the log-log plot
    assert isinstance(report["sizes"], list) and len(report["sizes"]) == 1
    row = report["sizes"][0]
    for key in FIELDS:
        assert key in row, key
    assert row["messages"] == 1000 and row["groups"] == 1
    for key in FIELDS[2:-1]:
        assert row[key] > 0, key
    assert row["dense_query_p50_ms"] is None  # no embeddings asked for
    assert row["injection_p50_ms"] > 0 and row["facts"] > 0
    assert row["writer_sample"] == 300
    assert row["ingest_batch"] == 1000  # one append of the whole stream, as speakerflow ingest
    # the old row-at-a-time paths against the columnar ones, and the exact against the bounded query
    # path (1k messages: below the bounded path's threshold, so the same answers)
    hot = row["hot_paths"]
    assert hot["stored"] == 1000 and all(
        hot[k] > 0 for k in ("dedup_rows_ms", "dedup_columns_ms", "index_rows_ms", "index_arrow_ms")
    )
    assert row["exact_queries"] == 5 and row["same_answer"] == row["same_cited10_and_answer"] == 5


def test_stream_shapes_are_deterministic_prefixes():
    big = synthetic_stream(2500, "one")
    assert big["group_id"].unique().to_pylist() == ["big"]
    assert synthetic_stream(1200, "one")["text"].to_pylist() == big["text"].to_pylist()[:1200]
    many = synthetic_stream(2500, "many")
    assert many["group_id"].value_counts().field("counts").to_pylist() == [1000, 1000, 500]
    speakers = many.slice(0, 1000)["speaker"].unique()
    assert 3 <= len(speakers) <= 10


def test_ann_index_incremental_persisted_and_close_to_exact(tmp_path):
    rng = np.random.default_rng(1)
    centres = rng.normal(size=(40, 32))  # clustered, like sentence embeddings
    vecs = (centres[rng.integers(0, 40, 3000)] + 0.5 * rng.normal(size=(3000, 32))).astype(
        np.float32
    )
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = [f"m{i}" for i in range(3000)]
    path = tmp_path / "e.faiss"
    idx = AnnIndex(32, path)
    assert idx.sync(ids[:2000], vecs[:2000]) == 2000
    again = AnnIndex(32, path)  # reopened from disk: only the new ids are added
    assert len(again) == 2000 and again.sync(ids, vecs) == 1000 and again.sync(ids, vecs) == 0
    hits = 0
    for q in range(50):
        exact_rows, exact_sims = top_k_exact(vecs, vecs[q], 50)
        got, sims = again.search(vecs[q], 50)
        hits += int(np.sum(sims >= exact_sims[-1] - 1e-6))
    assert hits / (50 * 50) >= 0.95
    live = {m: i for i, m in enumerate(ids) if m != "m3"}  # a forgotten message is never returned
    assert "m3" not in again.search(vecs[3], 10, live)[0]


def test_dense_scores_use_the_index_above_the_threshold(tmp_path, monkeypatch):
    from speakerflow.graphs import ann

    store = GroupStore(tmp_path, "big", in_memory=True)
    store.append_messages(synthetic_stream(1500, "one", group="big"))
    emb = HashingEmbedder(64)
    view = GroupView.of(store)
    q = emb.encode(["What did Ana say about the pottery class?"])[0]
    exact = dense_scores(view, emb, q)
    assert group_index(view, emb) is None and np.all(exact > 0)  # below the threshold: brute force
    monkeypatch.setattr(ann, "THRESHOLD", 1000)
    approx = dense_scores(view, emb, q, k=20)
    assert np.count_nonzero(approx) == 20
    best = np.argsort(-exact)[:20]
    assert len(set(best) & set(np.flatnonzero(approx))) >= 18


def test_cached_embedder_encodes_each_text_once(tmp_path):
    emb = CachedEmbedder(HashingEmbedder(16), tmp_path / "c.npz")
    a = emb.encode(["one text", "two text"])
    emb.save()
    again = CachedEmbedder(HashingEmbedder(16), tmp_path / "c.npz")
    assert np.allclose(again.encode(["two text", "one text"]), a[::-1]) and again.encoded == 0

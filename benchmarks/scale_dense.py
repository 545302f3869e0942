"""The dense channel of ``speakerflow bench scale``: question encode and top-k over the
group's message vectors (ANN index or brute force), the A/B of the two and the ANN sweep."""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .percentiles import pct
from .scale_stream import (
    LOCOMO,
    CachedEmbedder,
    labelled,
    questions,
    slices,
    stream_embedder,
    synthetic_stream,
)


def dense_queries(
    store, qs: list[str], embed_cache: str, precision: str | None = None
) -> dict[str, Any]:
    """Dense channel per question: a fresh MiniLM encode of the question (one thread; the
    precision of ``$SPEAKERFLOW_EMBEDDER_PRECISION``) and the top-k over the group's message
    embeddings (ANN index above its threshold), vs brute force.

    Where the time goes: ``dense_encode_*`` (the question's vector), ``dense_channel_*``
    (:func:`~speakerflow.ops.text.dense_index.dense_scores`: the warm index's search plus the
    score vector), ``ann_search_*`` (the index search alone, timed again after the channel),
    ``dense_channel_after_scan_*`` (the channel right after a brute-force pass over every
    vector, as when other full scans run between questions: the index is out of the caches);
    and what a fresh process pays once before its first dense query (``cold_*``: the index
    from disk and the check that it holds every message; ``cold_vectors_load_s``, the
    group's vectors from its ``.npz``, is paid only below the threshold or when the index
    lacks messages)."""
    from speakerflow.ops.query.group_view import GroupView
    from speakerflow.ops.text.dense_index import ANN_K, group_index

    emb = CachedEmbedder(stream_embedder(precision), embed_cache)
    view = GroupView.of(store)
    t0 = time.perf_counter()
    mat = view.dense_matrix(emb)
    out: dict[str, Any] = {
        "embedder": emb.name,
        "embed_s": round(time.perf_counter() - t0, 2),
        "embedded_now": emb.encoded,
    }
    t0 = time.perf_counter()
    index = group_index(view, emb)
    out["ann_index"] = index is not None
    out["ann_build_s"] = round(time.perf_counter() - t0, 2) if index is not None else None
    if not store.in_memory:  # a fresh process: vectors and index read from the group folder
        out.update(_cold_start(store, view, emb, index))
    emb.inner.encode(["warm up"])
    dense, enc, channel, search, cpu, vecs = _timed_queries(qs, view, emb, index)
    exact, hit, after_scan = _after_scans(vecs, mat, view, emb, index)
    emb.save()
    out.update(
        dense_query_p50_ms=pct(dense, 50),
        dense_query_p95_ms=pct(dense, 95),
        dense_query_cpu_p50_ms=pct(cpu, 50),  # CPU time of this process: the work alone
        dense_encode_p50_ms=pct(enc, 50),
        dense_encode_p95_ms=pct(enc, 95),
        dense_channel_p50_ms=pct(channel, 50),
        dense_channel_p95_ms=pct(channel, 95),
        ann_search_p50_ms=pct(search, 50),
        dense_channel_after_scan_p50_ms=pct(after_scan, 50),
        ann_ef_search=index.ef_search if index is not None else None,
        brute_top50_p50_ms=pct(exact, 50),
        ann_k=ANN_K,
        ann_recall_at_50=round(statistics.mean(hit), 4) if hit else None,
        dense_load_avg=[round(x, 2) for x in os.getloadavg()],
    )
    return out


def _cold_start(store, view, emb: CachedEmbedder, index) -> dict[str, Any]:
    """What a fresh process pays before its first dense query: the group's vectors from its
    ``.npz``, the index from disk and the check that it holds every message."""
    from speakerflow.graphs import ann
    from speakerflow.ops.text.embed_cache import cached_embeddings

    out: dict[str, Any] = {}
    fresh = type("Fresh", (), {"in_memory": False, "root": store.root})()
    labelled_texts = [f"{a}: {b}" for a, b in zip(view.speakers, view.texts, strict=True)]
    t0 = time.perf_counter()
    cached_embeddings(fresh, emb, view.ids, labelled_texts, kind="messages-labelled")
    out["cold_vectors_load_s"] = round(time.perf_counter() - t0, 3)
    if index is not None and index.path is not None:
        t0 = time.perf_counter()
        cold = ann.AnnIndex(emb.dim, index.path)
        out["cold_ann_load_s"] = round(time.perf_counter() - t0, 3)
        t0 = time.perf_counter()
        out["cold_ann_needs_sync"] = cold.needs_sync(view.ids)  # False: vectors not read
        out["cold_ann_check_s"] = round(time.perf_counter() - t0, 3)
        del cold
    return out


def _timed_queries(qs: list[str], view, emb: CachedEmbedder, index) -> tuple[list, ...]:
    """The timed loop, dense queries back to back: (query ms, encode ms, channel ms, index
    search ms, CPU ms, the question vectors)."""
    from speakerflow.ops.text.dense_index import ANN_K, dense_scores

    dense, enc, channel, search, cpu, vecs = [], [], [], [], [], []
    for q in qs:
        c0, t0 = time.process_time(), time.perf_counter()
        qvec = emb.inner.encode([q])[0]
        t1 = time.perf_counter()
        dense_scores(view, emb, qvec)
        t2 = time.perf_counter()
        cpu.append((time.process_time() - c0) * 1000)
        dense.append((t2 - t0) * 1000)
        enc.append((t1 - t0) * 1000)
        channel.append((t2 - t1) * 1000)
        vecs.append(qvec)
        if index is not None:
            t0 = time.perf_counter()
            index.search(qvec, ANN_K, live=view.pos)
            search.append((time.perf_counter() - t0) * 1000)
    return dense, enc, channel, search, cpu, vecs


def _after_scans(vecs: list, mat, view, emb: CachedEmbedder, index) -> tuple[list, list, list]:
    """Brute force for recall (it streams every vector through the caches) and the channel
    right after such a scan: (brute-force ms, tie-aware top-50 hits, channel ms)."""
    from speakerflow.graphs import ann
    from speakerflow.ops.text.dense_index import dense_scores

    exact, hit, after_scan = [], [], []
    for qvec in vecs:
        t0 = time.perf_counter()
        rows, sims = ann.top_k_exact(mat, qvec, 50)
        exact.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        scores = dense_scores(view, emb, qvec)  # the channel right after such a scan
        after_scan.append((time.perf_counter() - t0) * 1000)
        if index is not None:
            # tie-aware recall of the top 50: ANN hits at least as close as the 50th
            got = np.sort(scores[scores > 0])[::-1][:50]
            hit.append(float(np.sum(got >= sims[-1] - 1e-6)) / len(sims))
    return exact, hit, after_scan


def dense_ab(
    n: int,
    caches: dict[str, str],
    queries: int = 40,
    seed: int = 7,
    workdir: str | Path | None = None,
) -> dict[str, Any]:
    """The dense query (:func:`dense_queries`) at ``n`` messages in one group for each precision of
    ``caches`` (precision -> the stream's vectors from ``scale embed --precision``), one
    after the other in this process on the same store and questions: ingest only (no
    Writer), then per precision its vectors, its ANN index (built here, timed) and the
    questions."""
    from speakerflow.graphs import Home

    table = synthetic_stream(n, "one", seed)
    qs = questions(table, queries, seed)
    root = Path(workdir or tempfile.mkdtemp(prefix="speakerflow-dense-"))
    home = Home(root / "home")
    gid = table["group_id"][0].as_py()
    with home.open(gid, writable=True) as store:
        for lo, size in slices(n, 10_000):
            store.append_messages(table.slice(lo, size))
    out: dict[str, Any] = {"messages": n, "queries": len(qs), "load_avg_start": os.getloadavg()}
    try:
        with home.open(gid) as store:
            for precision, cache in caches.items():
                out[precision] = dense_queries(store, qs, cache, precision)
    finally:
        if workdir is None:  # the temporary home (about 1 GB at 100k with its indexes)
            import shutil

            shutil.rmtree(root, ignore_errors=True)
    return out


def ann_sweep(
    n: int,
    cache: str | Path,
    params: tuple[tuple[int, int], ...] = ((32, 100), (48, 200)),
    efs: tuple[int, ...] = (128, 256, 512, 1024),
    seed: int = 7,
) -> list[dict[str, Any]]:
    """Recall of the top 50 (tie-aware: hits at least as close as the exact 50th) and search
    p50 of :class:`~speakerflow.graphs.ann.AnnIndex` against brute force over the stream's
    ``n`` MiniLM vectors (from ``cache``), for 100 questions about the stream and 100 LoCoMo
    questions, per (M, efConstruction) and efSearch. One thread."""
    import faiss

    from speakerflow.graphs.ann import AnnIndex, top_k_exact

    faiss.omp_set_num_threads(1)
    table = synthetic_stream(n, "one", seed)
    emb = CachedEmbedder(stream_embedder(), cache)
    mat, ids = emb.encode(labelled(table)), table["msg_id"].to_pylist()
    qs = questions(table, 100, seed + 4)
    if LOCOMO.exists():
        qs += [q["question"] for c in json.loads(LOCOMO.read_text()) for q in c["qa"]][::15][:100]
    qvecs = emb.inner.encode(qs)
    exact = [top_k_exact(mat, q, 50)[1] for q in qvecs]
    out = []
    for m, efc in params:
        t0 = time.perf_counter()
        index = AnnIndex(mat.shape[1], m=m, ef_construction=efc)
        index.sync(ids, mat, save=False)
        build = time.perf_counter() - t0
        for ef in efs:
            index.ef_search = ef
            hits, ms = [], []
            for q, sims in zip(qvecs, exact, strict=True):
                t0 = time.perf_counter()
                _, got = index.search(q, 50)
                ms.append((time.perf_counter() - t0) * 1000)
                hits.append(float(np.sum(got >= sims[-1] - 1e-6)) / len(sims))
            out.append(
                {
                    "messages": n,
                    "M": m,
                    "ef_construction": efc,
                    "build_s": round(build, 1),
                    "ef_search": ef,
                    "recall_at_50": round(statistics.mean(hits), 4),
                    "recall_at_50_stream_questions": round(statistics.mean(hits[:100]), 4),
                    "recall_at_50_locomo_questions": round(statistics.mean(hits[100:]), 4)
                    if len(hits) > 100
                    else None,
                    "worst_question": round(min(hits), 3),
                    "search_p50_ms": pct(ms, 50),
                }
            )
    return out

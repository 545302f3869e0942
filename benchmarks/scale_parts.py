"""The side measurements of one size of ``speakerflow bench scale``: exact against bounded
recall, the row-at-a-time against the columnar hot paths, the entity graph and passive
injection on it."""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from speakerflow.settings import env_name

from .percentiles import pct
from .scale_dense import dense_queries
from .scale_stream import GROUP_SIZE, folder_bytes, questions, slices


def exact_against_bounded(store, qs: list[str], cfg) -> dict[str, Any]:
    """The rules query path as before (every message scored per question) against the
    bounded path, on the same store and questions in this process: latency and agreement.
    Below the bounded path's size threshold both are the exact path (identical by design)."""
    from speakerflow.ops.query.recall_bounded import bm25_cap, bounded_above
    from speakerflow.pipelines.query_path import answer_question

    saved = os.environ.get(env_name("bounded_recall_above"))  # restored below
    out: dict[str, Any] = {
        "bounded_above": bounded_above(),
        "bm25_cap": bm25_cap(),
        "exact_queries": len(qs),
    }
    res: dict[str, list] = {}
    try:
        for label, above in (("exact", str(10**12)), ("bounded", saved or "")):
            os.environ[env_name("bounded_recall_above")] = above
            answer_question(store, qs[0], cfg)  # warm-up
            ms, got = [], []
            for q in qs:
                t0 = time.perf_counter()
                r = answer_question(store, q, cfg)
                ms.append((time.perf_counter() - t0) * 1000)
                got.append((r.cited_ids(10), r.answer))
            res[label] = got
            out[f"query_{label}_p50_ms"], out[f"query_{label}_p95_ms"] = pct(ms, 50), pct(ms, 95)
    finally:
        if saved is None:
            os.environ.pop(env_name("bounded_recall_above"), None)
        else:
            os.environ[env_name("bounded_recall_above")] = saved
    pairs = list(zip(res["exact"], res["bounded"], strict=True))
    out["same_cited10_and_answer"] = sum(a == b for a, b in pairs)
    out["same_answer"] = sum(a[1] == b[1] for a, b in pairs)
    out["mean_overlap_cited10"] = round(
        float(np.mean([len(set(a[0]) & set(b[0])) / max(1, len(a[0])) for a, b in pairs])), 3
    )
    return out


def hot_paths(store, table: pa.Table, batch: int) -> dict[str, Any]:
    """The row-at-a-time code the store used before (issue 15, item 4) against the columnar
    code now, in this process on this store: dedup of one batch of ids against every stored
    id, and the text index written for one batch. Milliseconds; nothing is written to the store."""
    import pyarrow.compute as pc

    from speakerflow.graphs.append import index_columns, index_table, new_rows
    from speakerflow.graphs.text_index import TantivyIndex

    n = min(batch, table.num_rows)
    probe = table.slice(table.num_rows - n, n)  # half stored ids, half new ones
    ids = pc.if_else(
        pa.array(np.arange(n) % 2 == 0),
        probe["msg_id"],
        pc.binary_join_element_wise("new-", probe["msg_id"], ""),
    )
    out: dict[str, Any] = {"batch": n, "stored": store._msg_ids().__len__()}
    t0 = (
        time.perf_counter()
    )  # before: re-read and re-sort the group, every stored id into a set, a loop
    store._messages = None
    seen = set(store.messages()["msg_id"].to_pylist())
    keep = []
    for i, m in enumerate(ids.to_pylist()):
        if m not in seen:
            seen.add(m)
            keep.append(i)
    out["dedup_rows_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    store._messages = None
    store._msg_ids()  # what an open writer keeps from its previous append
    t0 = time.perf_counter()
    fresh, _ = new_rows(store, ids)
    out["dedup_columns_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    assert list(fresh) == keep, "dedup paths disagree"
    with tempfile.TemporaryDirectory(prefix="speakerflow-hot-") as tmp:
        t0 = time.perf_counter()
        TantivyIndex(Path(tmp) / "rows").add_columns(index_columns(probe))
        out["index_rows_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        t0 = time.perf_counter()
        TantivyIndex(Path(tmp) / "arrow").add_table(index_table(probe))
        out["index_arrow_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    return out


def rules_writer():
    from speakerflow.ops.write.writer.registry import make_writer

    return make_writer("rules")


def entities_and_injection(
    home, gids: list[str], shape: str, n: int, sample: int, events: int, seed: int
) -> dict[str, Any]:
    """The entity path over ``sample`` messages, then ``events`` injections on that graph."""
    from speakerflow.benchmarks.harness.generator import ASSETS, TRADERS
    from speakerflow.ops.inject import InjectConfig, PassiveInjector
    from speakerflow.ops.knowledge.load import load_knowledge
    from speakerflow.pipelines.entity_path import build_entity_graph

    gid = gids[0] if shape == "one" else gids[-1]
    out: dict[str, Any] = {"entity_sample": sample if shape == "one" else min(n, GROUP_SIZE)}
    with home.open(gid, writable=True) as store:
        if (
            shape == "one" and sample < n
        ):  # mark the rest as processed: the path reads the sample only
            rest = store.messages()["msg_id"].to_pylist()[: n - sample]
            (Path(store.root) / "entity_path.json").write_text(json.dumps({"processed": rest}))
        t0 = time.perf_counter()
        done = build_entity_graph(store, "rules")
        out["entity_s"] = round(time.perf_counter() - t0, 2)
        out["facts"] = done["facts"]
    with home.open(gid) as store:
        fg, canon, det = load_knowledge(store, with_records=False)
        inj = PassiveInjector(fg, canon, det, config=InjectConfig(record_use=False))
        rng = random.Random(seed)
        assets = [a for names in ASSETS.values() for a in names[:2]]
        now = datetime(2030, 1, 1, tzinfo=UTC)
        lat = []
        for _ in range(events):
            text = (
                f"Prepare an order to buy {rng.choice(assets)}; should I copy "
                f"@{rng.choice(TRADERS)}? "
                "fees and drawdown and liquidity?"
            )
            lat.append(inj.inject(text, now, user=rng.choice(store.roster())).seconds * 1000)
    out["injection_p50_ms"] = pct(lat, 50)
    out["injection_p95_ms"] = pct(lat, 95)
    return out


def ingest(home: Any, table: pa.Table, shape: str, n: int, batch: int) -> dict[str, Any]:
    """Ingest the stream into ``home``; wall and CPU time, the per-step profile, bytes."""
    gids = table["group_id"].unique().to_pylist()
    out: dict[str, Any] = {}
    # ingest: the big group in one append like ``speakerflow ingest`` of a file (``batch`` > 0:
    # in appends of ``batch`` messages, an incremental ingest); a small group in one append each
    t0, cpu0 = time.perf_counter(), time.process_time()
    profile: dict[str, float] = {}
    if shape == "one":
        with home.open(gids[0], writable=True) as store:
            for lo, size in slices(n, batch):
                store.append_messages(table.slice(lo, size))
        profile = store.ingest_profile()  # after close: the index merges waited for included
        out["ingest_batch"] = batch if batch > 0 else n
    else:
        for lo, size in slices(n, GROUP_SIZE):
            part = table.slice(lo, size)
            with home.open(part["group_id"][0].as_py(), writable=True) as store:
                store.append_messages(part)
            for k, v in store.ingest_profile().items():
                profile[k] = round(profile.get(k, 0.0) + v, 3)
        out["ingest_batch"] = GROUP_SIZE
    ingest_s = time.perf_counter() - t0
    out["ingest_s"] = round(ingest_s, 2)
    # CPU seconds of every thread of this process (Kuzu's and Tantivy's too): less
    # dependent on the machine's load than the wall clock
    out["ingest_cpu_s"] = round(time.process_time() - cpu0, 2)
    out["ingest_profile_s"] = profile
    out["ingest_messages_per_s"] = round(n / ingest_s, 1)
    out["bytes_per_message"] = round(folder_bytes(home.root) / n, 1)

    return out


def write(home: Any, gids: list[str], shape: str, n: int, writer_sample: int) -> dict[str, Any]:
    """The rules Writer on a bounded sample of the stream."""
    from speakerflow.graphs.records import RecordBuffer
    from speakerflow.ops.core.base import Context
    from speakerflow.pipelines.write_path import write_group, write_pipeline

    out: dict[str, Any] = {}
    # the rules Writer, on the last ``writer_sample`` messages (whole groups for ``many``)
    sample = min(n, writer_sample)
    out["writer_sample"] = sample
    t0 = time.perf_counter()
    records = 0
    if shape == "one":
        with home.open(gids[0], writable=True) as store:
            msgs = store.messages()
            buffer = RecordBuffer(store, flush_every=64)
            written = write_pipeline()(
                msgs.slice(n - sample, sample),
                Context(store=buffer, backends={"writer": rules_writer()}),
            )
            buffer.flush()
            records = written.num_rows
    else:
        for gid in gids[-max(1, sample // GROUP_SIZE) :]:
            with home.open(gid, writable=True) as store:
                records += write_group(store, "rules", progress=False).accepted
    writer_s = time.perf_counter() - t0
    out["writer_s"] = round(writer_s, 2)
    out["writer_messages_per_s"] = round(sample / writer_s, 1)
    out["writer_records"] = records

    return out


def queries_of(
    home: Any,
    table: pa.Table,
    gids: list[str],
    shape: str,
    n: int,
    queries: int,
    query_groups: int,
    seed: int,
    embed_cache: str | None,
    dense_max: int,
    exact_queries: int,
) -> dict[str, Any]:
    """The rules query path (cold and warm), exact against bounded recall and the dense
    channel, on read-only stores like a server's."""
    from speakerflow.pipelines.query_path import QueryConfig, answer_question

    out: dict[str, Any] = {}
    # the rules query path, read-only stores like a server's
    cfg = QueryConfig(embedder="none")
    cold, warm = [], []
    if shape == "one":
        targets = gids[:1]
        asked = [(gids[0], q) for q in questions(table, queries, seed)]
    else:  # questions about a group's own messages, spread over ``query_groups`` groups
        targets = random.Random(seed).sample(gids, min(query_groups, len(gids)))
        per = max(1, queries // len(targets))
        asked = [
            (gid, q)
            for j, gid in enumerate(targets)
            for q in questions(table.slice(gids.index(gid) * GROUP_SIZE, GROUP_SIZE), per, seed + j)
        ]
        asked = [asked[j * per + i] for i in range(per) for j in range(len(targets))]  # round robin
    qs = [q for _, q in asked]
    stores = {}
    try:
        for gid in targets:
            t0 = time.perf_counter()
            stores[gid] = store = home.open(gid)
            answer_question(
                store, next(q for g, q in asked if g == gid), cfg
            )  # opens index and graph, builds the view
            cold.append((time.perf_counter() - t0) * 1000)
        for gid, q in asked:
            t0 = time.perf_counter()
            answer_question(stores[gid], q, cfg)
            warm.append((time.perf_counter() - t0) * 1000)
        out["query_cold_ms"] = pct(cold, 50)
        out["query_p50_ms"] = pct(warm, 50)
        out["query_p95_ms"] = pct(warm, 95)
        out["queries"] = len(warm)
        if shape == "one" and exact_queries:
            out.update(exact_against_bounded(stores[targets[0]], qs[:exact_queries], cfg))
        out.update(
            dense_queries(stores[targets[0]], qs, embed_cache)
            if embed_cache and shape == "one" and n <= dense_max
            else {"dense_query_p50_ms": None, "dense_query_p95_ms": None}
        )
    finally:
        for store in stores.values():
            store.close()
    return out

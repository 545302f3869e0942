"""How the system grows with the number of messages: ``speakerflow bench scale``.

For each size (1k, 10k, 100k; 1M when asked) and each shape (one big group; many groups of
1,000 messages) a fresh subprocess (so peak RSS is that size's own) generates a synthetic
multi-party stream, ingests it into a home (Parquet + Kuzu + Tantivy; the big group in one
append as ``speakerflow ingest`` of a file does, or in appends of ``--ingest-batch``), runs
the rules Writer (on a bounded sample of the stream when the size is larger than
``writer_sample``: the report says so), times the rules query path
(``answer_question`` with ``embedder="none"``: BM25, windows, session prior, System 2
records, rules answerer), the dense channel where embeddings exist (question encode + top-k
over the group's message embeddings: the ANN index of :mod:`speakerflow.graphs.ann` above
its threshold, brute force below) and passive injection on the fact graph that the entity
path builds from the same stream (on the same bounded sample).

The stream: message texts are one to three sentences drawn from LoCoMo conversations when
``../shared/data/locomo/locomo10.json`` exists (real lengths and wording; the bundled team
chat otherwise), about 5 % are statements about assets and copy traders in the InKH
harness's phrasings (so the entity path has facts to read), speakers follow a Zipf-like
activity over the group's roster (30 people in the big group, 3-10 in a group of 1,000),
sessions are 20-120 turns with hours to days between them, and a fifth of the messages
reply to an earlier turn of their session. Everything is deterministic for a seed; the
stream of ``n`` messages is a prefix of the stream of ``m > n`` messages.

    speakerflow bench scale --messages 100000 --out report.json        # 1k, 10k, 100k
    speakerflow bench scale --messages 1000000 --out report.json       # ... and 1M
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from speakerflow.schemas import MESSAGE_SCHEMA

GROUP_SIZE = 1_000  # messages per group in the "many groups" shape
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
NAMES = (
    "Ana Ben Caro Dev Eli Fay Gus Hana Ivo Jun Kai Lea Max Nia Oli Pia Quin Rae Sam Tia Uma Vic "
    "Wes "
    "Xia Yan Zoe Abe Bea Cal Dan Eva Finn Gia Hal Isa Jay Kit Lou Mia Ned"
).split()
_SENT = re.compile(r"(?<=[.!?])\s+")


def _sentences(locomo: Path | None = LOCOMO) -> list[str]:
    """The sentence pool: LoCoMo turns split into sentences, else the bundled team chat."""
    texts: list[str] = []
    if locomo is not None and Path(locomo).exists():
        for conv in json.loads(Path(locomo).read_text()):
            for key, turns in conv["conversation"].items():
                if key.startswith("session_") and isinstance(turns, list):
                    texts.extend(t.get("text", "") for t in turns)
    else:
        from speakerflow.settings import BUNDLED_SAMPLE

        for line in Path(BUNDLED_SAMPLE).read_text().splitlines():
            if line.strip():
                texts.append(json.loads(line).get("text", ""))
    out = sorted({s.strip() for t in texts for s in _SENT.split(t) if 3 <= len(s.split()) <= 60})
    return out


def _fact_templates() -> tuple[list[str], list[str], list[str], dict[str, list[str]]]:
    from speakerflow.benchmarks.harness.generator import ASSETS, STATE, TRADERS, WORDS

    templates = [
        t
        for rel in ("fee", "regime", "liquidity", "win_rate", "max_drawdown", "status")
        for t in STATE[rel].split("|")
    ]
    assets = [a for names in ASSETS.values() for a in names[:2]]
    traders = [f"@{t}" for t in TRADERS]
    return templates, assets, traders, WORDS


def synthetic_stream(
    n: int, shape: str = "one", seed: int = 7, group: str = "big", locomo: Path | None = LOCOMO
) -> pa.Table:
    """``n`` messages of the shape ``one`` (one group ``group``) or ``many`` (groups
    ``g000000``, ``g000001`` ... of :data:`GROUP_SIZE` messages each), deterministic."""
    sents = _sentences(locomo)
    templates, assets, traders, words = _fact_templates()
    word_values = [w for ws in words.values() for w in ws]
    text_rng = random.Random(seed)  # texts, sessions, times, replies
    who_rng = random.Random(seed + 1)  # rosters and speakers
    t = datetime(2025, 1, 1, tzinfo=UTC)
    cols: dict[str, list] = {
        k: []
        for k in ("msg_id", "group_id", "session_id", "turn", "ts", "speaker", "text", "reply_to")
    }
    roster: list[str] = []
    weights: list[float] = []
    session_left = turn = 0
    session = -1
    gid = group
    session_start = 0
    for i in range(n):
        if shape == "many" and i % GROUP_SIZE == 0:
            gid = f"g{i // GROUP_SIZE:06d}"
            size = who_rng.randint(3, 10)
            roster = who_rng.sample(NAMES, size)
            session_left = 0
        elif shape == "one" and i == 0:
            roster = list(NAMES[:30])
        if not weights or len(weights) != len(roster):
            weights = [1.0 / (r + 1) ** 0.8 for r in range(len(roster))]
        if session_left == 0:
            session += 1
            session_left = text_rng.randint(20, 120)
            turn = 0
            session_start = i
            t += timedelta(hours=text_rng.randint(3, 72))
        speaker = who_rng.choices(roster, weights)[0]
        if text_rng.random() < 0.05:
            tpl = text_rng.choice(templates)
            text = tpl.format(
                a=text_rng.choice(assets),
                t=text_rng.choice(traders),
                v=f"{text_rng.randint(1, 60) / 10:.1f}%",
                w=text_rng.choice(word_values),
            )
        else:
            k = text_rng.choices((1, 2, 3), (0.5, 0.35, 0.15))[0]
            text = " ".join(text_rng.choice(sents) for _ in range(k))
        reply = None
        if turn > 0 and text_rng.random() < 0.2:
            reply = cols["msg_id"][text_rng.randint(session_start, i - 1)]
        cols["msg_id"].append(f"m{i:08d}")
        cols["group_id"].append(gid)
        cols["session_id"].append(f"s{session:07d}")
        cols["turn"].append(turn)
        cols["ts"].append(t)
        cols["speaker"].append(speaker)
        cols["text"].append(text)
        cols["reply_to"].append(reply)
        t += timedelta(seconds=text_rng.randint(5, 600))
        turn += 1
        session_left -= 1
    table = pa.table(cols)
    return table.select([c for c in MESSAGE_SCHEMA.names if c in table.column_names])


# -- embeddings: MiniLM through a persistent text cache ------------------------------------------
class CachedEmbedder:
    """An embedder that looks texts up in a persistent cache (sha1 of the text -> vector)
    before asking the model: a benchmark embeds a stream once and reuses it across runs.
    Same ``name`` and ``dim`` as the model, so the group's own embedding files match."""

    def __init__(self, inner, path: str | Path | None):
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.path = Path(path) if path else None
        self.table: dict[bytes, np.ndarray] = {}
        self.encoded = 0
        if self.path is not None and self.path.exists():
            with np.load(self.path, allow_pickle=False) as data:
                made_by = str(data["name"]) if "name" in data.files else "minilm-l6-v2"
                if made_by != self.name:  # vectors of another model (or precision)
                    raise ValueError(
                        f"{self.path} holds {made_by} vectors, not {self.name}: use another "
                        "--embed-cache (or SPEAKERFLOW_EMBEDDER_PRECISION)"
                    )
                raw = data[
                    "keys"
                ].tobytes()  # fixed 20-byte digests (an S20 item would drop trailing NULs)
                keys = [raw[i : i + 20] for i in range(0, len(raw), 20)]
                self.table = dict(zip(keys, data["vecs"], strict=True))

    @staticmethod
    def key(text: str) -> bytes:
        return hashlib.sha1(text.encode()).digest()

    def encode(self, texts: list[str]) -> np.ndarray:
        keys = [self.key(t) for t in texts]
        miss = [i for i, k in enumerate(keys) if k not in self.table]
        if miss:
            vecs = self.inner.encode([texts[i] for i in miss])
            self.encoded += len(miss)
            for i, v in zip(miss, vecs, strict=True):
                self.table[keys[i]] = np.asarray(v, dtype=np.float32)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.table[k] for k in keys]).astype(np.float32)

    def save(self) -> None:
        if self.path is None or not self.encoded:
            return
        keys = list(self.table)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(
            tmp,
            keys=np.frombuffer(b"".join(keys), dtype="S20"),
            vecs=np.stack([self.table[k] for k in keys]),
            name=np.array(self.name),
        )
        tmp.replace(self.path)


def labelled(table: pa.Table) -> list[str]:
    """``"speaker: text"`` per message: what the dense channel embeds."""
    return [
        f"{s}: {t}"
        for s, t in zip(table["speaker"].to_pylist(), table["text"].to_pylist(), strict=True)
    ]


def stream_embedder(precision: str | None = None, threads: int = 1):
    """MiniLM for the dense columns: ``precision`` (``torch``, ``fp32``, ``int8``; default
    ``$SPEAKERFLOW_EMBEDDER_PRECISION`` as the query path reads it), ``threads`` for batches
    (questions run on one thread either way)."""
    from speakerflow.ops.text.embed import MiniLMEmbedder, OnnxMiniLMEmbedder, minilm_embedder

    emb = minilm_embedder(precision)
    if isinstance(emb, OnnxMiniLMEmbedder):  # no torch in the process (nor in its RSS)
        emb.threads = threads
    elif isinstance(emb, MiniLMEmbedder):
        import torch

        torch.set_num_threads(threads)
        emb.small_batch = 1
    return emb


def embed_stream(
    n: int,
    cache: str | Path,
    seed: int = 7,
    chunk: int = 2_000,
    threads: int = 1,
    precision: str | None = None,
) -> dict:
    """Embed the labelled texts of the one-group stream of ``n`` messages into ``cache``
    (resumable: texts already there are skipped; saved every ``chunk`` messages) with
    :func:`stream_embedder` (batched: sorted by length within each chunk)."""
    emb = CachedEmbedder(stream_embedder(precision, threads), cache)
    texts = labelled(synthetic_stream(n, "one", seed))
    start = time.perf_counter()
    for lo in range(0, n, chunk):
        before = emb.encoded
        emb.encode(texts[lo : lo + chunk])
        if emb.encoded > before:
            emb.save()
            print(
                f"{lo + chunk}/{n} embedded ({emb.encoded / (time.perf_counter() - start):.1f}/s)",
                flush=True,
            )
    return {
        "messages": n,
        "embedder": emb.name,
        "encoded": emb.encoded,
        "seconds": round(time.perf_counter() - start, 1),
    }


# -- one size, one shape (runs in its own process) ----------------------------------------------
_WORD = re.compile(r"[A-Za-z][a-z]{3,}")
_STOP = set(
    "that this with have been what when where there their they them then than your from were will "
    "would could should about just like really know think going also much very some into more "
    "thats it's yeah thanks thank make made sure good great love things thing feel well".split()
)


def _questions(table: pa.Table, count: int, seed: int) -> list[str]:
    """Questions about random messages of ``table``: a speaker and two or three of its words."""
    return [q for q, _ in questions_with_sources(table, count, seed)]


def questions_with_sources(table: pa.Table, count: int, seed: int) -> list[tuple[str, int]]:
    """:func:`_questions` with the row of ``table`` each question was made from (its source
    message: a label for a retrieval check in a group too large to label by hand)."""
    rng = random.Random(seed)
    speakers, texts = table["speaker"].to_pylist(), table["text"].to_pylist()
    out: list[tuple[str, int]] = []
    while len(out) < count:
        i = rng.randrange(len(texts))
        words = [w for w in _WORD.findall(texts[i]) if w.lower() not in _STOP]
        if len(words) < 2:
            continue
        topic = " ".join(rng.sample(words, min(len(words), rng.randint(2, 3)))).lower()
        shape = rng.choice(
            (
                "What did {s} say about {t}?",
                "When did {s} mention {t}?",
                "Who talked about {t}?",
                "What does {s} think of {t}?",
            )
        )
        out.append((shape.format(s=speakers[i], t=topic), i))
    return out


def _pct(xs: list[float], q: float) -> float | None:
    return round(float(np.percentile(xs, q)), 3) if xs else None


def _folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


#: messages per append of the big group when none is given (0): the whole stream in one
#: append, as ``speakerflow ingest`` of a file appends each group's messages at once
WHOLE = 0
#: rows of the row-at-a-time vs columnar comparison of :func:`_hot_paths`
HOT_PATH_BATCH = 10_000


def _slices(n: int, size: int):
    """(start, length) of consecutive appends of ``size`` messages (``size`` <= 0: one
    append of all ``n``)."""
    size = size if size > 0 else max(n, 1)
    for lo in range(0, n, size):
        yield lo, min(size, n - lo)


def measure(
    n: int,
    shape: str,
    workdir: str | Path,
    seed: int = 7,
    batch: int = WHOLE,
    writer_sample: int = 10_000,
    entity_sample: int = 10_000,
    queries: int = 40,
    query_groups: int = 10,
    embed_cache: str | None = None,
    dense_max: int = 0,
    injections: int = 100,
    exact_queries: int = 20,
) -> dict[str, Any]:
    """Measure one size and shape in this process (see the module doc); returns one report row."""
    from speakerflow.graphs import Home
    from speakerflow.graphs.records import RecordBuffer
    from speakerflow.ops.core.base import Context
    from speakerflow.pipelines.query_path import QueryConfig, answer_question
    from speakerflow.pipelines.write_path import write_group, write_pipeline

    row: dict[str, Any] = {
        "messages": n,
        "shape": shape,
        "seed": seed,
        "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
    }
    t0 = time.perf_counter()
    table = synthetic_stream(n, shape, seed)
    row["generate_s"] = round(time.perf_counter() - t0, 2)
    home = Home(Path(workdir) / "home")
    gids = table["group_id"].unique().to_pylist()
    row["groups"] = len(gids)
    # ingest: the big group in one append like ``speakerflow ingest`` of a file (``batch`` > 0:
    # in appends of ``batch`` messages, an incremental ingest); a small group in one append each
    t0, cpu0 = time.perf_counter(), time.process_time()
    profile: dict[str, float] = {}
    if shape == "one":
        with home.open(gids[0], writable=True) as store:
            for lo, size in _slices(n, batch):
                store.append_messages(table.slice(lo, size))
        profile = store.ingest_profile()  # after close: the index merges waited for included
        row["ingest_batch"] = batch if batch > 0 else n
    else:
        for lo, size in _slices(n, GROUP_SIZE):
            part = table.slice(lo, size)
            with home.open(part["group_id"][0].as_py(), writable=True) as store:
                store.append_messages(part)
            for k, v in store.ingest_profile().items():
                profile[k] = round(profile.get(k, 0.0) + v, 3)
        row["ingest_batch"] = GROUP_SIZE
    ingest_s = time.perf_counter() - t0
    row["ingest_s"] = round(ingest_s, 2)
    # CPU seconds of every thread of this process (Kuzu's and Tantivy's too): less
    # dependent on the machine's load than the wall clock
    row["ingest_cpu_s"] = round(time.process_time() - cpu0, 2)
    row["ingest_profile_s"] = profile
    row["ingest_messages_per_s"] = round(n / ingest_s, 1)
    row["bytes_per_message"] = round(_folder_bytes(home.root) / n, 1)

    # the rules Writer, on the last ``writer_sample`` messages (whole groups for ``many``)
    sample = min(n, writer_sample)
    row["writer_sample"] = sample
    t0 = time.perf_counter()
    records = 0
    if shape == "one":
        with home.open(gids[0], writable=True) as store:
            msgs = store.messages()
            buffer = RecordBuffer(store, flush_every=64)
            written = write_pipeline()(
                msgs.slice(n - sample, sample),
                Context(store=buffer, backends={"writer": _rules_writer()}),
            )
            buffer.flush()
            records = written.num_rows
    else:
        for gid in gids[-max(1, sample // GROUP_SIZE) :]:
            with home.open(gid, writable=True) as store:
                records += write_group(store, "rules", progress=False).accepted
    writer_s = time.perf_counter() - t0
    row["writer_s"] = round(writer_s, 2)
    row["writer_messages_per_s"] = round(sample / writer_s, 1)
    row["writer_records"] = records

    # the entity path (facts) on a bounded sample, then passive injection on that fact graph
    row.update(
        _entities_and_injection(home, gids, shape, n, min(n, entity_sample), injections, seed)
    )

    # the rules query path, read-only stores like a server's
    cfg = QueryConfig(embedder="none")
    cold, warm = [], []
    if shape == "one":
        targets = gids[:1]
        asked = [(gids[0], q) for q in _questions(table, queries, seed)]
    else:  # questions about a group's own messages, spread over ``query_groups`` groups
        targets = random.Random(seed).sample(gids, min(query_groups, len(gids)))
        per = max(1, queries // len(targets))
        asked = [
            (gid, q)
            for j, gid in enumerate(targets)
            for q in _questions(
                table.slice(gids.index(gid) * GROUP_SIZE, GROUP_SIZE), per, seed + j
            )
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
        row["query_cold_ms"] = _pct(cold, 50)
        row["query_p50_ms"] = _pct(warm, 50)
        row["query_p95_ms"] = _pct(warm, 95)
        row["queries"] = len(warm)
        if shape == "one" and exact_queries:
            row.update(_exact_against_bounded(stores[targets[0]], qs[:exact_queries], cfg))
        row.update(
            _dense(stores[targets[0]], qs, embed_cache)
            if embed_cache and shape == "one" and n <= dense_max
            else {"dense_query_p50_ms": None, "dense_query_p95_ms": None}
        )
    finally:
        for store in stores.values():
            store.close()
    if shape == "one":
        with home.open(gids[0]) as store:
            row["hot_paths"] = _hot_paths(store, table, HOT_PATH_BATCH)
    row["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return row


def _exact_against_bounded(store, qs: list[str], cfg) -> dict[str, Any]:
    """The rules query path as before (every message scored per question) against the
    bounded path, on the same store and questions in this process: latency and agreement.
    Below the bounded path's size threshold both are the exact path (identical by design)."""
    from speakerflow.ops.query.recall_bounded import bm25_cap, bounded_above
    from speakerflow.pipelines.query_path import answer_question

    saved = os.environ.get("SPEAKERFLOW_BOUNDED_RECALL_ABOVE")
    out: dict[str, Any] = {
        "bounded_above": bounded_above(),
        "bm25_cap": bm25_cap(),
        "exact_queries": len(qs),
    }
    res: dict[str, list] = {}
    try:
        for label, above in (("exact", str(10**12)), ("bounded", saved or "")):
            os.environ["SPEAKERFLOW_BOUNDED_RECALL_ABOVE"] = above
            answer_question(store, qs[0], cfg)  # warm-up
            ms, got = [], []
            for q in qs:
                t0 = time.perf_counter()
                r = answer_question(store, q, cfg)
                ms.append((time.perf_counter() - t0) * 1000)
                got.append((r.cited_ids(10), r.answer))
            res[label] = got
            out[f"query_{label}_p50_ms"], out[f"query_{label}_p95_ms"] = _pct(ms, 50), _pct(ms, 95)
    finally:
        if saved is None:
            os.environ.pop("SPEAKERFLOW_BOUNDED_RECALL_ABOVE", None)
        else:
            os.environ["SPEAKERFLOW_BOUNDED_RECALL_ABOVE"] = saved
    pairs = list(zip(res["exact"], res["bounded"], strict=True))
    out["same_cited10_and_answer"] = sum(a == b for a, b in pairs)
    out["same_answer"] = sum(a[1] == b[1] for a, b in pairs)
    out["mean_overlap_cited10"] = round(
        float(np.mean([len(set(a[0]) & set(b[0])) / max(1, len(a[0])) for a, b in pairs])), 3
    )
    return out


def _hot_paths(store, table: pa.Table, batch: int) -> dict[str, Any]:
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


def _rules_writer():
    from speakerflow.ops.write.writer.registry import make_writer

    return make_writer("rules")


def _entities_and_injection(
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
    out["injection_p50_ms"] = _pct(lat, 50)
    out["injection_p95_ms"] = _pct(lat, 95)
    return out


def _dense(store, qs: list[str], embed_cache: str, precision: str | None = None) -> dict[str, Any]:
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
    from speakerflow.graphs import ann
    from speakerflow.ops.query.group_view import GroupView
    from speakerflow.ops.text.dense_index import ANN_K, dense_scores, group_index
    from speakerflow.ops.text.embed import cached_embeddings

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
    emb.inner.encode(["warm up"])
    dense, enc, channel, search, cpu, vecs = [], [], [], [], [], []
    for q in qs:  # the timed loop: dense queries back to back
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
    exact, hit, after_scan = [], [], []
    for qvec in vecs:  # brute force for recall; it streams every vector through the caches
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
    emb.save()
    out.update(
        dense_query_p50_ms=_pct(dense, 50),
        dense_query_p95_ms=_pct(dense, 95),
        dense_query_cpu_p50_ms=_pct(cpu, 50),  # CPU time of this process: the work alone
        dense_encode_p50_ms=_pct(enc, 50),
        dense_encode_p95_ms=_pct(enc, 95),
        dense_channel_p50_ms=_pct(channel, 50),
        dense_channel_p95_ms=_pct(channel, 95),
        ann_search_p50_ms=_pct(search, 50),
        dense_channel_after_scan_p50_ms=_pct(after_scan, 50),
        ann_ef_search=index.ef_search if index is not None else None,
        brute_top50_p50_ms=_pct(exact, 50),
        ann_k=ANN_K,
        ann_recall_at_50=round(statistics.mean(hit), 4) if hit else None,
        dense_load_avg=[round(x, 2) for x in os.getloadavg()],
    )
    return out


def dense_ab(
    n: int,
    caches: dict[str, str],
    queries: int = 40,
    seed: int = 7,
    workdir: str | Path | None = None,
) -> dict[str, Any]:
    """The dense query (:func:`_dense`) at ``n`` messages in one group for each precision of
    ``caches`` (precision -> the stream's vectors from ``scale embed --precision``), one
    after the other in this process on the same store and questions: ingest only (no
    Writer), then per precision its vectors, its ANN index (built here, timed) and the
    questions."""
    from speakerflow.graphs import Home

    table = synthetic_stream(n, "one", seed)
    qs = _questions(table, queries, seed)
    root = Path(workdir or tempfile.mkdtemp(prefix="speakerflow-dense-"))
    home = Home(root / "home")
    gid = table["group_id"][0].as_py()
    with home.open(gid, writable=True) as store:
        for lo, size in _slices(n, 10_000):
            store.append_messages(table.slice(lo, size))
    out: dict[str, Any] = {"messages": n, "queries": len(qs), "load_avg_start": os.getloadavg()}
    try:
        with home.open(gid) as store:
            for precision, cache in caches.items():
                out[precision] = _dense(store, qs, cache, precision)
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
    qs = _questions(table, 100, seed + 4)
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
                    "search_p50_ms": _pct(ms, 50),
                }
            )
    return out


# -- the sweep --------------------------------------------------------------------------------
#: the store code an ``ingest-ab`` compares against: the commit before issue 15's ingest work
#: of this session (Kuzu COPY on every core beside a one-thread Tantivy writer per commit)
INGEST_AB_REV = "a47a5df"
#: the files of ``graphs/`` that make up the ingest path (loaded from the revision together)
INGEST_FILES = ("store.py", "text_index.py", "kuzu_graph.py", "batch.py")


def _store_at(rev: str) -> Any:
    """``graphs/store.py`` of git revision ``rev`` with its ingest-path siblings
    (:data:`INGEST_FILES`) of the same revision, imported as a package of their own beside
    :mod:`speakerflow.graphs` (other siblings, imported lazily, are today's)."""
    import importlib
    import types

    from speakerflow import graphs

    pkg_name = f"speakerflow.graphs._at_{re.sub(r'[^A-Za-z0-9_]', '_', rev)}"
    if f"{pkg_name}.store" in sys.modules:  # loaded before in this process
        return sys.modules[f"{pkg_name}.store"]
    here = Path(graphs.__file__).resolve().parent
    folder = Path(tempfile.mkdtemp(prefix=f"speakerflow-store-{rev}-"))
    atexit.register(shutil.rmtree, folder, True)  # removed when this process exits
    for name in INGEST_FILES:
        source = subprocess.run(
            ["git", "show", f"{rev}:graphs/{name}"],
            capture_output=True,
            text=True,
            check=True,
            cwd=here.parent,
        ).stdout
        (folder / name).write_text(source)
    pkg = types.ModuleType(pkg_name)
    pkg.__path__ = [str(folder), str(here)]
    pkg.__package__ = pkg_name
    sys.modules[pkg_name] = pkg
    return importlib.import_module(f"{pkg_name}.store")


def ingest_ab(
    n: int = 100_000,
    rev: str = INGEST_AB_REV,
    batch: int = WHOLE,
    rounds: int = 2,
    seed: int = 7,
    workdir: str | Path | None = None,
) -> dict[str, Any]:
    """Ingest throughput of the store code at git revision ``rev`` (:data:`INGEST_FILES` of
    that revision) against the current code, in this process, alternating, each into a
    fresh home, the big group in appends of ``batch`` (0: one append of all; the clock
    stops after the store is closed, so background merges are counted). Also the current
    code's per-step wall seconds (:meth:`~speakerflow.graphs.GroupStore.ingest_profile`) of
    its last round, and bytes on disk per message of each."""
    from speakerflow.graphs import store as new_store

    old = _store_at(rev)
    table = synthetic_stream(n, "one", seed)
    out: dict[str, Any] = {
        "messages": n,
        "batch": batch if batch > 0 else n,
        "rev": rev,
        "cpu_count": os.cpu_count(),
        "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
    }
    for _ in range(rounds):
        for label, cls in (("before", old.GroupStore), ("after", new_store.GroupStore)):
            with tempfile.TemporaryDirectory(prefix="speakerflow-ab-", dir=workdir) as tmp:
                t0, cpu0 = time.perf_counter(), time.process_time()
                with cls(Path(tmp) / "big", "big", writable=True) as st:
                    for lo, size in _slices(n, batch):
                        st.append_messages(table.slice(lo, size))
                seconds = time.perf_counter() - t0
                out.setdefault(f"{label}_messages_per_s", []).append(round(n / seconds, 1))
                # CPU of all threads (Kuzu's, Tantivy's): the cost less the machine's load
                cpu_us = 1e6 * (time.process_time() - cpu0) / n
                out.setdefault(f"{label}_cpu_us_per_message", []).append(round(cpu_us, 1))
                out[f"{label}_bytes_per_message"] = round(_folder_bytes(Path(tmp)) / n, 1)
                if hasattr(st, "ingest_profile"):
                    out[f"{label}_profile_s"] = {"total": round(seconds, 3), **st.ingest_profile()}
    out["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    return out


def _child_main(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--shape", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--opts", default="{}")
    a = p.parse_args(argv)
    row = measure(a.n, a.shape, a.workdir, **json.loads(a.opts))
    Path(a.out).write_text(json.dumps(row))


def run(
    messages: int = 100_000,
    out: str | Path | None = None,
    shapes: tuple[str, ...] = ("one", "many"),
    sizes: list[int] | None = None,
    timeout_s: int = 3600,
    workdir: str | Path | None = None,
    log=print,
    keep: list[dict[str, Any]] | None = None,
    threads: int | None = 1,
    **opts: Any,
) -> dict[str, Any]:
    """Measure every size of 1k, 10k, 100k, 1M up to ``messages`` (or ``sizes``) in both
    shapes, each in a fresh subprocess; write ``out`` (JSON) and a log-log plot beside it.

    ``threads``: OpenMP / BLAS threads of each child (1 by default: on a shared machine a
    second spinning thread per matrix product costs more than it gives; ``None`` leaves them)."""
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    if threads:
        env.update(
            {
                k: str(threads)
                for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
            }
        )
    sizes = sizes or [s for s in (1_000, 10_000, 100_000, 1_000_000) if s <= messages] or [messages]
    rows: list[dict[str, Any]] = []
    for n in sizes:
        for shape in shapes:
            if shape == "many" and n <= GROUP_SIZE:
                continue  # one group of 1,000 is the "one" shape
            with tempfile.TemporaryDirectory(prefix="speakerflow-scale-", dir=workdir) as tmp:
                res = Path(tmp) / "row.json"
                cmd = [
                    sys.executable,
                    "-m",
                    "speakerflow.benchmarks.scale",
                    "--child",
                    "--n",
                    str(n),
                    "--shape",
                    shape,
                    "--workdir",
                    tmp,
                    "--out",
                    str(res),
                    "--opts",
                    json.dumps(opts),
                ]
                t0 = time.perf_counter()
                proc = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=timeout_s, env=env
                )
                if proc.returncode != 0:
                    raise RuntimeError(f"scale child {n} {shape} failed:\n{proc.stderr[-4000:]}")
                row = json.loads(res.read_text())
                row["child_wall_s"] = round(time.perf_counter() - t0, 1)
            rows.append(row)
            log(json.dumps(row))
    done = {(r["messages"], r["shape"]) for r in rows}
    rows = sorted(
        [r for r in keep or [] if (r["messages"], r["shape"]) not in done] + rows,
        key=lambda r: (r["messages"], r["shape"] != "one"),
    )
    report = {
        "sizes": rows,
        "machine": {
            "cpus": os.cpu_count(),
            "threads_per_child": threads,
            "load_avg_at_end": [round(x, 2) for x in os.getloadavg()],
        },
        "notes": [
            "each size and shape ran in its own subprocess; peak_rss_mb is that process's maximum "
            "resident set (the synthetic stream it generated included)",
            "writer_messages_per_s is measured on writer_sample messages (the newest of the big "
            "group, or the "
            "last whole groups of 1,000); where writer_sample < messages the Writer did not see "
            "the whole stream",
            "query_*: answer_question with embedder='none' (BM25, window and session channels, "
            "System 2 records, "
            "rules answerer) on read-only stores after one warm-up query per store (query_cold_ms)",
            "dense_query_*: a fresh MiniLM encode of the question (1 thread) + the dense channel "
            "(ops/text/dense_index.py: the group's faiss HNSW top-k above its threshold, brute "
            "force "
            "below); "
            "dense_encode_* is the encode alone, dense_channel_* the channel alone; null where not "
            "run",
            "injection_*: PassiveInjector on the fact graph the rules entity path built from "
            "entity_sample "
            "messages of the same stream",
        ],
    }
    if out:
        out = Path(out)
        out.write_text(json.dumps(report, indent=2) + "\n")
        plot(report, out.with_suffix(".png"))
    return report


def plot(report: dict[str, Any], path: str | Path) -> Path | None:
    """Log-log cost against size: one panel per cost, one line per shape."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is a core dependency
        return None
    panels = [
        ("ingest µs / message", lambda r: 1e6 / r["ingest_messages_per_s"]),
        ("rules Writer µs / message", lambda r: 1e6 / r["writer_messages_per_s"]),
        ("bytes on disk / message", lambda r: r["bytes_per_message"]),
        ("peak RSS (MB)", lambda r: r["peak_rss_mb"]),
        ("rules query p50 / p95 (ms)", lambda r: r["query_p50_ms"]),
        ("dense query p50 (ms): encode + channel", lambda r: r.get("dense_query_p50_ms")),
        ("injection p50 (ms)", lambda r: r.get("injection_p50_ms")),
    ]
    fig, axes = plt.subplots(2, 4, figsize=(16, 7))
    for ax, (title, get) in zip(axes.flat, panels, strict=False):
        for shape, style in (("one", "o-"), ("many", "s--")):
            rows = [r for r in report["sizes"] if r.get("shape") == shape and get(r)]
            if rows:
                ax.plot(
                    [r["messages"] for r in rows],
                    [get(r) for r in rows],
                    style,
                    label="one group" if shape == "one" else "groups of 1,000",
                )
            if title.startswith("dense"):
                for key, lab in (
                    ("dense_channel_p50_ms", "channel only"),
                    ("brute_top50_p50_ms", "brute-force top-50"),
                ):
                    rows = [r for r in report["sizes"] if r.get("shape") == shape and r.get(key)]
                    if rows:
                        ax.plot(
                            [r["messages"] for r in rows],
                            [r[key] for r in rows],
                            ":",
                            marker=".",
                            label=lab,
                        )
            if title.startswith("rules query"):
                rows = [
                    r for r in report["sizes"] if r.get("shape") == shape and r.get("query_p95_ms")
                ]
                if rows:
                    ax.plot(
                        [r["messages"] for r in rows],
                        [r["query_p95_ms"] for r in rows],
                        ":",
                        alpha=0.6,
                        label=f"p95 ({shape})",
                    )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("messages")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:  # a panel with no measured series has no legend
            ax.legend(fontsize=7)
    axes.flat[-1].axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        _child_main(argv[1:])
        return
    if argv and argv[0] == "embed":
        p = argparse.ArgumentParser()
        p.add_argument("--messages", type=int, default=100_000)
        p.add_argument("--cache", required=True)
        p.add_argument("--threads", type=int, default=1)
        p.add_argument("--precision", default=None, help="torch, fp32 or int8 (default: the env's)")
        a = p.parse_args(argv[1:])
        print(
            json.dumps(embed_stream(a.messages, a.cache, threads=a.threads, precision=a.precision))
        )
        return
    if argv and argv[0] == "ingest-ab":
        p = argparse.ArgumentParser()
        p.add_argument("--messages", type=int, default=100_000)
        p.add_argument(
            "--rev",
            default=INGEST_AB_REV,
            help="git revision of the ingest path (graphs/store.py and siblings) to compare with",
        )
        p.add_argument("--rounds", type=int, default=2)
        p.add_argument(
            "--batch", type=int, default=WHOLE, help="messages per append (0: all in one)"
        )
        a = p.parse_args(argv[1:])
        print(json.dumps(ingest_ab(a.messages, a.rev, batch=a.batch, rounds=a.rounds)))
        return
    if argv and argv[0] == "dense":
        p = argparse.ArgumentParser()
        p.add_argument("--messages", type=int, default=100_000)
        p.add_argument(
            "--cache",
            action="append",
            required=True,
            help="PRECISION=PATH (torch, fp32 or int8 = the stream's vectors); repeatable",
        )
        p.add_argument("--queries", type=int, default=40)
        a = p.parse_args(argv[1:])
        caches = dict(c.split("=", 1) for c in a.cache)
        print(json.dumps(dense_ab(a.messages, caches, a.queries), indent=2))
        return
    if argv and argv[0] == "ann":
        p = argparse.ArgumentParser()
        p.add_argument("--messages", type=int, default=100_000)
        p.add_argument("--cache", required=True)
        p.add_argument("--params", default="32:100,48:200", help="M:efConstruction pairs")
        p.add_argument("--efs", default="128,256,512,1024", help="efSearch values")
        a = p.parse_args(argv[1:])
        params = tuple(
            (int(m), int(efc)) for m, efc in (x.split(":") for x in a.params.split(",") if x)
        )
        efs = tuple(int(x) for x in a.efs.split(",") if x)
        for row in ann_sweep(a.messages, a.cache, params, efs):
            print(json.dumps(row), flush=True)
        return
    raise SystemExit("use: speakerflow bench scale --messages N --out report.json")


if __name__ == "__main__":
    main()


def add_bench(bsub: argparse._SubParsersAction) -> None:
    """``speakerflow bench scale`` (registered by ``speakerflow/cli/bench.py``)."""
    p = bsub.add_parser(
        "scale",
        help="cost against size (1k..1M messages): ingest, Writer, disk, RSS, query, "
        "dense, injection; one big group and groups of 1,000",
    )
    p.add_argument(
        "--messages", type=int, default=100_000, help="largest size: 1k, 10k, 100k, 1M up to it"
    )
    p.add_argument(
        "--out", default=None, help="write the report JSON here (the log-log plot beside it, .png)"
    )
    p.add_argument(
        "--shapes", default="one,many", help="one (one big group), many (groups of 1,000), or both"
    )
    p.add_argument(
        "--writer-sample",
        type=int,
        default=10_000,
        help="messages the rules Writer runs on per size",
    )
    p.add_argument(
        "--entity-sample", type=int, default=10_000, help="messages the entity path reads per size"
    )
    p.add_argument("--queries", type=int, default=40, help="timed questions per size and shape")
    p.add_argument(
        "--embed-cache",
        default=None,
        help="MiniLM vectors of the stream (built by python -m speakerflow.benchmarks.scale "
        "embed); "
        "enables the dense columns (big group only)",
    )
    p.add_argument("--dense-max", type=int, default=100_000, help="largest size with dense queries")
    p.add_argument("--seed", type=int, default=7, help="seed of the synthetic stream (default 7)")
    p.add_argument(
        "--ingest-batch",
        type=int,
        default=WHOLE,
        help="messages per append into the big group (default 0: the whole stream in one "
        "append, as speakerflow ingest of a file does; N: appends of N, an incremental ingest)",
    )
    p.add_argument(
        "--exact-queries",
        type=int,
        default=20,
        help="questions timed on both the exact and the bounded query path, big group only (0: "
        "skip)",
    )
    p.add_argument(
        "--threads", type=int, default=1, help="OpenMP/BLAS threads per child (0: library default)"
    )
    p.add_argument(
        "--sizes",
        default=None,
        help="comma-separated sizes to measure instead of 1k, 10k ... --messages",
    )
    p.add_argument(
        "--append",
        action="store_true",
        help="keep the rows of an existing --out report for the sizes and shapes not measured now",
    )
    p.add_argument(
        "--json", action="store_true", help="print the report as JSON instead of a table"
    )
    p.set_defaults(func=_run_cli)


def _run_cli(args: argparse.Namespace) -> int:
    keep = (
        json.loads(Path(args.out).read_text())["sizes"]
        if args.append and args.out and Path(args.out).exists()
        else []
    )
    report = run(
        args.messages,
        out=args.out,
        shapes=tuple(s for s in args.shapes.split(",") if s),
        sizes=[int(x) for x in args.sizes.split(",")] if args.sizes else None,
        keep=keep,
        threads=args.threads or None,
        batch=args.ingest_batch,
        writer_sample=args.writer_sample,
        entity_sample=args.entity_sample,
        queries=args.queries,
        embed_cache=args.embed_cache,
        dense_max=args.dense_max if args.embed_cache else 0,
        seed=args.seed,
        exact_queries=args.exact_queries,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    cols = [
        "shape",
        "messages",
        "groups",
        "ingest_batch",
        "ingest_messages_per_s",
        "writer_messages_per_s",
        "bytes_per_message",
        "peak_rss_mb",
        "query_p50_ms",
        "query_p95_ms",
        "dense_query_p50_ms",
    ]
    rows = [[str(r.get(c, "-")) for c in cols] for r in report.get("sizes", [])]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    for line in [cols, *rows]:
        print("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())
    if args.out:
        print(f"wrote {args.out}")
    return 0

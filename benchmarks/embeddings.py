"""MiniLM embedding cost and agreement: the torch fp32 reference (sentence-transformers), the
onnxruntime fp32 export and its int8 quantisation, side by side in one process.

Texts are LoCoMo messages of the dev conversations as the dense channel embeds them
(``"speaker: text"``), questions are their QA questions. Per round, each embedder (order
rotated every round) encodes every text in one call (the batched ingest path: sorted by
length, batches of ``batch_size``) and then each question alone (the query path: one text,
one thread), with wall and CPU time. Reported per embedder: texts/s (median of rounds, wall
and per CPU second), single-question p50/p95 ms, and the cosine of its vectors to the torch
model's (mean, 1st percentile, min).

    python -m speakerflow.benchmarks.embeddings --texts 1000 --queries 100 --rounds 3 --out r.json

Load averages at the start and the end are in the report: on a shared machine compare the
embedders within one report, not across reports.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from .percentiles import pct
from .qa_data import LOCOMO_SPLITS

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
DEV = LOCOMO_SPLITS["dev"]
KINDS = ("torch", "fp32", "int8")


def locomo_texts(path: Path = LOCOMO, groups: tuple[str, ...] = DEV) -> tuple[list[str], list[str]]:
    """(``"speaker: text"`` of every message, every question) of the ``groups`` of LoCoMo."""
    data = json.loads(Path(path).read_text())
    texts: list[str] = []
    questions: list[str] = []
    for conv in data:
        if conv.get("sample_id") not in groups:
            continue
        for key, turns in conv["conversation"].items():
            if key.startswith("session") and isinstance(turns, list):
                texts += [f"{t['speaker']}: {t['text']}" for t in turns]
        questions += [q["question"] for q in conv["qa"]]
    return texts, questions


def make(kind: str, threads: int, batch_size: int):
    from speakerflow.ops.text.embed import MiniLMEmbedder
    from speakerflow.ops.text.onnx_minilm import OnnxMiniLMEmbedder

    if kind == "torch":
        return MiniLMEmbedder(batch_size=batch_size)
    return OnnxMiniLMEmbedder(kind, batch_size=batch_size, threads=threads)


def run(
    n_texts: int = 1000,
    n_queries: int = 100,
    rounds: int = 3,
    threads: int = 1,
    batch_size: int = 128,
    kinds: tuple[str, ...] = KINDS,
    seed: int = 7,
    data: Path = LOCOMO,
    log=lambda line: None,
) -> dict[str, Any]:
    """Measure ``kinds`` side by side (see the module doc); ``threads`` for the batched
    encodes (torch and onnxruntime), questions always on one thread."""
    import torch

    torch.set_num_threads(threads)
    texts, questions = locomo_texts(data)
    rng = random.Random(seed)
    texts = rng.sample(texts, min(n_texts, len(texts)))
    questions = rng.sample(questions, min(n_queries, len(questions)))
    load_start = os.getloadavg()
    embedders = {k: make(k, threads, batch_size) for k in kinds}
    load_s = {}
    for k, emb in embedders.items():  # model load (and the ONNX cache build on a first run)
        t0 = time.perf_counter()
        emb.encode(["warm up"])
        emb.encode(texts[:8])
        load_s[k] = round(time.perf_counter() - t0, 2)
    vecs, timings = _rounds(embedders, kinds, texts, questions, rounds, log)
    out: dict[str, Any] = {
        "texts": len(texts),
        "questions": len(questions),
        "rounds": rounds,
        "threads": threads,
        "batch_size": batch_size,
        "load_avg_start": [round(x, 2) for x in load_start],
        "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        "cpu_count": os.cpu_count(),
        "embedders": {},
    }
    ref = vecs.get("torch")
    for k in kinds:
        wall, cpu, query_ms, query_cpu_ms = (t[k] for t in timings)
        row: dict[str, Any] = {
            "name": embedders[k].name,
            "load_s": load_s[k],
            "texts_per_s": round(len(texts) / statistics.median(wall), 1),
            "texts_per_cpu_s": round(len(texts) / statistics.median(cpu), 1),
            "query_p50_ms": pct(query_ms, 50),
            "query_p95_ms": pct(query_ms, 95),
            "query_cpu_p50_ms": pct(query_cpu_ms, 50),
        }
        if ref is not None:
            cos = np.sum(vecs[k] * ref, axis=1)
            row.update(
                cosine_to_torch_mean=round(float(cos.mean()), 5),
                cosine_to_torch_p1=pct(cos, 1, 5),
                cosine_to_torch_min=round(float(cos.min()), 5),
            )
        out["embedders"][k] = row
    return out


def _rounds(
    embedders: dict[str, Any],
    kinds: tuple[str, ...],
    texts: list[str],
    questions: list[str],
    rounds: int,
    log,
) -> tuple[dict[str, np.ndarray], tuple[dict[str, list[float]], ...]]:
    """``rounds`` rounds, each embedder in a rotated order per round: the texts in one batched
    encode, then each question alone. Returns the last vectors per embedder and the timings
    per embedder: (wall s, CPU s) per batch, (wall ms, CPU ms) per question."""
    vecs: dict[str, np.ndarray] = {}
    wall: dict[str, list[float]] = {k: [] for k in kinds}
    cpu: dict[str, list[float]] = {k: [] for k in kinds}
    query_ms: dict[str, list[float]] = {k: [] for k in kinds}
    query_cpu_ms: dict[str, list[float]] = {k: [] for k in kinds}
    for r in range(rounds):
        order = list(kinds[r % len(kinds) :]) + list(kinds[: r % len(kinds)])
        for k in order:
            emb = embedders[k]
            c0, t0 = time.process_time(), time.perf_counter()
            vecs[k] = emb.encode(texts)
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
            for q in questions:
                c0, t0 = time.process_time(), time.perf_counter()
                emb.encode([q])
                query_ms[k].append((time.perf_counter() - t0) * 1000)
                query_cpu_ms[k].append((time.process_time() - c0) * 1000)
            log(
                f"round {r + 1}/{rounds} {k}: {len(texts) / wall[k][-1]:.0f} texts/s, "
                f"question p50 {statistics.median(query_ms[k][-len(questions) :]):.2f} ms"
            )
    return vecs, (wall, cpu, query_ms, query_cpu_ms)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m speakerflow.benchmarks.embeddings", description=__doc__.split("\n")[0]
    )
    p.add_argument("--texts", type=int, default=1000, help="LoCoMo dev messages encoded per round")
    p.add_argument("--queries", type=int, default=100, help="questions encoded one by one")
    p.add_argument("--rounds", type=int, default=3, help="rounds (embedder order rotated)")
    p.add_argument("--threads", type=int, default=1, help="threads of the batched encodes")
    p.add_argument("--batch-size", type=int, default=128, help="texts per model call")
    p.add_argument("--kinds", default=",".join(KINDS), help="torch, fp32, int8 (comma-separated)")
    p.add_argument("--data", default=str(LOCOMO), help="locomo10.json")
    p.add_argument("--out", default=None, help="write the report JSON here")
    a = p.parse_args(argv)
    report = run(
        a.texts,
        a.queries,
        a.rounds,
        a.threads,
        a.batch_size,
        tuple(k for k in a.kinds.split(",") if k),
        data=Path(a.data),
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    text = json.dumps(report, indent=2)
    if a.out:
        Path(a.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()

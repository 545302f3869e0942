"""The rules query path in a big group: the exact path against the bounded path.

Times, in one process, on the same store and questions, the exact recall (every message
scored per question) and the bounded recall of large groups
(:mod:`speakerflow.ops.query.recall_bounded`: BM25 top ``cap``, window and session channels over
the candidates' neighbourhoods, ranks over positive scores only, Resolve's fallback from a
per-speaker index), alternating (``rounds`` each), and counts how many answers and top-10
cited ids stay identical. The path is chosen through ``$SPEAKERFLOW_BOUNDED_RECALL_ABOVE``
(set per round in this process only).

    python -m speakerflow.benchmarks.query_scans --messages 100000 --home /tmp/q100k [--cap 2000]

The home is built on first use (the one-group stream of :mod:`.scale`, ingested in batches
of 10,000, the rules Writer over the newest 2,000 messages) and reused afterwards.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .percentiles import pct
from .qa_data import LOCOMO_SPLITS
from .scale_stream import questions_with_sources, slices, synthetic_stream


def _build(home, table, n: int, writer_sample: int) -> None:
    from speakerflow.graphs.records import RecordBuffer
    from speakerflow.ops.core.base import Context
    from speakerflow.ops.write.writer.registry import make_writer
    from speakerflow.pipelines.write_path import write_pipeline

    with home.open("big", writable=True) as store:
        for lo, size in slices(n, 10_000):
            store.append_messages(table.slice(lo, size))
        msgs = store.messages()
        buffer = RecordBuffer(store, flush_every=64)
        sample = min(n, writer_sample)
        write_pipeline()(
            msgs.slice(n - sample, sample),
            Context(store=buffer, backends={"writer": make_writer("rules")}),
        )
        buffer.flush()


def run(
    n: int,
    home_dir: str | Path,
    cap: int | None = None,
    questions: int = 40,
    writer_sample: int = 2_000,
    seed: int = 7,
    rounds: int = 2,
) -> dict:
    """Time the exact path and the bounded path (:mod:`speakerflow.ops.query.recall_bounded`) on
    the same store and questions, ``rounds`` times each, alternating; count agreements."""
    import os

    from speakerflow.graphs import Home
    from speakerflow.ops.query.recall_bounded import bm25_cap
    from speakerflow.pipelines.query_path import QueryConfig

    home = Home(Path(home_dir))
    if not home.group_path("big").exists():
        _build(home, synthetic_stream(n, "one", seed), n, writer_sample)
    cfg = QueryConfig(embedder="none")
    saved = {
        k: os.environ.get(k) for k in ("SPEAKERFLOW_BOUNDED_RECALL_ABOVE", "SPEAKERFLOW_BM25_CAP")
    }
    if cap is not None:
        os.environ["SPEAKERFLOW_BM25_CAP"] = str(cap)
    report: dict = {
        "messages": n,
        "bm25_cap": bm25_cap(),
        "questions": questions,
        "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
    }
    try:
        with home.open("big") as store:
            msgs = store.messages()
            asked = questions_with_sources(msgs, questions, seed)
            qs = [q for q, _ in asked]
            sources, gold = _sources(msgs, asked)
            report["messages"] = msgs.num_rows
            answers = _time_paths(store, qs, cfg, rounds, report)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    _agreement(report, answers, sources, gold)
    return report


def _sources(msgs: pa.Table, asked: list[tuple[str, int]]) -> tuple[list[str], list[set]]:
    """The source message of each question, and every message with its speaker and text (the
    stream repeats sentences, so a copy answers as well as the source)."""
    sources = [msgs["msg_id"][i].as_py() for _, i in asked]
    same = pc.and_(
        pc.is_in(msgs["text"], pa.array([msgs["text"][i].as_py() for _, i in asked])),
        pc.is_in(msgs["speaker"], pa.array([msgs["speaker"][i].as_py() for _, i in asked])),
    )
    copies: dict[tuple, set] = {}
    for mid, sp, tx in zip(
        *(msgs.filter(same)[c].to_pylist() for c in ("msg_id", "speaker", "text")),
        strict=True,
    ):
        copies.setdefault((sp, tx), set()).add(mid)
    gold = [copies[(msgs["speaker"][i].as_py(), msgs["text"][i].as_py())] for _, i in asked]
    return sources, gold


def _time_paths(store, qs: list[str], cfg, rounds: int, report: dict) -> dict[str, list]:
    """Answer every question on the exact and the bounded path, alternating, ``rounds`` times
    each; each round's p50/p95 goes to ``report[path]``; returns the last round's (top-10
    cited ids, answer) per path."""
    import os

    from speakerflow.pipelines.query_path import answer_question

    answers: dict[str, list] = {}
    for label in ("exact", "bounded") * rounds:
        os.environ["SPEAKERFLOW_BOUNDED_RECALL_ABOVE"] = str(10**12) if label == "exact" else "0"
        answer_question(store, qs[0], cfg)  # warm-up (view, index, per-view indexes)
        ms, out = [], []
        for q in qs:
            t0 = time.perf_counter()
            res = answer_question(store, q, cfg)
            ms.append((time.perf_counter() - t0) * 1000)
            out.append((res.cited_ids(10), res.answer))
        answers[label] = out
        report.setdefault(label, []).append(
            {
                "p50_ms": pct(ms, 50, 1),
                "p95_ms": pct(ms, 95, 1),
            }
        )
    return answers


def _agreement(report: dict, answers: dict[str, list], sources: list[str], gold: list[set]) -> None:
    """Per path, questions whose source (or a copy of it) is cited in the top 10; how many
    answers and top-10 cited ids the two paths share."""
    for label in ("exact", "bounded"):
        cited = [c for c, _ in answers[label]]
        report[f"{label}_source_in_cited10"] = sum(
            src in c for src, c in zip(sources, cited, strict=True)
        )
        report[f"{label}_copy_in_cited10"] = sum(
            bool(g & set(c)) for g, c in zip(gold, cited, strict=True)
        )
    a, b = answers["exact"], answers["bounded"]
    report["identical_cited10_and_answer"] = sum(x == y for x, y in zip(a, b, strict=True))
    report["same_answer"] = sum(x[1] == y[1] for x, y in zip(a, b, strict=True))
    report["mean_overlap_cited10"] = round(
        float(
            np.mean(
                [len(set(x[0]) & set(y[0])) / max(1, len(x[0])) for x, y in zip(a, b, strict=True)]
            )
        ),
        3,
    )


def locomo_index_check(
    data: str | Path,
    groups: tuple[str, ...] = LOCOMO_SPLITS["dev"],
) -> dict:
    """LoCoMo: the text index written by the ingest path (Arrow, JSON lines) against one written
    by the old per-row path from the same messages: every QA question's BM25 hits (ids, scores,
    order), unfiltered and per speaker, with a limit of the group's size (what exact recall asks)."""  # noqa: E501
    import tempfile

    from speakerflow.graphs import Home, SearchFilter
    from speakerflow.graphs.append import index_columns
    from speakerflow.graphs.text_index import TantivyIndex
    from speakerflow.ops.loaders import load

    qa = {
        c["sample_id"]: [q["question"] for q in c["qa"]] for c in json.loads(Path(data).read_text())
    }
    out: dict[str, Any] = {
        "groups": list(groups),
        "searches": 0,
        "identical": 0,
        "hits_compared": 0,
    }
    with tempfile.TemporaryDirectory(prefix="speakerflow-locomo-index-") as tmp:
        home = Home(Path(tmp) / "home")
        for gid, table in load(data, "locomo"):
            if gid not in groups:
                continue
            with home.open(gid, writable=True) as store:
                store.append_messages(table)
                rows = TantivyIndex(Path(tmp) / f"rows-{gid}")
                rows.add_columns(index_columns(store.messages()))
                n = store.messages().num_rows
                filters = [SearchFilter(kind="message")] + [
                    SearchFilter(kind="message", speaker=p) for p in store.roster()
                ]
                for q in qa[gid]:
                    for flt in filters:
                        a, b = rows.search(q, n, flt), store.search(q, n, flt)
                        out["searches"] += 1
                        out["identical"] += a == b
                        out["hits_compared"] += len(a)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--messages", type=int, default=100_000)
    p.add_argument(
        "--home", default=None, help="folder of the experiment's home (built on first use)"
    )
    p.add_argument(
        "--cap",
        type=int,
        default=None,
        help="BM25 candidates of the bounded path (default: "
        "$SPEAKERFLOW_BM25_CAP or the module's BM25_CAP)",
    )
    p.add_argument("--questions", type=int, default=40)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument(
        "--locomo",
        default=None,
        help="instead: compare the ingest path's index with the per-row one "
        "on this locomo10.json (dev conversations; --home is not used)",
    )
    a = p.parse_args(argv)
    if a.locomo:
        print(json.dumps(locomo_index_check(a.locomo)))
        return
    print(json.dumps(run(a.messages, a.home, a.cap, a.questions, rounds=a.rounds)))


if __name__ == "__main__":
    main()

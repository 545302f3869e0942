"""What the rules query path costs in a big group with its per-question full scans removed.

An experiment for the query path's owners, not a code path: it monkeypatches, in this
process only, the functions of ``ops/recall.py`` and ``ops/resolve.py`` that walk every
message of the group per question, and times both versions alternately on the same store
(two rounds each), with the same questions, counting how many answers and top-10 cited ids
stay identical:

- exact rewrites (same results): ``_fallback`` reads a per-speaker row index cached on the
  view instead of comparing every message's speaker; ``rank_of`` ranks only the non-zero
  entries (zero scores get nothing from the fusion anyway); ``session_scores`` takes maxima
  over the non-zero entries only;
- optionally (``cap``): BM25 asks Tantivy for at most ``cap`` candidates instead of one per
  message of the group (changes results in groups larger than ``cap``).

    python -m speakerflow.benchmarks.query_scans --messages 100000 --home /tmp/q100k [--cap 1000]

The home is built on first use (the one-group stream of :mod:`.scale`, ingested in batches
of 10,000, the rules Writer over the newest 2,000 messages) and reused afterwards.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from .scale import _questions, _slices, synthetic_stream


def _build(home, table, n: int, writer_sample: int) -> None:
    from speakerflow.graphs.records import RecordBuffer
    from speakerflow.ops.base import Context
    from speakerflow.ops.writer.registry import make_writer
    from speakerflow.pipelines.write_path import write_pipeline

    with home.open("big", writable=True) as store:
        for lo, size in _slices(n, 10_000):
            store.append_messages(table.slice(lo, size))
        msgs = store.messages()
        buffer = RecordBuffer(store, flush_every=64)
        sample = min(n, writer_sample)
        write_pipeline()(msgs.slice(n - sample, sample), Context(store=buffer, backends={"writer": make_writer("rules")}))
        buffer.flush()


def run(n: int, home_dir: str | Path, cap: int | None = None, questions: int = 40, writer_sample: int = 2_000,
        seed: int = 7) -> dict:
    import speakerflow.ops.recall as recall_mod
    import speakerflow.ops.resolve as resolve_mod
    from speakerflow.graphs import Home, SearchFilter
    from speakerflow.pipelines.query_path import QueryConfig, answer_question

    table = synthetic_stream(n, "one", seed)
    home = Home(Path(home_dir))
    if not home.group_path("big").exists():
        _build(home, table, n, writer_sample)
    qs = _questions(table, questions, seed)
    cfg = QueryConfig(embedder="none")
    orig = (recall_mod.bm25_scores, recall_mod.rank_of, recall_mod.session_scores, resolve_mod._fallback)

    def rows_of(view, person):
        index = view.__dict__.get("_speaker_rows")
        if index is None:
            speakers = np.asarray(view.speakers, dtype=object)
            order = np.argsort(speakers, kind="stable")
            names, starts = np.unique(speakers[order], return_index=True)
            ends = list(starts[1:]) + [len(order)]
            index = view._speaker_rows = {str(k): np.sort(order[a:b]) for k, a, b in zip(names, starts, ends, strict=True)}
        return index.get(person, np.zeros(0, dtype=np.int64))

    def bm25_scores(view, query, speaker=None):
        out = np.zeros(len(view), dtype=np.float64)
        if not len(view):
            return out
        limit = len(view) if cap is None else min(len(view), cap)
        for hit in view.store.search(query, limit, SearchFilter(kind="message", speaker=speaker)):
            row = view.pos.get(hit.doc_id)
            if row is not None:
                out[row] = hit.score
        return out

    def rank_of(scores):
        ranks = np.full(len(scores), float(len(scores)))
        nz = np.flatnonzero(scores > 0)
        ranks[nz[np.lexsort((nz, -scores[nz]))]] = np.arange(1, len(nz) + 1)
        return ranks

    def session_scores(view, base):
        best = np.zeros(int(view.session_of.max()) + 1 if len(view) else 0)
        nz = np.flatnonzero(base > 0)
        np.maximum.at(best, view.session_of[nz], base[nz])
        return best[view.session_of]

    def fallback(view, fused, row, k):
        if row == resolve_mod.GROUP_OWNER or k <= 0 or not len(fused):
            return []
        mine = rows_of(view, row)
        order = mine[np.argsort(-fused[mine], kind="stable")[:k]]
        return [resolve_mod._item("excerpt", row, view.texts[r], [view.ids[r]], float(fused[r]), speaker=row,
                                  ts=view.ts[r]) for r in order if fused[r] > 0]

    def use(patched: bool) -> None:
        new = (bm25_scores, rank_of, session_scores, fallback) if patched else orig
        recall_mod.bm25_scores, recall_mod.rank_of, recall_mod.session_scores, resolve_mod._fallback = new

    report: dict = {"messages": n, "bm25_cap": cap, "questions": len(qs)}
    answers: dict[str, list] = {}
    try:
        for label, patched in (("as_committed", False), ("scans_removed", True)) * 2:
            use(patched)
            ms, out = [], []
            with home.open("big") as store:
                answer_question(store, qs[0], cfg)
                for q in qs:
                    t0 = time.perf_counter()
                    res = answer_question(store, q, cfg)
                    ms.append((time.perf_counter() - t0) * 1000)
                    out.append((res.cited_ids(10), res.answer))
            answers[label] = out
            report.setdefault(label, []).append({"p50_ms": round(float(np.percentile(ms, 50)), 1),
                                                 "p95_ms": round(float(np.percentile(ms, 95)), 1)})
    finally:
        use(False)
    a, b = answers["as_committed"], answers["scans_removed"]
    report["identical_cited10_and_answer"] = sum(x == y for x, y in zip(a, b, strict=True))
    report["same_answer"] = sum(x[1] == y[1] for x, y in zip(a, b, strict=True))
    report["mean_overlap_cited10"] = round(float(np.mean([len(set(x[0]) & set(y[0])) / max(1, len(x[0]))
                                                          for x, y in zip(a, b, strict=True)])), 3)
    return report


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--messages", type=int, default=100_000)
    p.add_argument("--home", required=True, help="folder of the experiment's home (built on first use)")
    p.add_argument("--cap", type=int, default=None, help="BM25 candidates at most (default: unbounded, exact)")
    p.add_argument("--questions", type=int, default=40)
    a = p.parse_args(argv)
    print(json.dumps(run(a.messages, a.home, a.cap, a.questions)))


if __name__ == "__main__":
    main()

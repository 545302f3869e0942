"""What the operator pipeline costs over calling the query functions directly.

For each question (in one process, on the same stores, alternating which path runs first)
it runs :func:`~speakerflow.pipelines.query_path.direct_path` (the stages as plain function
calls, the baseline) and :func:`~speakerflow.pipelines.query_path.answer_question` (the
``Project >> Recall >> Select >> Resolve >> Compose >> Answer`` pipeline over Arrow
tables), clearing the question-embedding memo before each, and reports p50/p95 of both,
their ratio and how many questions got identical evidence and answers.

    .venv/bin/python -m speakerflow.benchmarks.query_overhead ../shared/data/locomo/locomo10.json \
        --format locomo --limit 300
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Any

import numpy as np

from speakerflow.graphs import Home
from speakerflow.ops.text.embed import clear_query_memo

from .evaluate import _prepare
from .qa_data import load_qa


def run(data: str, fmt: str, limit: int | None = None, embedder: str = "minilm") -> dict:
    """Time both paths per question; returns p50/p95 (ms), ratios and the identical count."""
    from speakerflow.pipelines.query_path import (
        QueryConfig,
        answer_question,
        direct_path,
        embedder_for,
    )

    qa = load_qa(data, fmt)
    questions = qa.questions[:limit] if limit else qa.questions
    config = QueryConfig(embedder=embedder)
    ms: dict[str, list[float]] = {"direct": [], "pipeline": []}
    same = 0
    with tempfile.TemporaryDirectory(prefix="speakerflow-overhead-") as tmp:
        home = Home(tmp)
        _prepare(qa, home, "speakerflow", config)
        for i, q in enumerate(questions):
            with home.open(q.group) as store:
                out: dict[str, Any] = {}
                for name in ("direct", "pipeline") if i % 2 == 0 else ("pipeline", "direct"):
                    clear_query_memo(embedder_for(config))
                    t0 = time.perf_counter()
                    out[name] = (
                        direct_path(store, q.question, config)
                        if name == "direct"
                        else answer_question(store, q.question, config)
                    )
                    ms[name].append((time.perf_counter() - t0) * 1000)
                _, composed, answer = out["direct"]  # direct_path: (projection, composed, answer)
                same += (
                    composed.evidence == out["pipeline"].evidence
                    and answer == out["pipeline"].answer
                )
    report: dict[str, Any] = {"questions": len(questions), "identical": same}
    for name, values in ms.items():
        report[name] = {
            "p50": round(float(np.percentile(values, 50)), 2),
            "p95": round(float(np.percentile(values, 95)), 2),
        }
    report["ratio_p50"] = round(report["pipeline"]["p50"] / report["direct"]["p50"], 3)
    report["ratio_p95"] = round(report["pipeline"]["p95"] / report["direct"]["p95"], 3)
    return report


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data")
    p.add_argument("--format", required=True, choices=["locomo", "socialmem"])
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--embedder", default="minilm", choices=["minilm", "hashing"])
    args = p.parse_args(argv)
    print(json.dumps(run(args.data, args.format, args.limit, args.embedder), indent=2))


if __name__ == "__main__":
    main()

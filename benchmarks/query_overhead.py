"""What the Arrow tables between the query stages would cost: the one query path against the
same pipeline run a stage at a time on tables.

For each question (in one process, on the same stores, alternating which runs first) it runs
:func:`~speakerflow.pipelines.query_path.answer_question` (the composed pipeline: typed
batches between the stages, no table built) and the same
``Project >> Recall >> Select >> Resolve >> Compose >> Answer`` steps one at a time on Arrow
tables (every stage's output made a table and read back by the next: what an Arrow operator
of one's own between each two stages would force), clearing the question-embedding memo
before each, and reports the CPU per question of both (``time.process_time``), their ratio
and how many questions got identical evidence and answers.

    .venv/bin/python -m speakerflow.benchmarks.query_overhead ../shared/data/locomo/locomo10.json \
        --format locomo --limit 300
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Any

import pyarrow as pa

from speakerflow.graphs import Home
from speakerflow.ops.query.query_tables import evidence_items
from speakerflow.ops.text.embed import clear_query_memo

from .evaluate import _prepare
from .percentiles import pct
from .qa_data import load_qa


def stage_by_stage(store, question: str, config, steps: list) -> tuple[list, str]:
    """(evidence, answer) of the query pipeline's ``steps`` run one at a time on tables."""
    from speakerflow.pipelines.query_path import query_context

    table, ctx = pa.table({"question": [question]}), query_context(store, config)
    for step in steps:
        table = step(table, ctx)
    return evidence_items(table)[0], table["answer"][0].as_py()


def run(data: str, fmt: str, limit: int | None = None, embedder: str = "minilm") -> dict:
    """CPU per question of both ways; returns p50/p95 and mean (ms), ratios, identical count."""
    from speakerflow.pipelines.query_path import (
        QueryConfig,
        answer_question,
        embedder_for,
        query_pipeline,
    )

    qa = load_qa(data, fmt)
    questions = qa.questions[:limit] if limit else qa.questions
    config = QueryConfig(embedder=embedder)
    steps = query_pipeline(config).steps
    ms: dict[str, list[float]] = {"typed": [], "tables": []}
    same = 0
    with tempfile.TemporaryDirectory(prefix="speakerflow-overhead-") as tmp:
        home = Home(tmp)
        _prepare(qa, home, "speakerflow", config)
        for i, q in enumerate(questions):
            with home.open(q.group) as store:
                out: dict[str, Any] = {}
                for name in ("typed", "tables") if i % 2 == 0 else ("tables", "typed"):
                    clear_query_memo(embedder_for(config))
                    t0 = time.process_time()
                    out[name] = (
                        answer_question(store, q.question, config)
                        if name == "typed"
                        else stage_by_stage(store, q.question, config, steps)
                    )
                    ms[name].append((time.process_time() - t0) * 1000)
                evidence, answer = out["tables"]
                same += evidence == out["typed"].evidence and answer == out["typed"].answer
    report: dict[str, Any] = {"questions": len(questions), "identical": same}
    for name, values in ms.items():
        report[name] = {
            "p50": pct(values, 50, 2),
            "p95": pct(values, 95, 2),
            "mean": round(sum(values) / len(values), 2) if values else None,
        }
    for stat in ("p50", "mean"):
        typed, tables = report["typed"][stat], report["tables"][stat]
        report[f"ratio_{stat}"] = round(tables / typed, 3) if typed else None
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

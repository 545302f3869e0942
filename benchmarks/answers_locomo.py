"""LoCoMo token-F1 of answer variants side by side on stores already prepared.

:func:`~speakerflow.benchmarks.evaluate.run_eval` ingests and writes every conversation before
it answers (an hour for all ten here); to compare answer settings, this runner reuses a home
that such a run wrote (``speakerflow eval ... --home H``) and only asks the questions of the
chosen conversations, once per variant (a name and the
:class:`~speakerflow.ops.query.answer.AnswerConfig` fields it changes), through the same
:func:`~speakerflow.benchmarks.evaluate._answer_all` and query settings ``speakerflow eval``
uses::

    .venv/bin/python -m speakerflow.benchmarks.answers_locomo --home H --groups conv-26,conv-30 \\
        --variant default='{}' --variant short='{"short_answer": true}'

Prints per variant the questions, token-F1 (overall and by category) and recall@10.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from speakerflow.benchmarks.answers import _variant
from speakerflow.benchmarks.evaluate import _answer_all, _query_config
from speakerflow.benchmarks.qa_data import load_qa
from speakerflow.graphs import Home
from speakerflow.ops.query.answer_config import AnswerConfig
from speakerflow.pipelines.query_path import QueryConfig

KS = (5, 10, 20)


def run(data: str, home: str, groups: list[str], variants: dict[str, dict]) -> dict[str, dict]:
    """``{variant: {"questions", "token_f1", "by_category", "recall_10"}}`` on ``home``'s
    stores of ``groups`` (each must be there: this runner does not ingest)."""
    store_home = Home(home)
    missing = [g for g in groups if not (Path(home) / "groups" / g).exists()]
    if missing:
        raise ValueError(f"{home} holds no store for {missing}: prepare it with speakerflow eval")
    qa = load_qa(data, "locomo").only(groups)
    out = {}
    for name, fields in variants.items():
        config = _query_config(
            QueryConfig(answer=AnswerConfig(**fields)), "speakerflow", "minilm", None, KS
        )
        rows = _answer_all(store_home, qa.questions, "speakerflow", config, KS)
        by_cat: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            by_cat[r["category"]].append(r["token_f1"])
        n = max(len(rows), 1)
        out[name] = {
            "questions": len(rows),
            "token_f1": round(sum(r["token_f1"] for r in rows) / n, 4),
            "by_category": {c: round(sum(v) / len(v), 4) for c, v in sorted(by_cat.items())},
            "recall_10": round(sum(r["recall"]["10"] for r in rows) / n, 4),
        }
        print(json.dumps({"variant": name, **out[name]}), flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("data", nargs="?", default="../shared/data/locomo/locomo10.json")
    p.add_argument("--home", required=True, help="a home `speakerflow eval --home` prepared")
    p.add_argument("--groups", required=True, help="comma-separated LoCoMo conversation ids")
    p.add_argument("--variant", action="append", type=_variant, default=[])
    args = p.parse_args(argv)
    try:
        run(args.data, args.home, args.groups.split(","), dict(args.variant) or {"default": {}})
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Candidates and gold labels for the learned answer choice, from answer sets.

For each answer set folder (``tests/data/answers_v*`` layout) every conversation is ingested
and every question asked as :mod:`.answers` does; for the questions whose answer the scoring
picker chooses among its best sentences (not dates, changes or per-person lines) the feature
rows of those sentences (:func:`~speakerflow.ops.query.answer_learned.features`) are recorded
with a label per row: the sentence's message is one of the question's ``gold`` ids. What
``speakerflow train picker`` fits on (:mod:`speakerflow.training.picker`)::

    .venv/bin/python -m speakerflow.benchmarks.picker_data tests/data/answers_v2 --out rows.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def collect(folder: str | Path, embedder: str = "minilm") -> list[dict[str, Any]]:
    """One record per question that reaches the choice: ``set``, ``data``, ``id``, ``type``,
    ``rows``, ``labels``."""
    import speakerflow.ops.query.answer as answer_mod
    from speakerflow.benchmarks.answers import load_set, run
    from speakerflow.ops.query.answer_learned import TOP, features
    from speakerflow.ops.query.answer_pick import answer_scored

    data = load_set(folder)
    name = Path(folder).name
    by_text: dict[str, list[dict[str, Any]]] = {}
    for q in data["questions"]:
        by_text.setdefault(q["question"], []).append(q)
    records: list[dict[str, Any]] = []

    def recorder(projection, evidence, units, names, messages, embedder, config, memo):
        def chooser(ranked, intent, memo):
            found = by_text.get(projection.question, [])
            if len(found) == 1:
                q = found[0]
                ids = set(q["gold"])
                records.append(
                    {
                        "set": name,
                        "data": q["data"],
                        "id": q["id"],
                        "type": q["type"],
                        "rows": features(ranked, intent, memo),
                        "labels": [float(u.msg_id in ids) for _, u in ranked[:TOP]],
                    }
                )
            return ranked[0][1]

        return answer_scored(
            projection, evidence, units, names, messages, embedder, config, memo, chooser=chooser
        )

    answer_mod.PICKERS["record"] = recorder
    try:
        run(folder, variants={"record": {"picker": "record"}}, embedder=embedder, progress=False)
    finally:
        answer_mod.PICKERS.pop("record", None)
    return records


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    records = [r for f in args.folders for r in collect(f)]
    Path(args.out).write_text(json.dumps(records))
    print(json.dumps({"questions": len(records), "out": args.out}))


if __name__ == "__main__":
    main()

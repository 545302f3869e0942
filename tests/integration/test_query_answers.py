"""Answer tests: 30 frozen questions (tests/data/answers/questions.json) over the bundled sample and
two SocialMemBench training networks, each with the answer spans a correct answer contains.

Run as a script for the report (share correct, by question type, with and without System 2)::

    .venv/bin/python tests/integration/test_query_answers.py [--ablate s2] [--embedder minilm] [-v]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE.parent / "data" / "answers" / "questions.json"
SOCIALMEM = (
    Path(os.environ.get("SPEAKERFLOW_SHARED_DATA", HERE.parents[1].parent / "shared" / "data"))
    / "socialmem"
    / "training"
)
#: the question types System 2 records are meant to answer better
RECORD_TYPES = ("change", "decision", "per-person")


def questions() -> list[dict]:
    return json.loads(QUESTIONS.read_text())["questions"]


def is_correct(answer: str, q: dict) -> bool:
    """The frozen rule of questions.json ('about'), shared with the answers_v2 runner."""
    from speakerflow.benchmarks.answers import is_correct as rule

    return rule(answer, q)


@cache
def store_for(data: str):
    """An in-memory store of one conversation with the rules Writer's records (None if absent)."""
    from speakerflow.graphs import GroupStore
    from speakerflow.ops.loaders import load
    from speakerflow.pipelines.write_path import write_group
    from speakerflow.settings import BUNDLED_SAMPLE

    if data == "sample":
        gid, table = load(BUNDLED_SAMPLE, "jsonl", group="sample-team")[0]
    else:
        path = SOCIALMEM / data
        if not path.exists():
            return None
        gid, table = load(path, "socialmem")[0]
    store = GroupStore("/tmp/unused", gid, in_memory=True)
    store.append_messages(table)
    write_group(store, "rules", progress=False)
    return store


def run(ablate: str | None = None, embedder: str = "minilm") -> list[dict]:
    """Answer every question whose data is present; one dict per question."""
    from speakerflow.pipelines.query_path import QueryConfig, answer_question

    config = QueryConfig(embedder=embedder, ablate=ablate)
    out = []
    for q in questions():
        store = store_for(q["data"])
        if store is None:
            continue
        answer = answer_question(store, q["question"], config).answer
        out.append({**q, "answer": answer, "correct": is_correct(answer, q)})
    return out


def shares(results: list[dict]) -> dict[str, float]:
    by: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        by[r["type"]].append(r["correct"])
        by["all"].append(r["correct"])
        if r["type"] in RECORD_TYPES:
            by["records-types"].append(r["correct"])
    return {k: round(sum(v) / len(v), 3) for k, v in sorted(by.items())}


def test_the_checker_reads_the_frozen_rule():
    q = {"expect": [["600"], ["700"]], "ordered": True, "forbid": ["800"]}
    assert is_correct("earlier: 600 euros; later: 700 euros", q)
    assert not is_correct("earlier: 700; later: 600", q)
    assert not is_correct("600 then 700 then 800", q)
    pp = {"per_person": {"Ben": ["Porto"], "Dev": ["train"]}}
    assert is_correct("Ben: Porto is fine by me\nDev: I'll take the night train", pp)
    assert not is_correct("Ben: Lisbon\nDev: the train to Porto", pp)
    assert len(questions()) == 30


@pytest.fixture(scope="module")
def full_and_ablated():
    if not SOCIALMEM.exists():
        pytest.skip(f"{SOCIALMEM} is absent (the shared data folder is not beside this checkout)")
    return run(None), run("s2")


def test_answer_share_and_what_records_add(full_and_ablated):
    full, ablated = full_and_ablated
    s_full, s_abl = shares(full), shares(ablated)
    assert len(full) == 30
    # measured with the scoring picker (the default since issue 23): 0.767 (23/30) full, 0.667
    # without System 2 (docs/query-path.md). The floor is what it measures: these questions were
    # tuned against before, so they are no held-out figure.
    assert s_full["all"] >= 0.76, [(r["id"], r["answer"]) for r in full if not r["correct"]]
    assert s_full["records-types"] > s_abl["records-types"]
    # change, decision and per-person questions: none answered worse with the records
    # (measured 0.50 / 0.75 / 0.60 with, 0.50 / 0.50 / 0.40 without)
    for kind in RECORD_TYPES:
        assert s_full[kind] >= s_abl[kind], (kind, s_full, s_abl)


#: the quick part of the frozen answers_v2 dev set run in the default suite: its first three
#: conversations by name (the whole set: python -m speakerflow.benchmarks.answers)
V2_QUICK = ("book_club", "family_move", "flatshare")
#: what the quick part measured (28 of 47 with the default picker, 18 with the old one; 7 of
#: its 10 changes of mind formed as update chains): dev figures, floors at what they measure
V2_FLOOR = 0.59
V2_CHAINS_FLOOR = 7


@pytest.fixture(scope="module")
def v2_quick():
    from speakerflow.benchmarks.answers import run as run_v2

    return run_v2(
        variants={"default": {}, "old": {"picker": "old"}}, only=list(V2_QUICK), progress=False
    )


def test_answers_v2_quick_part(v2_quick):
    """The default picker on the quick part of answers_v2 (dev figures; floors at what it
    measured, docs/query-path.md), and not below the old picker in the same run."""
    new, old = (v2_quick["variants"][v]["accuracy"] for v in ("default", "old"))
    assert v2_quick["questions"] == 47
    wrong = [(r["id"], r["answer"]) for r in v2_quick["variants"]["default"]["answers"]]
    assert new["all"] >= V2_FLOOR, (new, wrong)
    assert new["all"] >= old["all"], (new, old)
    assert v2_quick["writer"]["formed"] >= V2_CHAINS_FLOOR, v2_quick["writer"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--ablate", default=None)
    p.add_argument("--embedder", default="minilm")
    p.add_argument("-v", action="store_true", help="print every answer")
    args = p.parse_args(argv)
    results = run(args.ablate, args.embedder)
    for r in results:
        if args.v or not r["correct"]:
            mark = "ok " if r["correct"] else "BAD"
            print(
                f"{mark} {r['id']} [{r['type']}] {r['question']}\n    "
                + r["answer"].replace("\n", "\n    ")
            )
    print(json.dumps({"ablate": args.ablate, "questions": len(results), "share": shares(results)}))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    sys.exit(main())

"""``speakerflow demo``: the main job, end to end, on the embedded rules backend.

Ingests the bundled multi-party sample (four colleagues planning an offsite), runs the
rules Writer (System 2 records with update chains), then answers a group decision, a
per-person roll-up, a changed state, a cross-person view, a reason, a relative date
resolved to the day meant and a current state, each with its cited messages.
"""

from __future__ import annotations

import argparse

from speakerflow.ops.loaders import load
from speakerflow.settings import BUNDLED_SAMPLE

from .ask import add_query_options, print_result, query_setup
from .common import add_home, add_json, home_of, print_json

GROUP = "sample-team"
QUESTIONS = (
    ("a group decision", "Where did the group decide to hold the offsite?"),
    ("a per-person roll-up", "What does each person prefer for the offsite city?"),
    ("a changed state", "How did the budget per person change?"),
    ("a cross-person view", "What does Ben think of Ana?"),
    ("a reason", "Why does the budget go up to 700 euros?"),
    ("a resolved date ('yesterday')", "When did Chloe book her flight to Porto?"),
    ("a current state", "Where does Dev live now?"),
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="ingest the bundled sample conversation, write memory, answer questions"
    )
    add_query_options(p)
    add_json(p, "the answers (question, answer, cited ids)")
    add_home(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from speakerflow.pipelines.query_path import answer_question
    from speakerflow.pipelines.write_path import write_group

    config, chat = query_setup(args)
    home = home_of(args)
    [(gid, table)] = load(BUNDLED_SAMPLE, "jsonl", group=GROUP)
    answers = []
    with home.open(gid, writable=True) as store:
        result = store.append_messages(table)
        report = write_group(store, "rules", progress=False)
        if not args.json:
            print(
                f"ingested {result.added} new message(s) ({result.skipped} already stored) into "
                f"group '{gid}' under {home.root}; roster: {', '.join(store.roster())}"
            )
            print(f"rules Writer: {report.summary()}\n")
        by_id = {r["msg_id"]: r for r in store.messages().to_pylist()}
        for kind, question in QUESTIONS:
            res = answer_question(store, question, config, chat=chat)
            if args.json:
                answers.append(
                    {
                        "kind": kind,
                        "question": question,
                        "answer": res.answer,
                        "cited_ids": res.cited_ids(),
                    }
                )
                continue
            print(f"Q ({kind}): {question}")
            print_result(res, by_id)
            print()
    if args.json:
        print_json(
            {
                "group": gid,
                "home": str(home.root),
                "ingested": result.added,
                "writer": report.summary(),
                "answers": answers,
            }
        )
    return 0

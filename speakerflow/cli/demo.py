"""``speakerflow demo``: the main job on the embedded default backend.

Ingests the bundled multi-party sample (four colleagues planning an offsite) into a store
and shows what the memory can answer, each answer with the messages it rests on.
"""
from __future__ import annotations

import argparse

from speakerflow.graphs import SearchFilter
from speakerflow.ops.loaders import load
from speakerflow.settings import BUNDLED_SAMPLE

from .common import add_home, home_of

GROUP = "sample-team"
QUERIES = (
    ("Where will the offsite be?", None),
    ("What does Dev say about where he lives?", "Dev"),
    ("What is the budget per person?", None),
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="ingest the bundled sample conversation and query it")
    add_home(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    home = home_of(args)
    [(gid, table)] = load(BUNDLED_SAMPLE, "jsonl", group=GROUP)
    with home.open(gid, writable=True) as store:
        result = store.append_messages(table)
        print(f"ingested {result.added} new message(s) ({result.skipped} already stored) into "
              f"group '{gid}' under {home.root}; roster: {', '.join(store.roster())}\n")
        by_id = {r["msg_id"]: r for r in store.messages().to_pylist()}
        for question, speaker in QUERIES:
            print(f"Q: {question}" + (f"  [speaker: {speaker}]" if speaker else ""))
            for hit in store.search(question, 3, SearchFilter(kind="message", speaker=speaker)):
                m = by_id[hit.doc_id]
                print(f"   [{m['msg_id']}] {m['ts']:%Y-%m-%d} {m['speaker']}: {m['text']}")
            print()
    return 0

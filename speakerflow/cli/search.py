"""``speakerflow search GROUP QUERY``: BM25 over one group's verbatim track."""

from __future__ import annotations

import argparse

from speakerflow.memory import search_messages

from .common import add_home, home_of, print_json, skip_pandas_probe


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="BM25 search over a group's messages")
    p.add_argument("group", help="group id")
    p.add_argument("query", help="search words (BM25)")
    p.add_argument("--speaker", default=None, help="only messages by this speaker")
    p.add_argument("--k", type=int, default=10, help="results to show (default 10)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_home(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    skip_pandas_probe()
    with home_of(args).open(args.group) as store:
        rows = [h.model_dump() for h in search_messages(store, args.query, args.speaker, args.k)]
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print("no matching messages")
    for r in rows:
        print(
            f"[{r['msg_id']}] {r['ts']:%Y-%m-%d %H:%M} {r['speaker']}: {r['text']}  (bm25 "
            f"{r['score']})"
        )
    return 0

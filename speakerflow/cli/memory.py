"""``speakerflow memory GROUP [--owner X] [--layer L] [--history] [--json]``: derived records.

Without ``--history`` it prints the current heads; with it, every update chain (old
state -> new state, with dates and the source messages each state rests on).
``--json`` prints a list of records (``entry_id``, ``layer``, ``owner``, ``source``,
``utype``, ``content``, ``event``, ``from_ids``, ``supersedes``, ``superseded_by``,
``valid_at``, ``invalid_at``, ...; with ``--history`` each also has ``chain``, the index
of its chain, and ``sources``, the cited messages).
"""

from __future__ import annotations

import argparse

from speakerflow.graphs.records import chains
from speakerflow.memory import check_speaker
from speakerflow.schemas import LAYERS

from .common import add_home, home_of, print_json, skip_pandas_probe


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("memory", help="show a group's derived records (heads, or update chains)")
    p.add_argument("group", help="group id")
    p.add_argument("--owner", default=None, help="only records about this person (or GROUP)")
    p.add_argument("--layer", default=None, choices=list(LAYERS), help="only this derived layer")
    p.add_argument(
        "--history", action="store_true", help="show full update chains with source messages"
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    add_home(p)
    p.set_defaults(func=run)


def _day(ts) -> str:
    return f"{ts:%Y-%m-%d %H:%M}" if ts is not None else "now"


def run(args: argparse.Namespace) -> int:
    skip_pandas_probe()
    with home_of(args).open(args.group) as store:
        check_speaker(store, args.owner, allow_group=True)  # lists the roster
        selected = chains(store, args.owner, args.layer)
        msgs = {m["msg_id"]: m for m in store.messages().to_pylist()}
    if not args.history:
        selected = [[c[-1]] for c in selected]
    if args.json:
        rows = []
        for i, chain in enumerate(selected):
            for rec in chain:
                row = dict(rec)
                if args.history:
                    row["chain"] = i
                    row["sources"] = [
                        {k: msgs[m][k] for k in ("msg_id", "speaker", "ts", "text")}
                        for m in rec["from_ids"]
                        if m in msgs
                    ]
                rows.append(row)
        print_json(rows)
        return 0
    if not selected:
        print(
            "no derived records"
            + (" (run `speakerflow ingest` with a --writer)" if not args.owner else "")
        )
        return 0
    if args.history:
        selected = sorted(selected, key=lambda c: (-len(c), c[-1]["write_order"]))
    for chain in selected:
        head = chain[-1]
        who = (
            head["owner"]
            if head["owner"] == head["source"]
            else f"{head['owner']} (by {head['source']})"
        )
        print(
            f"[{head['layer']}] {who} {head['utype']}"
            + (f": {len(chain)} state(s)" if args.history else "")
        )
        for rec in chain:
            state = (
                "current" if rec["superseded_by"] is None else f"until {_day(rec['invalid_at'])}"
            )
            print(f"  {rec['entry_id']} {_day(rec['valid_at'])} ({state}): {rec['content']}")
            if args.history:
                for mid in rec["from_ids"]:
                    m = msgs.get(mid)
                    if m is not None:
                        print(f"      <- [{mid}] {_day(m['ts'])} {m['speaker']}: {m['text']}")
    return 0

"""``speakerflow inject GROUP --event JSON``: print the working context passive injection builds."""

from __future__ import annotations

import argparse

from .common import add_home, home_of, loading, print_json, skip_pandas_probe


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inject", help="build the working context for one event (passive injection)")
    p.add_argument("group", help="group id")
    p.add_argument(
        "--event",
        required=True,
        help='event JSON: {"content": "...", "ts"?: ISO time, "source"?: user}',
    )
    p.add_argument("--user", default=None, help="the user whose overlay applies (private items)")
    p.add_argument("--budget", type=int, default=600, help="token budget of the whole context")
    p.add_argument(
        "--hops", type=int, default=2, help="graph hops around the event's entities (default 2)"
    )
    p.add_argument(
        "--domain",
        default=None,
        metavar="PACK",
        help="read the request with this domain pack (default: the one the group was ingested "
        "with, else trading)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_home(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    skip_pandas_probe()
    from speakerflow.memory import inject_context
    from speakerflow.ops.knowledge.domain.load import load_pack
    from speakerflow.ops.knowledge.load import load_knowledge
    from speakerflow.ops.knowledge.reader import intent_classifier

    pack = load_pack(args.domain) if args.domain else None
    with home_of(args).open(args.group, writable=False) as store:
        knowledge = load_knowledge(store, pack=pack)
        with loading("the injector's intent classifier (MiniLM)"):
            intent_classifier(lex=knowledge[1].lexicon).best("warm up")
        wc = inject_context(knowledge, args.event, args.user, budget=args.budget, hops=args.hops)
    if args.json:
        print_json(wc.as_dict())
    else:
        print(wc.text())
        print(f"-- {wc.tokens} tokens (budget {args.budget}), {wc.counts}")
    return 0

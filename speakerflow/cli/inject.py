"""``speakerflow inject GROUP --event JSON``: print the working context passive injection builds."""
from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from .common import add_home, home_of, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inject", help="build the working context for one event (passive injection)")
    p.add_argument("group")
    p.add_argument("--event", required=True, help='event JSON: {"content": "...", "ts"?: ISO time, "source"?: user}')
    p.add_argument("--user", default=None, help="the user whose overlay applies (private items)")
    p.add_argument("--budget", type=int, default=600, help="token budget of the whole context")
    p.add_argument("--hops", type=int, default=2)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_home(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from speakerflow.ops.inject import InjectConfig, PassiveInjector
    from speakerflow.ops.knowledge import load_knowledge

    try:
        ev = json.loads(args.event)
        text = ev["content"] if isinstance(ev, dict) else str(ev)
    except (ValueError, KeyError):
        raise SystemExit('--event must be JSON with a "content" field, e.g. {"content": "fees on XBT?"}') from None
    now = datetime.fromisoformat(ev["ts"]) if isinstance(ev, dict) and ev.get("ts") else datetime.now(UTC)
    now = now if now.tzinfo else now.replace(tzinfo=UTC)
    with home_of(args).open(args.group, writable=False) as store:
        fg, canon, det = load_knowledge(store)
        inj = PassiveInjector(fg, canon, det, config=InjectConfig(budget=args.budget, hops=args.hops, record_use=False))
        wc = inj.inject(text, now, args.user or (ev.get("source") if isinstance(ev, dict) else None))
    if args.json:
        print_json(wc.as_dict())
    else:
        print(wc.text())
        print(f"-- {wc.tokens} tokens (budget {args.budget}), {wc.counts}")
    return 0

"""``speakerflow maintain [--group G]``: build the entity graph and run one maintenance tick."""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from typing import Any

from .common import add_home, add_json, emit, home_of, print_text, skip_pandas_probe


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "maintain", help="entity path + maintenance tick (sweep, checks, review queue)"
    )
    p.add_argument("--group", default=None, help="one group (default: every group)")
    p.add_argument("--seed", type=int, default=0, help="seed of the probe sampler")
    p.add_argument(
        "--now", default=None, help="ISO time the tick treats as now (default: the clock)"
    )
    p.add_argument(
        "--review",
        action="append",
        default=[],
        metavar="EDGE=approve|reject",
        help="apply a human review to a fact (repeatable; needs --group)",
    )
    p.add_argument(
        "--backend", default="rules", help="extraction backend: rules or a chat backend kind"
    )
    p.add_argument(
        "--domain",
        default=None,
        metavar="PACK",
        help="domain pack to read the group(s) with from now on (recorded, as ingest --domain "
        "does; default: each group's own, else trading)",
    )
    add_json(p)
    add_home(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    skip_pandas_probe()
    from speakerflow.ops.knowledge.domain.load import load_pack, record_pack
    from speakerflow.ops.knowledge.maintenance import apply_review

    pack = load_pack(args.domain) if args.domain else None

    now = datetime.fromisoformat(args.now) if args.now else None
    now = now.replace(tzinfo=UTC) if now is not None and now.tzinfo is None else now
    home = home_of(args)
    out: dict[str, Any] = {}
    if args.review:
        if not args.group:
            raise SystemExit("--review needs --group")
        with home.open(args.group, writable=True) as store:
            out["reviews"] = [
                apply_review(store, edge, decision, now=now)
                for edge, decision in (r.split("=", 1) for r in args.review)
            ]
        emit(out, args.json)
        return 0
    for gid in [args.group] if args.group else home.groups():
        with home.open(gid, writable=True) as store:
            if pack is not None:
                record_pack(store, pack)
            out[gid] = _maintain(store, args, now)
    if args.json:
        emit(out, True)
        return 0
    for gid, rep in out.items():
        print(f"group {gid}:")
        print_text(rep, prefix="  ")
    return 0


def _maintain(store: Any, args: argparse.Namespace, now: datetime | None) -> dict[str, Any]:
    """:func:`maintain_group` on one group, saying on stderr how many rows are new, how long
    it took and whether it had to load MiniLM (the rules reader's classifier loads it, once
    per process, the first time a new row needs it: about a second)."""
    from speakerflow.ops.text.vectors import MODELS
    from speakerflow.pipelines.entity_path import maintain_group, pending_events

    print(f"maintain {store.group_id}: {pending_events(store)} new row(s) ...", file=sys.stderr)
    models, start = len(MODELS), time.perf_counter()
    report = maintain_group(store, backend=args.backend, now=now, seed=args.seed)
    loaded = " (MiniLM loaded for the knowledge reader)" if len(MODELS) > models else ""
    took = time.perf_counter() - start
    print(f"maintain {store.group_id}: done in {took:.1f}s{loaded}", file=sys.stderr)
    return report

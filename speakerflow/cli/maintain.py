"""``speakerflow maintain [--group G]``: build the entity graph and run one maintenance tick."""

from __future__ import annotations

import argparse
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
    from speakerflow.pipelines.entity_path import maintain_group

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
            out[gid] = maintain_group(store, backend=args.backend, now=now, seed=args.seed)
    if args.json:
        emit(out, True)
        return 0
    for gid, rep in out.items():
        print(f"group {gid}:")
        print_text(rep, prefix="  ")
    return 0

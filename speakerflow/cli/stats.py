"""``speakerflow stats [GROUP] [--json]``: counts per group and totals."""

from __future__ import annotations

import argparse

from .common import add_home, home_of, print_json, skip_pandas_probe


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stats", help="message, speaker, session and record counts")
    p.add_argument("group", nargs="?", default=None, help="one group (default: every group)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_home(p)
    p.set_defaults(func=run)


def collect(home, group: str | None = None) -> dict:
    groups = [group] if group else home.groups()
    by_group = {}
    for gid in groups:
        with home.open(gid) as store:
            by_group[gid] = {**store.stats(), "roster": store.roster()}
    keys = ("messages", "speakers", "sessions", "records")
    return {
        "groups": len(by_group),
        **{k: sum(g[k] for g in by_group.values()) for k in keys},
        "by_group": by_group,
    }


def run(args: argparse.Namespace) -> int:
    skip_pandas_probe()
    report = collect(home_of(args), args.group)
    if args.json:
        print_json(report)
        return 0
    print(
        f"{report['groups']} group(s): {report['messages']} messages, {report['speakers']} "
        "speakers, "
        f"{report['sessions']} sessions, {report['records']} records"
    )
    for gid, g in report["by_group"].items():
        print(
            f"  {gid}: {g['messages']} messages, {g['sessions']} sessions, {g['records']} records; "
            f"roster: {', '.join(g['roster'])}"
        )
    return 0

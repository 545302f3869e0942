"""``speakerflow forget GROUP (--speaker NAME | --message ID... | --all) [--dry-run]``.

Removes the messages from every copy of the group (Parquet, Kuzu, Tantivy, embedding
cache), cascades to derived records and facts, drops the person from the roster and alias
lists, rebuilds the wiki pages and appends an audit line without content
(``<group>/forget_log.jsonl``). See :mod:`speakerflow.graphs.forget`.
"""

from __future__ import annotations

import argparse

from .common import add_home, home_of, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "forget", help="remove a speaker's / some messages / all messages from a group, everywhere"
    )
    p.add_argument("group", help="group id")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--speaker",
        default=None,
        help="forget everything this person said (and the records they are the source of)",
    )
    which.add_argument(
        "--message", nargs="+", default=None, metavar="ID", help="forget these message ids"
    )
    which.add_argument("--all", action="store_true", help="forget every message of the group")
    p.add_argument(
        "--dry-run", action="store_true", help="print what would be removed; change nothing"
    )
    p.add_argument(
        "--wiki",
        action="append",
        default=[],
        metavar="DIR",
        help="also rebuild the wiki pages in this folder (<home>/wiki/GROUP is rebuilt when "
        "present)",
    )
    p.add_argument(
        "--writer",
        default="rules",
        help="Writer that re-derives remaining messages which lost a record (default rules; none: "
        "next ingest)",
    )
    p.add_argument(
        "--rederive",
        default="auto",
        choices=["auto", "all", "affected"],
        help="all: delete every record and write the group's records again from what remains "
        "(as if the messages had never been there); affected: only records resting on, "
        "sourced by or quoting forgotten messages; auto (default): all when --writer rules "
        "wrote the whole group, else affected",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_home(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from speakerflow.pipelines.forget import forget_group

    with home_of(args).open(args.group, writable=not args.dry_run) as store:
        report = forget_group(
            store,
            speaker=args.speaker,
            message_ids=args.message,
            everything=args.all,
            dry_run=args.dry_run,
            wiki_dirs=args.wiki,
            writer=args.writer,
            rederive=args.rederive,
        )
    out = {
        **report.as_dict(),
        "wiki_rebuilt": getattr(report, "wiki_rebuilt", []),
        "records_rederived": getattr(report, "records_rederived", 0),
        "rewritten": getattr(report, "rewritten", False),
    }
    if args.json:
        print_json(out)
        return 0
    verb = "would forget" if args.dry_run else "forgot"
    print(
        f"{verb} {report.messages} message(s) of group {args.group!r}: {report.records_deleted} "
        "record(s) deleted, "
        f"{report.records_trimmed} trimmed, {report.facts_deleted} fact(s) deleted, "
        f"{report.facts_trimmed} trimmed, "
        f"{report.entities_deleted} entit(y/ies) deleted; roster -{len(report.roster_removed)}"
    )
    if args.dry_run and out["rewritten"]:
        print(
            "  then every record is written again from the remaining messages (--rederive "
            f"{args.rederive}), so the group's records end as if {report.messages} message(s) "
            "had never been said"
        )
    if not args.dry_run:
        print(
            f"  {report.parts_rewritten} Parquet part(s) rewritten, {report.embeddings_removed} "
            "cached embedding(s) "
            f"removed, {report.log_lines_removed} log line(s) dropped, {out['records_rederived']} "
            "record(s) "
            f"{'written again from the remaining messages' if out['rewritten'] else 're-derived'}"
            f", wiki rebuilt: {out['wiki_rebuilt'] or 'none'}"
        )
    return 0

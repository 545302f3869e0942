"""``speakerflow wiki GROUP [--out DIR]``: write the wiki audit surface of a group (by default
under ``<home>/wiki/<group>/``, where the Dagster ``wiki_pages`` asset writes it)."""

from __future__ import annotations

import argparse

from .common import add_home, add_json, home_of, print_json, skip_pandas_probe


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("wiki", help="write Markdown audit pages (entities, people, group)")
    p.add_argument("group", help="group id")
    p.add_argument(
        "--out", default=None, help="folder for the pages (default: <home>/wiki/<group>/)"
    )
    add_json(p, "the written pages")
    add_home(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    skip_pandas_probe()
    from speakerflow.ops.knowledge.wiki import write_wiki
    from speakerflow.pipelines.forget import default_wiki_dir

    with home_of(args).open(args.group, writable=False) as store:
        out = args.out or str(default_wiki_dir(store))
        paths = write_wiki(store, out)
    if args.json:
        print_json({"group": args.group, "out": out, "pages": [str(p) for p in paths]})
        return 0
    print(f"wrote {len(paths)} page(s) under {out}")
    return 0

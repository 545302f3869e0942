"""``speakerflow ingest PATH --format ...``: load a file (or folder) into per-group stores."""
from __future__ import annotations

import argparse
import warnings

from tqdm import tqdm

from speakerflow.ops.loaders import FORMATS, load

from .common import add_home, home_of


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="ingest messages or events into per-group stores")
    p.add_argument("path", help="a file, or a folder of files")
    p.add_argument("--format", required=True, choices=["jsonl", "locomo", "socialmem", "events"])
    p.add_argument("--group", default=None, help="group id (JSONL without group_id; or override)")
    add_home(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    FORMATS  # noqa: B018 - formats register on import of the loaders
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load(args.path, args.format, group=args.group)  # everything validated before any write
    for w in caught:
        print(f"note: {w.message}")
    home = home_of(args)
    total_added = total_skipped = 0
    for gid, table in tqdm(loaded, desc="ingest", unit="group", disable=len(loaded) < 2):
        with home.open(gid, writable=True) as store:
            result = store.append_messages(table)
        total_added += result.added
        total_skipped += result.skipped
    print(f"ingested {total_added} new message(s) into {len(loaded)} group(s) "
          f"({total_skipped} already stored) under {home.root}")
    return 0

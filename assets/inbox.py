"""The inbox: a folder where message files are dropped, and what the sensor reads of it.

Layout (``<home>/inbox`` by default)::

    inbox/team-a.jsonl               speakerflow JSONL; lines without group_id -> group "team-a"
    inbox/locomo/locomo10.json       a sub-folder named after a format holds files of that format
    inbox/socialmem/social_grp_x.json
    inbox/events/trader.jsonl

Pure functions over paths; the sensor and ``raw_messages`` call them.
"""

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from speakerflow.graphs.store import GROUP_ID
from speakerflow.ops.loaders import LoadError, load
from speakerflow.pipelines import constants as C
from speakerflow.schemas import MESSAGE_SCHEMA


@dataclass(frozen=True)
class InboxFile:
    """A file in the inbox, its format, and the group it defaults to (JSONL without ids)."""

    path: Path
    fmt: str
    default_group: str | None = None

    @property
    def stamp(self) -> str:
        """Changes whenever the file is rewritten: ``<mtime_ns>-<size>``."""
        st = self.path.stat()
        return f"{st.st_mtime_ns}-{st.st_size}"


def inbox_files(inbox: Path) -> list[InboxFile]:
    """The message files of ``inbox`` (sorted), with their formats."""
    inbox = Path(inbox)
    if not inbox.is_dir():
        return []
    out = []
    for path in sorted(inbox.rglob("*")):
        if not path.is_file() or path.suffix not in C.INBOX_SUFFIXES or path.name.startswith("."):
            continue
        rel = path.relative_to(inbox).parts
        fmt = rel[0] if len(rel) > 1 and rel[0] in C.INBOX_FORMATS else "jsonl"
        out.append(
            InboxFile(path, fmt, _default_group(path) if fmt in ("jsonl", "events") else None)
        )
    return out


def _default_group(path: Path) -> str | None:
    """The file stem as group id when the file's first object carries no ``group_id``."""
    try:
        with path.open(encoding="utf-8") as fh:
            first = next((line for line in fh if line.strip()), "")
        obj = json.loads(first) if first else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # the loader will name the exact problem
    if isinstance(obj, dict) and obj.get("group_id"):
        return None
    return path.stem if GROUP_ID.match(path.stem) else None


def load_file(item: InboxFile) -> list[tuple[str, pa.Table]]:
    """(group id, messages) pairs of one inbox file; raises :class:`LoadError` on bad input."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load(item.path, item.fmt, group=item.default_group)


def groups_of(item: InboxFile) -> list[str]:
    """The group ids a file holds (loads and validates the file)."""
    return [g for g, _ in load_file(item)]


def messages_for_group(group: str, sources: list[InboxFile]) -> tuple[pa.Table, list[str]]:
    """All messages of ``group`` found in ``sources``, and the files they came from.

    Every file is validated whole; a broken file raises :class:`LoadError` naming file,
    line and field (nothing is written by this function).
    """
    tables, used = [], []
    for item in sources:
        for gid, table in load_file(item):
            if gid == group:
                tables.append(table)
                used.append(str(item.path))
    if not tables:
        return MESSAGE_SCHEMA.empty_table(), used
    return pa.concat_tables(tables, promote_options="default"), used


def sources_from(path: str, fmt: str, inbox: Path) -> list[InboxFile]:
    """The files to read: ``path`` (file or folder) as ``fmt``, or the whole inbox when empty."""
    if not path:
        return inbox_files(inbox)
    p = Path(path)
    if not p.exists():
        raise LoadError(
            f"{p}: no such file or folder (set raw_messages config 'path' to a message file)"
        )
    files = sorted(q for q in p.iterdir() if q.suffix in C.INBOX_SUFFIXES) if p.is_dir() else [p]
    chosen = fmt or "jsonl"
    return [
        InboxFile(f, chosen, _default_group(f) if chosen in ("jsonl", "events") else None)
        for f in files
    ]

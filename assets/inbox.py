"""The inbox: a folder where message files are dropped, and what the sensor reads of it.

Layout (``<home>/inbox`` by default)::

    inbox/team-a.jsonl               speakerflow JSONL; lines without group_id -> group "team-a"
    inbox/social_grp_y.json          at the top: the format told from the first record's keys
    inbox/locomo/locomo10.json       a sub-folder named after a format holds files of that format
    inbox/socialmem/social_grp_x.json
    inbox/events/trader.jsonl

Pure functions over paths; the sensor and ``raw_messages`` call them. ``raw_messages``
looks groups up in an index of the inbox (``inbox/.groups-index.json``: each file's stamp
and the groups it holds), so a run reads only the files of its own groups, not the whole
inbox (a backfill of N groups would otherwise load N files N times).
"""

import json
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from speakerflow.graphs.tables import GROUP_ID
from speakerflow.ops.loaders import LoadError, detect_format, load
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
        fmt = rel[0] if len(rel) > 1 and rel[0] in C.INBOX_FORMATS else _detected(path)
        out.append(
            InboxFile(path, fmt, _default_group(path) if fmt in ("jsonl", "events") else None)
        )
    return out


def _detected(path: Path) -> str:
    """The format of a file at the top of the inbox (:func:`detect_format`); JSONL when it
    cannot be told, so that loading it names the problem with line and field."""
    try:
        return detect_format(path)
    except (LoadError, OSError):
        return "jsonl"


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


#: The index of the inbox, hidden from :func:`inbox_files` (leading dot).
INDEX_NAME = ".groups-index.json"


def _read_index(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def group_index(sources: list[InboxFile], index_path: Path | None) -> dict[str, list[str]]:
    """``{file path: [group ids]}`` for ``sources``, from the index at ``index_path``.

    A file whose stamp (mtime, size) matches its entry is not opened; a new or rewritten
    file is loaded once (validated whole: a broken file raises :class:`LoadError` and is not
    indexed) and its entry written back (atomically: concurrent runs may share the index).
    ``index_path`` None: every file is loaded (no index kept).
    """
    cached = _read_index(index_path) if index_path is not None else {}
    out: dict[str, list[str]] = {}
    changed = False
    for item in sources:
        key, stamp = str(item.path), item.stamp
        entry = cached.get(key)
        if isinstance(entry, dict) and entry.get("stamp") == stamp and entry.get("fmt") == item.fmt:
            out[key] = list(entry.get("groups") or [])
            continue
        out[key] = groups_of(item)
        cached[key] = {"stamp": stamp, "fmt": item.fmt, "groups": out[key]}
        changed = True
    if changed and index_path is not None:
        live = {str(item.path) for item in sources}
        fresh = {k: v for k, v in cached.items() if k in live or Path(k).exists()}
        tmp = index_path.with_name(f"{index_path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(fresh, sort_keys=True), encoding="utf-8")
        tmp.replace(index_path)
    return out


def messages_for_groups(
    groups: Iterable[str], sources: list[InboxFile], index_path: Path | None = None
) -> dict[str, tuple[pa.Table, list[str]]]:
    """``{group: (messages, files they came from)}`` for each of ``groups``.

    Only the files that hold one of ``groups`` (by :func:`group_index`) are read, each
    once, however many of the groups it holds.
    """
    wanted = list(dict.fromkeys(groups))
    index = group_index(sources, index_path)
    tables: dict[str, list[pa.Table]] = {g: [] for g in wanted}
    used: dict[str, list[str]] = {g: [] for g in wanted}
    for item in sources:
        if not set(index.get(str(item.path), ())) & tables.keys():
            continue
        for gid, table in load_file(item):
            if gid in tables:
                tables[gid].append(table)
                used[gid].append(str(item.path))
    return {
        g: (
            pa.concat_tables(tables[g], promote_options="default")
            if tables[g]
            else MESSAGE_SCHEMA.empty_table(),
            used[g],
        )
        for g in wanted
    }


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

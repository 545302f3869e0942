"""Telling a file's format and loading it: the formats register themselves in
:data:`~speakerflow.ops.loaders.common.FORMATS` when their modules are imported here."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

from speakerflow.ops.loaders import events, jsonl, locomo, socialmem  # noqa: F401 - the formats
from speakerflow.ops.loaders.common import FORMATS, Loaded, LoadError, WrongFormatError

#: bytes of a file :func:`detect_format` reads
DETECT_BYTES = 1 << 16
_FORMAT_HINT = "give --format jsonl, locomo, socialmem or events (docs/formats.md)"


def _format_of_record(obj: Any) -> str | None:
    """The format whose first record ``obj`` is, from its keys (``None``: none)."""
    if isinstance(obj, list):
        first = obj[0] if obj else None
        return "locomo" if isinstance(first, dict) and "conversation" in first else None
    if not isinstance(obj, dict):
        return None
    keys = set(obj)
    if {"event_id", "content"} <= keys:
        return "events"
    if {"speaker", "text"} <= keys:
        return "jsonl"
    if "sessions" in keys:
        return "socialmem"
    return None


def _detect_file(path: Path) -> str:
    with path.open("rb") as fh:
        head = fh.read(DETECT_BYTES)
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if not text:
        raise LoadError(f"{path}: empty file; {_FORMAT_HINT}")
    try:  # a JSONL record, or a whole JSON document on one line
        obj = json.loads(text.split("\n", 1)[0])
        keys = set(obj) if isinstance(obj, dict) else set()
        found = _format_of_record(obj)
    except json.JSONDecodeError:  # a JSON document over several lines: the keys it opens with
        keys = set(re.findall(r'"([A-Za-z_]+)"\s*:', text)) if text[0] in "[{" else set()
        if text[0] == "[" and "conversation" in keys:
            found = "locomo"
        elif text[0] == "{" and "sessions" in keys:
            found = "socialmem"
        else:
            found = None
    if found:
        return found
    if {"transitions", "window_size"} & keys:
        raise WrongFormatError(f"{path}: a Writer trajectory, not messages")
    raise LoadError(f"{path}: cannot tell the format from its first record; {_FORMAT_HINT}")


def detect_format(path: str | Path) -> str:
    """The format of a file, or of the files of a folder, told from its structure: the keys
    of its first record (``event_id`` + ``content``: events; ``speaker`` + ``text``: JSONL
    messages; a list of objects with ``conversation``: LoCoMo; an object with ``sessions``:
    a SocialMemBench network). Reads at most :data:`DETECT_BYTES` of each file. A folder's
    Writer trajectories are skipped, as :func:`load` skips them; files of two formats in one
    folder, or a file whose format cannot be told, raise :class:`LoadError` asking for
    ``--format``; a trajectory file on its own raises :class:`WrongFormatError`."""
    path = Path(path)
    if not path.exists():
        raise LoadError(f"{path}: no such file or folder")
    if not path.is_dir():
        return _detect_file(path)
    found: dict[str, str] = {}
    for f in sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl")):
        try:
            found.setdefault(_detect_file(f), f.name)
        except WrongFormatError:
            continue
    if not found:
        raise LoadError(f"{path}: no message file whose format can be told; {_FORMAT_HINT}")
    if len(found) > 1:
        seen = ", ".join(f"{fmt} ({name})" for fmt, name in sorted(found.items()))
        raise LoadError(f"{path}: holds files of several formats: {seen}; {_FORMAT_HINT}")
    return next(iter(found))


def load(path: str | Path, fmt: str, group: str | None = None) -> Loaded:
    """Load ``path`` (a file, or a folder of files) as ``fmt``; returns (group id, messages) pairs.

    ``fmt="auto"`` takes the format :func:`detect_format` tells. ``group`` names the group
    for formats that carry none (JSONL) or overrides it when the file holds a single group.
    """
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt not in FORMATS:
        raise LoadError(f"unknown format {fmt!r}; choose one of {sorted(FORMATS)}")
    path = Path(path)
    if not path.exists():
        raise LoadError(f"{path}: no such file or folder")
    files = (
        sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl"))
        if path.is_dir()
        else [path]
    )
    out: Loaded = []
    for f in files:
        try:
            out.extend(FORMATS[fmt](f, group=group))
        except WrongFormatError as exc:
            if not path.is_dir():
                raise
            warnings.warn(f"skipped: {exc}", stacklevel=2)
    if group is not None and len({g for g, _ in out}) > 1:
        raise LoadError(f"{path}: --group {group!r} given but the input holds several groups")
    return out

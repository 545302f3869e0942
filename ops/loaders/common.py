"""Shared loader plumbing: errors that name the place, and format dispatch."""
from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from speakerflow.schemas import Message, RecordValidationError, to_table, validate_rows


class LoadError(ValueError):
    """A file could not be loaded; the message names the file, the line/record and the field."""


class WrongFormatError(LoadError):
    """The file is well-formed but holds something else (skipped when loading a folder)."""


def read_json(path: Path) -> Any:
    """Parse a JSON file, turning syntax errors into :class:`LoadError` with line and column."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise LoadError(f"{path}: line {exc.lineno}, column {exc.colno}: invalid JSON ({exc.msg}); "
                        "is the file truncated?") from None
    except UnicodeDecodeError as exc:
        raise LoadError(f"{path}: byte {exc.start}: not UTF-8 text") from None


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of a JSONL file."""
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LoadError(f"{path}: line {lineno}, column {exc.colno}: invalid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise LoadError(f"{path}: line {lineno}: expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj


def field(obj: dict[str, Any], name: str, where: str, kind: type | tuple[type, ...] = str) -> Any:
    """``obj[name]``, or a :class:`LoadError` naming ``where`` and the field."""
    if name not in obj:
        raise LoadError(f"{where}: field '{name}' is missing")
    value = obj[name]
    if not isinstance(value, kind):
        raise LoadError(f"{where}: field '{name}' should be {getattr(kind, '__name__', kind)}, "
                        f"got {type(value).__name__}")
    return value


def to_message_table(rows: list[dict[str, Any]], where: str, row_names: list[int] | None = None) -> pa.Table:
    """Validate rows as :class:`Message` and return an Arrow table; errors name row and field."""
    try:
        msgs = validate_rows(rows, Message, where=where, row_numbers=row_names)
    except RecordValidationError as exc:
        raise LoadError(str(exc)) from None
    return to_table(msgs, Message)


Loaded = list[tuple[str, pa.Table]]
FORMATS: dict[str, Callable[..., Loaded]] = {}


def loader(name: str) -> Callable[[Callable[..., Loaded]], Callable[..., Loaded]]:
    def deco(fn: Callable[..., Loaded]) -> Callable[..., Loaded]:
        FORMATS[name] = fn
        return fn

    return deco


def load(path: str | Path, fmt: str, group: str | None = None) -> Loaded:
    """Load ``path`` (a file, or a folder of files) as ``fmt``; returns (group id, messages) pairs.

    ``group`` names the group for formats that carry none (JSONL) or overrides it when the
    file holds a single group.
    """
    from . import events, jsonl, locomo, socialmem  # noqa: F401 - register formats

    if fmt not in FORMATS:
        raise LoadError(f"unknown format {fmt!r}; choose one of {sorted(FORMATS)}")
    path = Path(path)
    if not path.exists():
        raise LoadError(f"{path}: no such file or folder")
    files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl")) if path.is_dir() else [path]
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

"""Shared loader plumbing: errors that name the place, and format dispatch."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from speakerflow.schemas import Message, RecordValidationError, to_table, validate_rows


class LoadError(ValueError):
    """A file could not be loaded; the message names the file, the line/record and the field."""


class WrongFormatError(LoadError):
    """The file is well-formed but holds something else (skipped when loading a folder)."""


#: Longest message text accepted (characters); longer input is refused, not truncated.
MAX_TEXT = 1_000_000
#: Longest id / speaker / session name accepted (characters).
MAX_NAME = 512
#: Earliest and latest message time accepted (UTC).
TS_MIN, TS_MAX = datetime(1900, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC)


def _surrogate_path(obj: Any, path: str = "") -> str | None:
    """Where in ``obj`` a string holds an undecodable byte (decoded with ``surrogateescape``)."""
    if isinstance(obj, str):
        return path if any("\udc80" <= c <= "\udcff" for c in obj) else None
    if isinstance(obj, dict):
        for k, v in obj.items():
            sub = _surrogate_path(k, path) or _surrogate_path(v, f"{path}.{k}" if path else str(k))
            if sub is not None:
                return sub
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            sub = _surrogate_path(v, f"{path}[{i}]")
            if sub is not None:
                return sub
    return None


def _loads(text: str, path: Path, lineno: int | None = None) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        line = lineno if lineno is not None else exc.lineno
        raise LoadError(
            f"{path}: line {line}, column {exc.colno}: invalid JSON ({exc.msg})"
            + ("" if lineno is not None else "; is the file truncated?")
        ) from None
    except RecursionError:
        line = lineno if lineno is not None else _deep_line(text)
        raise LoadError(f"{path}: line {line}: JSON nested too deeply to read (refused)") from None


def _deep_line(text: str, limit: int = 500) -> int:
    """The line where ``text`` first nests deeper than ``limit`` brackets (outside strings)."""
    depth, in_str, esc, line = 0, False, False, 1
    for ch in text:
        if ch == "\n":
            line += 1
        if in_str:
            esc = not esc and ch == "\\"
            if ch == '"' and not esc:
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return line
        elif ch in "]}":
            depth -= 1
    return line


def _decode(raw: bytes, path: Path, line_offset: int = 0) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = line_offset + raw[: exc.start].count(b"\n") + 1
        where = f"{path}: line {line}"
        try:
            obj = json.loads(raw.decode("utf-8", errors="surrogateescape"))
            at = _surrogate_path(obj)
        except (json.JSONDecodeError, RecursionError):
            at = None
        field_txt = f"field '{at}' " if at else ""
        raise LoadError(
            f"{where}: {field_txt}is not UTF-8 text (byte 0x{raw[exc.start]:02x}); "
            "re-encode the file as UTF-8"
        ) from None


def read_json(path: Path) -> Any:
    """Parse a JSON file, turning syntax errors into :class:`LoadError` with line and column."""
    return _loads(_decode(path.read_bytes(), path), path)


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of a JSONL file."""
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            obj = _loads(_decode(raw, path, lineno - 1), path, lineno)
            if not isinstance(obj, dict):
                raise LoadError(
                    f"{path}: line {lineno}: expected a JSON object, got {type(obj).__name__}"
                )
            yield lineno, obj


def _parse_ts(value: Any, where: str, require_zone: bool) -> Any:
    if isinstance(value, datetime):
        ts = value
    elif isinstance(value, str):
        try:
            ts = datetime.fromisoformat(value.strip())
        except ValueError:
            raise LoadError(
                f"{where}: field 'ts' is {value[:60]!r}, not an ISO-8601 time "
                "(e.g. 2026-05-01T10:00:00Z)"
            ) from None
    else:
        raise LoadError(
            f"{where}: field 'ts' should be an ISO-8601 text time (e.g. 2026-05-01T10:00:00Z), "
            f"got {type(value).__name__}"
        )
    if ts.tzinfo is None:
        if require_zone:
            raise LoadError(
                f"{where}: field 'ts' is {str(value)[:60]!r} without a time zone; "
                "write Z or +00:00 (times are stored in UTC)"
            )
        ts = ts.replace(tzinfo=UTC)
    if not TS_MIN <= ts <= TS_MAX:
        raise LoadError(
            f"{where}: field 'ts' is {ts.isoformat()}, outside {TS_MIN.year}-{TS_MAX.year}"
        )
    return ts


def check_rows(
    rows: list[dict[str, Any]],
    where: str,
    row_names: Sequence[int | str] | None = None,
    unit: str = "line",
    group: str | None = None,
    require_zone: bool = False,
) -> list[dict[str, Any]]:
    """Refuse hostile rows before schema validation; returns the rows (``ts`` parsed).

    Checks, naming the row and field: group id usable as a folder name (and equal to
    ``group`` when the caller fixed one: a row claiming another group is refused);
    ids, speakers and sessions are text without NUL characters and at most
    :data:`MAX_NAME` long; text has no NUL and at most :data:`MAX_TEXT` characters; ``ts``
    parses, carries a zone when ``require_zone``, and lies in 1900-2200; a ``msg_id`` seen
    twice must carry the same text (a repeat with other text is refused).
    """
    from speakerflow.graphs import StoreError, check_group_id

    seen: dict[str, tuple[int | str, Any]] = {}
    for i, row in enumerate(rows):
        at = f"{where}: {unit} {row_names[i] if row_names is not None else i}"
        gid = row.get("group_id")
        if group is not None and gid != group:
            raise LoadError(
                f"{at}: field 'group_id' is {str(gid)[:60]!r} but the input is for group "
                f"{group!r}; "
                "an input may not write another group"
            )
        if isinstance(gid, str):
            try:
                check_group_id(gid)
            except StoreError as exc:
                raise LoadError(f"{at}: field 'group_id': {exc}") from None
        for name, limit in (
            ("msg_id", MAX_NAME),
            ("speaker", MAX_NAME),
            ("session_id", MAX_NAME),
            ("text", MAX_TEXT),
        ):
            value = row.get(name)
            if isinstance(value, str):
                if "\x00" in value:
                    raise LoadError(f"{at}: field '{name}' contains a NUL character (refused)")
                if len(value) > limit:
                    raise LoadError(
                        f"{at}: field '{name}' is {len(value):,} characters; the limit is {limit:,}"
                    )
                if name != "text" and not value.strip():
                    raise LoadError(f"{at}: field '{name}' is empty")
        if "ts" in row and row["ts"] is not None:
            row["ts"] = _parse_ts(row["ts"], at, require_zone)
        mid = row.get("msg_id")
        if isinstance(mid, str):
            prev = seen.get(mid)
            if prev is not None and prev[1] != row.get("text"):
                raise LoadError(
                    f"{at}: field 'msg_id' {mid[:60]!r} repeats {unit} {prev[0]} with different "
                    "text"
                )
            seen.setdefault(mid, (row_names[i] if row_names is not None else i, row.get("text")))
    return rows


def field(obj: dict[str, Any], name: str, where: str, kind: type | tuple[type, ...] = str) -> Any:
    """``obj[name]``, or a :class:`LoadError` naming ``where`` and the field."""
    if name not in obj:
        raise LoadError(f"{where}: field '{name}' is missing")
    value = obj[name]
    if not isinstance(value, kind):
        raise LoadError(
            f"{where}: field '{name}' should be {getattr(kind, '__name__', kind)}, "
            f"got {type(value).__name__}"
        )
    return value


def to_message_table(
    rows: list[dict[str, Any]],
    where: str,
    row_names: Sequence[int | str] | None = None,
    unit: str = "line",
    group: str | None = None,
    require_zone: bool = False,
) -> pa.Table:
    """Check rows (:func:`check_rows`), validate them as :class:`Message` and return an
    Arrow table; errors name the row and the field."""
    check_rows(rows, where, row_names, unit, group, require_zone)
    try:
        msgs = validate_rows(rows, Message, where=where, row_numbers=row_names)
    except RecordValidationError as exc:
        first = str(exc.errors[0]).strip()
        more = f" (and {len(exc.errors) - 1} more invalid field(s))" if len(exc.errors) > 1 else ""
        raise LoadError(f"{first}{more}") from None
    return to_table(msgs, Message)


Loaded = list[tuple[str, pa.Table]]
FORMATS: dict[str, Callable[..., Loaded]] = {}


def loader(name: str) -> Callable[[Callable[..., Loaded]], Callable[..., Loaded]]:
    def deco(fn: Callable[..., Loaded]) -> Callable[..., Loaded]:
        FORMATS[name] = fn
        return fn

    return deco

"""What every part of a group's store shares: the group id rule, the store's errors, the
order of the message track, and reading Arrow tables in and out of a group folder.

The store (:mod:`.store`), its append and recovery paths, the fact graph and forget all
build on this module; it imports none of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

GROUP_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
#: the order of :meth:`GroupStore.messages`
MESSAGE_ORDER = [("ts", "ascending"), ("session_id", "ascending"), ("turn", "ascending")]


class GroupBusyError(RuntimeError):
    """Another process is writing this group's store."""


class StoreError(ValueError):
    """Input that would corrupt the store (wrong group, bad columns); nothing was written."""


def check_group_id(group_id: str) -> str:
    """Return ``group_id`` if it is a safe folder name, else raise :class:`StoreError`."""
    if not isinstance(group_id, str) or not GROUP_ID.match(group_id):
        raise StoreError(
            f"invalid group id {group_id!r}: use letters, digits, '.', '_' or '-' (max 128), "
            "starting with a letter or digit"
        )
    return group_id


@dataclass
class IngestResult:
    """What one append did: rows ``added``, rows ``skipped`` as already stored."""

    group_id: str
    added: int = 0
    skipped: int = 0
    new_speakers: list[str] = field(default_factory=list)


def conform(table: pa.Table, schema: pa.Schema, what: str) -> pa.Table:
    """Select and cast ``table`` to ``schema``; missing nullable columns become nulls."""
    cols = []
    for f in schema:
        if f.name in table.column_names:
            try:
                cols.append(table[f.name].cast(f.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise StoreError(
                    f"{what}: column '{f.name}' cannot be read as {f.type}: {exc}"
                ) from None
        elif f.nullable:
            cols.append(pa.nulls(table.num_rows, f.type))
        else:
            raise StoreError(f"{what}: required column '{f.name}' is missing")
    out = pa.Table.from_arrays(cols, schema=schema)
    for f in schema:
        if not f.nullable and out[f.name].null_count:
            row = pc.index(pc.is_null(out[f.name]), True).as_py()
            raise StoreError(f"{what}: row {row}: field '{f.name}' is empty but required")
    return out


def message_texts(root: str | Path, ids: list[str]) -> dict[str, str]:
    """The text of each of the messages ``ids`` of the group stored at ``root``, read from
    its Parquet parts (the record of truth; the graph keeps no text): only the ``msg_id``
    and ``text`` columns, filtered by id. Ids not stored are left out."""
    folder = Path(root) / "messages"
    if not ids or not folder.exists():
        return {}
    wanted = pa.array(sorted(set(ids)), pa.string())
    out: dict[str, str] = {}
    for part in sorted(folder.glob("part-*.parquet")):
        t = pq.read_table(part, columns=["msg_id", "text"])
        t = t.filter(pc.is_in(t["msg_id"], value_set=wanted))
        out.update(zip(t["msg_id"].to_pylist(), t["text"].to_pylist(), strict=True))
    return out


def utc_columns(table: pa.Table) -> pa.Table:
    """``table`` with its time-zone-less timestamp columns read as UTC (what Kuzu returns)."""
    cols = []
    for f, col in zip(table.schema, table.columns, strict=True):
        if pa.types.is_timestamp(f.type) and f.type.tz is None:
            col = col.cast(pa.timestamp("us")).cast(pa.timestamp("us", tz="UTC"))
        cols.append(col)
    return pa.Table.from_arrays(cols, names=table.column_names)

"""Ingestion: message files -> ``raw_messages`` (validated table) -> ``verbatim_track`` (System 1).

``raw_messages`` reads the group's messages from the inbox (or a configured file) and
validates every row; ``verbatim_track`` appends them to the group's store (Kuzu, Tantivy,
Parquet; idempotent by ``msg_id``). ``group_catalog`` lists every group in the home.
"""

import time
from typing import Any

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from speakerflow.ops.loaders import LoadError
from speakerflow.pipelines.constants import GROUPS_PARTITION
from speakerflow.pipelines.resources import StoreResource

from .common import GROUPS, INGESTION, WRITES_STORE, md_table
from .inbox import messages_for_group, sources_from


class RawMessagesConfig(dg.Config):
    """Where a group's messages come from (the sensor fills these in for new files)."""

    path: str = Field(
        default="", description="A message file or folder; empty = every file in the inbox"
    )
    fmt: str = Field(
        default="", description="jsonl | locomo | socialmem | events; empty = from the inbox layout"
    )


def message_summary(table: pa.Table) -> dict[str, object]:
    """Counts and time span of a message table (for metadata)."""
    if table.num_rows == 0:
        return {"rows": 0, "speakers": 0, "sessions": 0}
    ts = table["ts"]
    return {
        "rows": table.num_rows,
        "speakers": len(pc.unique(table["speaker"])),
        "sessions": len(pc.unique(table["session_id"])),
        "first_ts": str(pc.min(ts).as_py()),
        "last_ts": str(pc.max(ts).as_py()),
    }


def _preview(table: pa.Table) -> dg.MetadataValue:
    cols = ["msg_id", "session_id", "ts", "speaker", "text"]
    return dg.MetadataValue.md(md_table(table.select(cols).slice(0, 8).to_pylist(), cols))


@dg.asset(
    partitions_def=GROUPS,
    group_name=INGESTION,
    kinds={"python", "arrow"},
    io_manager_key="table_io",
)
def raw_messages(
    context: dg.AssetExecutionContext, config: RawMessagesConfig, store: StoreResource
) -> pa.Table:
    """The group's messages read from the inbox (or a configured file), every row validated.

    A file that fails validation fails the step with its file, line and field; nothing is
    written anywhere by this asset.
    """
    group = context.partition_key
    start = time.perf_counter()
    try:
        sources = sources_from(config.path, config.fmt, store.inbox())
        table, used = messages_for_group(group, sources)
    except LoadError as exc:
        raise dg.Failure(f"raw_messages[{group}]: {exc}") from None
    if table.num_rows == 0:
        where = config.path or str(store.inbox())
        raise dg.Failure(
            f"raw_messages[{group}]: no messages of group {group!r} in {where}; drop a "
            f"file there (see docs/dagster.md 'Inbox') or set config 'path' and 'fmt'"
        )
    context.add_output_metadata(
        {
            **message_summary(table),
            "sources": dg.MetadataValue.json(used),
            "seconds": round(time.perf_counter() - start, 3),
            "preview": _preview(table),
        }
    )
    return table


@dg.asset(
    partitions_def=GROUPS,
    group_name=INGESTION,
    kinds={"kuzu", "tantivy", "parquet"},
    op_tags=WRITES_STORE,
)
def verbatim_track(
    context: dg.AssetExecutionContext, raw_messages: pa.Table, store: StoreResource
) -> dg.MaterializeResult:
    """System 1: the group's messages appended verbatim to its store (Kuzu, Tantivy, Parquet).

    Idempotent: messages whose ``msg_id`` is already stored are skipped, so re-running a
    partition adds nothing twice.
    """
    group = context.partition_key
    start = time.perf_counter()
    with store.open(group, write=True) as s:
        result = s.append_messages(raw_messages)
        stats = s.stats()
        roster = s.roster()
    return dg.MaterializeResult(
        metadata={
            "rows": stats["messages"],
            "added": result.added,
            "skipped": result.skipped,
            "speakers": stats["speakers"],
            "sessions": stats["sessions"],
            "new_speakers": dg.MetadataValue.json(result.new_speakers),
            "roster": dg.MetadataValue.md(", ".join(roster) or "_(empty)_"),
            "seconds": round(time.perf_counter() - start, 3),
        }
    )


@dg.asset(group_name=INGESTION, kinds={"python"})
def group_catalog(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    """Every group in the store home with its message, speaker, session and record counts."""
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for group in store.groups():
        try:
            with store.open(group) as s:
                rows.append({"group": group, **s.stats()})
        except Exception as exc:  # noqa: BLE001 - one unreadable group must not hide the others
            context.log.warning(f"group {group!r}: {exc}")
            rows.append({"group": group, "messages": None, "error": str(exc)[:200]})
    known = set(context.instance.get_dynamic_partitions(GROUPS_PARTITION))
    missing = [r["group"] for r in rows if r["group"] not in known]
    return dg.MaterializeResult(
        metadata={
            "groups": len(rows),
            "messages": sum(r.get("messages") or 0 for r in rows),
            "records": sum(r.get("records") or 0 for r in rows),
            "groups_without_partition": dg.MetadataValue.json(missing),
            "catalog": dg.MetadataValue.md(
                md_table(rows, ["group", "messages", "speakers", "sessions", "records"], limit=50)
            ),
            "seconds": round(time.perf_counter() - start, 3),
        }
    )

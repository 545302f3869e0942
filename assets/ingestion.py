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

from .common import (
    GROUPS,
    INGESTION,
    WRITES_STORE,
    backfill_policy,
    group_metadata,
    md_table,
    per_group,
    run_groups,
)
from .inbox import INDEX_NAME, messages_for_groups, sources_from


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
    backfill_policy=backfill_policy(),
)
def raw_messages(
    context: dg.AssetExecutionContext, config: RawMessagesConfig, store: StoreResource
) -> Any:  # pa.Table, or {group: pa.Table} in a range run
    """The group's messages read from the inbox (or a configured file), every row validated.

    A file that fails validation fails the step with its file, line and field; nothing is
    written anywhere by this asset. The inbox is looked up by group through its index
    (``assets/inbox.py``), so a run reads only its groups' files. A backfill run over a
    range of groups returns ``{group: table}`` (one Parquet file each).
    """
    groups = run_groups(context)
    start = time.perf_counter()
    try:
        sources = sources_from(config.path, config.fmt, store.inbox())
        index = None if config.path else store.inbox() / INDEX_NAME
        found = messages_for_groups(groups, sources, index)
    except LoadError as exc:
        raise dg.Failure(f"raw_messages[{','.join(groups)}]: {exc}") from None
    empty = [g for g in groups if found[g][0].num_rows == 0]
    if empty:
        where = config.path or str(store.inbox())
        raise dg.Failure(
            f"raw_messages[{','.join(empty)}]: no messages of group(s) {empty!r} in {where}; "
            f"drop a file there (see docs/dagster.md 'Inbox') or set config 'path' and 'fmt'"
        )
    seconds = round(time.perf_counter() - start, 3)
    for g in groups:
        table, used = found[g]
        group_metadata(
            context,
            g,
            {
                **message_summary(table),
                "sources": dg.MetadataValue.json(used),
                "seconds": seconds,
                "run_groups": len(groups),
                "preview": _preview(table),
            },
        )
    if len(groups) == 1:
        return found[groups[0]][0]
    return {g: found[g][0] for g in groups}


@dg.asset(
    partitions_def=GROUPS,
    group_name=INGESTION,
    kinds={"kuzu", "tantivy", "parquet"},
    op_tags=WRITES_STORE,
    backfill_policy=backfill_policy(),
)
def verbatim_track(
    context: dg.AssetExecutionContext,
    raw_messages: Any,  # pa.Table, or {group: pa.Table} in a range run
    store: StoreResource,
) -> dg.MaterializeResult:
    """System 1: the group's messages appended verbatim to its store (Kuzu, Tantivy, Parquet).

    Idempotent: messages whose ``msg_id`` is already stored are skipped, so re-running a
    partition adds nothing twice. A backfill run over several groups appends them one
    after the other, each under its own group's writer lock.
    """
    groups = run_groups(context)
    for group, table in per_group(raw_messages, groups).items():
        start = time.perf_counter()
        with store.open(group, write=True) as s:
            result = s.append_messages(table)
            stats = s.stats()
            roster = s.roster()
        group_metadata(
            context,
            group,
            {
                "rows": stats["messages"],
                "added": result.added,
                "skipped": result.skipped,
                "speakers": stats["speakers"],
                "sessions": stats["sessions"],
                "new_speakers": dg.MetadataValue.json(result.new_speakers),
                "roster": dg.MetadataValue.md(", ".join(roster) or "_(empty)_"),
                "seconds": round(time.perf_counter() - start, 3),
            },
        )
    return dg.MaterializeResult()


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

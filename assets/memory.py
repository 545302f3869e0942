"""System 2: the Writer over the verbatim track (``writer_actions``) and the derived records
it leaves in the store (``derived_memory``).

The Writer, Validate and Upsert run segment by segment inside ``writer_actions``: each
segment is validated against the heads the previous segment left, so they cannot be
split over separate steps. ``derived_memory`` is the resulting state, which the asset
checks (``assets/checks.py``) verify.
"""

import dataclasses
import json
import time
from collections import Counter
from typing import Any

import dagster as dg
import pyarrow as pa
from pydantic import Field

from speakerflow.pipelines import constants as C
from speakerflow.pipelines.resources import ChatModel, StoreResource

from .checks import check_specs, evaluate, group_state, range_check_events
from .common import (
    GROUPS,
    MEMORY,
    WRITES_STORE,
    backfill_policy,
    group_metadata,
    md_table,
    run_groups,
)

REJECTS_SCHEMA = pa.schema(
    [("reason", pa.string()), ("segment_id", pa.string()), ("action", pa.string())]
)


class WriterConfig(dg.Config):
    """How the Writer reads the track."""

    window: int = Field(default=C.WRITER_WINDOW, gt=0, description="Messages per writing segment")


def rejects_table(rejects: list[dict[str, Any]]) -> pa.Table:
    """The Writer's rejects as a table: reason, segment, and the refused action as JSON."""
    rows = []
    for r in rejects:
        rest = {k: v for k, v in r.items() if k not in ("reason", "segment_id")}
        rows.append(
            {
                "reason": str(r.get("reason", "")),
                "segment_id": r.get("segment_id"),
                "action": json.dumps(rest.get("action", rest), default=str, sort_keys=True),
            }
        )
    return pa.Table.from_pylist(rows, schema=REJECTS_SCHEMA)


def report_dict(report: Any) -> dict[str, Any]:
    """A WriteReport (dataclass or mapping) as a plain dict."""
    if dataclasses.is_dataclass(report) and not isinstance(report, type):
        return dataclasses.asdict(report)
    return dict(report)


@dg.asset(
    partitions_def=GROUPS,
    group_name=MEMORY,
    deps=["verbatim_track"],
    kinds={"python"},
    io_manager_key="table_io",
    op_tags=WRITES_STORE,
    backfill_policy=backfill_policy(),
)
def writer_actions(
    context: dg.AssetExecutionContext,
    config: WriterConfig,
    store: StoreResource,
    chat_model: ChatModel,
) -> Any:  # pa.Table, or {group: pa.Table} in a range run
    """The Writer's actions on the group's new messages; the value is the rejects table.

    Runs Writer -> Validate -> Upsert per segment (``write_group``); re-running a
    partition only writes messages past the group's watermark. Metadata: proposed,
    accepted, rejected, updates, records by layer, tokens, model calls, seconds. A backfill
    run over several groups writes them one after the other (one writer per group).
    """
    from speakerflow.pipelines.write_path import write_group

    groups = run_groups(context)
    writer = chat_model.writer()
    out: dict[str, pa.Table] = {}
    for group in groups:
        start = time.perf_counter()
        with store.open(group, write=True) as s:
            report = report_dict(
                write_group(s, writer=writer, window=config.window, progress=False)
            )
        rejects = out[group] = rejects_table(report.get("rejects") or [])
        reasons = Counter(rejects["reason"].to_pylist())
        group_metadata(
            context,
            group,
            {
                "writer": chat_model.label(),
                "segments": report.get("segments", 0),
                "proposed": report.get("proposed", 0),
                "accepted": report.get("accepted", 0),
                "rejected": report.get("rejected", 0),
                "updates": report.get("updates", 0),
                "records_by_layer": dg.MetadataValue.json(report.get("records_by_layer") or {}),
                "tokens": report.get("tokens", 0),
                "model_calls": report.get("model_calls", 0),
                "seconds": round(report.get("seconds") or (time.perf_counter() - start), 3),
                "reject_reasons": dg.MetadataValue.md(
                    md_table(
                        [{"reason": k, "count": v} for k, v in reasons.most_common()],
                        ["reason", "count"],
                    )
                ),
            },
        )
    return out[groups[0]] if len(groups) == 1 else out


def memory_summary(records: pa.Table) -> dict[str, Any]:
    """Counts of a records table: total, heads, updates, by layer, by owner (heads)."""
    rows = records.select(["layer", "owner", "supersedes", "superseded_by"]).to_pylist()
    heads = [r for r in rows if not r["superseded_by"]]
    return {
        "records": len(rows),
        "heads": len(heads),
        "updates": sum(1 for r in rows if r["supersedes"]),
        "records_by_layer": dict(sorted(Counter(r["layer"] for r in rows).items())),
        "heads_by_owner": dict(Counter(r["owner"] for r in heads).most_common(20)),
    }


@dg.asset(
    partitions_def=GROUPS,
    group_name=MEMORY,
    deps=["writer_actions"],
    kinds={"kuzu"},
    check_specs=check_specs(),
    backfill_policy=backfill_policy(),
)
def derived_memory(context: dg.AssetExecutionContext, store: StoreResource):
    """The group's derived records (four layers, update chains) as they stand in the store.

    Checked on every materialisation: no record valid after it is invalid, provenance
    resolves in the group, one head per update chain, owner in roster or GROUP, no
    cross-group reference (``assets/checks.py``). A backfill run over several groups
    checks each group's own store and records one evaluation per check and group
    (partition-scoped, like the materialisations).
    """
    groups = run_groups(context)
    states: dict[str, dict[str, Any]] = {}
    for group in groups:
        start = time.perf_counter()
        with store.open(group) as s:
            records = s.records()
            states[group] = group_state(s, records)
        summary = memory_summary(records)
        cols = ["entry_id", "layer", "owner", "source", "content", "from_ids"]
        heads = [
            r
            for r in records.select(cols + ["superseded_by"]).to_pylist()
            if not r["superseded_by"]
        ]
        group_metadata(
            context,
            group,
            {
                "rows": summary["records"],
                "heads": summary["heads"],
                "updates": summary["updates"],
                "records_by_layer": dg.MetadataValue.json(summary["records_by_layer"]),
                "heads_by_owner": dg.MetadataValue.json(summary["heads_by_owner"]),
                "seconds": round(time.perf_counter() - start, 3),
                "preview": dg.MetadataValue.md(md_table(heads, cols, limit=12)),
            },
        )
    if len(groups) == 1:
        yield dg.MaterializeResult(check_results=evaluate(states[groups[0]], groups[0]))
        return
    # a range run: the materialisation events (one per group) first, then each group's
    # evaluations, scoped to its partition (AssetCheckResult carries no partition)
    yield dg.MaterializeResult()
    yield from range_check_events(context, states)

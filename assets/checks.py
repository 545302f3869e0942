"""Invariants of a group's derived memory, as pure functions and as Dagster asset checks.

Each ``find_*`` function takes the group's records (RECORD_SCHEMA rows as dicts) and
returns a list of violations (dicts naming the entry and what is wrong); empty = holds.
The checks of ``derived_memory`` run them on the store of its partition, in the asset's
own step (one process, not one per check, on the multiprocess executor).
"""

import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import dagster as dg
import pyarrow as pa
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)

from speakerflow.schemas import GROUP_OWNER

from .common import GROUPS, md_table

Row = dict[str, Any]


def find_valid_after_invalid(records: list[Row]) -> list[Row]:
    """Records whose validity ends before it starts, or that are superseded yet still valid."""
    out = []
    for r in records:
        if r["invalid_at"] is not None and r["invalid_at"] < r["valid_at"]:
            out.append(
                {
                    "entry_id": r["entry_id"],
                    "problem": f"invalid_at {r['invalid_at']} < valid_at {r['valid_at']}",
                }
            )
        elif r["superseded_by"] and r["invalid_at"] is None:
            out.append(
                {
                    "entry_id": r["entry_id"],
                    "problem": f"superseded by {r['superseded_by']} but invalid_at is empty",
                }
            )
    return out


def find_unresolved_provenance(records: list[Row], msg_ids: set[str]) -> list[Row]:
    """Records without provenance, or citing a message that is not in their own group."""
    out = []
    for r in records:
        ids = r["from_ids"] or []
        missing = [m for m in ids if m not in msg_ids]
        if not ids or missing:
            out.append(
                {
                    "entry_id": r["entry_id"],
                    "problem": "no from_ids" if not ids else f"unknown messages {missing[:5]}",
                }
            )
    return out


def find_multiple_heads(records: list[Row]) -> list[Row]:
    """Update chains with more than one head (a record superseded twice forks its chain)."""
    by_id = {r["entry_id"]: r for r in records}
    successors: dict[str, list[str]] = defaultdict(list)
    for r in records:
        if r["supersedes"]:
            successors[r["supersedes"]].append(r["entry_id"])
    out = [
        {"entry_id": old, "problem": f"superseded by several records {sorted(new)}"}
        for old, new in successors.items()
        if len(new) > 1
    ]

    def root(entry: str) -> str:
        seen = set()
        while (
            (prev := by_id.get(entry, {}).get("supersedes")) and prev in by_id and entry not in seen
        ):
            seen.add(entry)
            entry = prev
        return entry

    heads: dict[str, list[str]] = defaultdict(list)
    for r in records:
        if not r["superseded_by"]:
            heads[root(r["entry_id"])].append(r["entry_id"])
    out += [
        {"entry_id": chain, "problem": f"chain has {len(h)} heads {sorted(h)}"}
        for chain, h in heads.items()
        if len(h) > 1
    ]
    return out


def find_foreign_owners(records: list[Row], roster: set[str]) -> list[Row]:
    """Records whose owner is neither a roster member nor ``GROUP``."""
    return [
        {
            "entry_id": r["entry_id"],
            "problem": f"owner {r['owner']!r} not in roster or {GROUP_OWNER}",
        }
        for r in records
        if r["owner"] != GROUP_OWNER and r["owner"] not in roster
    ]


def find_cross_group_references(records: list[Row], group: str) -> list[Row]:
    """Records of another group, or whose chain links point outside this group's records."""
    ids = {r["entry_id"] for r in records}
    out = []
    for r in records:
        if r["group_id"] != group:
            out.append(
                {
                    "entry_id": r["entry_id"],
                    "problem": f"group_id {r['group_id']!r} in store of {group!r}",
                }
            )
        for link in ("supersedes", "superseded_by"):
            if r[link] and r[link] not in ids:
                out.append(
                    {
                        "entry_id": r["entry_id"],
                        "problem": f"{link} {r[link]!r} is not a record of {group!r}",
                    }
                )
    return out


def group_state(store: Any, records: pa.Table | None = None) -> dict[str, Any]:
    """What the checks read of an open group store: records, message ids, roster."""
    records = store.records() if records is None else records
    messages = store.messages().select(["msg_id", "group_id"]).to_pylist()
    return {
        "records": records.to_pylist(),
        "roster": set(store.roster()),
        "msg_ids": {m["msg_id"] for m in messages if m["group_id"] == store.group_id},
    }


#: (check name, what holds when it passes, how to find violations in a group's state)
CHECKS: list[tuple[str, str, Callable[[dict[str, Any], str], list[Row]]]] = [
    (
        "no_valid_after_invalid",
        "valid_at <= invalid_at; superseded records are closed",
        lambda s, g: find_valid_after_invalid(s["records"]),
    ),
    (
        "provenance_resolves",
        "from_ids resolve to messages of its own group",
        lambda s, g: find_unresolved_provenance(s["records"], s["msg_ids"]),
    ),
    (
        "one_head_per_chain",
        "at most one head per update chain",
        lambda s, g: find_multiple_heads(s["records"]),
    ),
    (
        "owner_in_roster",
        "owner is a roster member or GROUP",
        lambda s, g: find_foreign_owners(s["records"], s["roster"]),
    ),
    (
        "no_cross_group_reference",
        "no reference to another group's records",
        lambda s, g: find_cross_group_references(s["records"], g),
    ),
]


def check_specs(asset: str = "derived_memory") -> list[dg.AssetCheckSpec]:
    """The invariants as check specs of ``asset`` (evaluated in the asset's own step),
    partitioned by group like the asset: each group has its own check status."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # partitioned check specs are a Dagster preview
        return [
            dg.AssetCheckSpec(name, asset=asset, description=what, partitions_def=GROUPS)
            for name, what, _ in CHECKS
        ]


def evaluate(
    state: dict[str, Any], group: str, asset: str = "derived_memory"
) -> list[dg.AssetCheckResult]:
    """Every invariant on ``state``: one :class:`dg.AssetCheckResult` per check."""
    results = []
    for name, what, find in CHECKS:
        violations = find(state, group)
        results.append(
            dg.AssetCheckResult(
                asset_key=asset,
                check_name=name,
                passed=not violations,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata={
                    "records_checked": len(state["records"]),
                    "violations": len(violations),
                    "detail": dg.MetadataValue.md(
                        md_table(violations, ["entry_id", "problem"], limit=20)
                        if violations
                        else f"every record: {what}"
                    ),
                },
            )
        )
    return results


def _latest_materialization(
    instance: dg.DagsterInstance, asset: dg.AssetKey, group: str
) -> AssetCheckEvaluationTargetMaterializationData | None:
    """The latest materialisation of ``asset`` for ``group`` (what the check looked at)."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset, asset_partitions=[group]), limit=1
    ).records
    if not records:
        return None
    rec = records[0]
    return AssetCheckEvaluationTargetMaterializationData(
        run_id=rec.event_log_entry.run_id, storage_id=rec.storage_id, timestamp=rec.timestamp
    )


def range_check_events(
    context: dg.AssetExecutionContext, states: dict[str, dict[str, Any]]
) -> Iterator[dg.Output | dg.AssetCheckEvaluation]:
    """The check events of a run over several groups (a backfill policy range).

    ``AssetCheckResult`` takes its partition from the run, which a range run does not
    have; so each selected check's output is yielded once, then one
    :class:`dg.AssetCheckEvaluation` per check and group, scoped to the group's partition
    (the checks are partitioned like the asset) and pointing at that group's
    materialisation, as a single-partition run would record it.
    """
    specs = {
        spec.name: (out, spec)
        for out, spec in context.assets_def.check_specs_by_output_name.items()
    }
    selected = {key.name for key in context.selected_asset_check_keys}
    for name in selected & specs.keys():
        yield dg.Output(None, output_name=specs[name][0])
    for group, state in states.items():
        for result in evaluate(state, group):
            if result.check_name not in selected:
                continue
            spec = specs[result.check_name][1]
            yield dg.AssetCheckEvaluation(
                asset_key=spec.asset_key,
                check_name=spec.name,
                passed=result.passed,
                metadata={**result.metadata, "group": group},
                target_materialization_data=_latest_materialization(
                    context.instance, spec.asset_key, group
                ),
                severity=result.severity,
                blocking=spec.blocking,
                partition=group if spec.partitions_def is not None else None,
            )

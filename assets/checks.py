"""Invariants of a group's derived memory, as pure functions and as Dagster asset checks.

Each ``find_*`` function takes the group's records (RECORD_SCHEMA rows as dicts) and
returns a list of violations (dicts naming the entry and what is wrong); empty = holds.
The asset checks on ``derived_memory`` run them on the store of their partition.
"""

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import dagster as dg

from speakerflow.pipelines.resources import StoreResource
from speakerflow.schemas import GROUP_OWNER

from .common import GROUPS, md_table

Row = dict[str, Any]


def find_valid_after_invalid(records: list[Row]) -> list[Row]:
    """Records whose validity ends before it starts, or that are superseded yet still valid."""
    out = []
    for r in records:
        if r["invalid_at"] is not None and r["invalid_at"] < r["valid_at"]:
            out.append({"entry_id": r["entry_id"], "problem": f"invalid_at {r['invalid_at']} < valid_at {r['valid_at']}"})
        elif r["superseded_by"] and r["invalid_at"] is None:
            out.append({"entry_id": r["entry_id"], "problem": f"superseded by {r['superseded_by']} but invalid_at is empty"})
    return out


def find_unresolved_provenance(records: list[Row], msg_ids: set[str]) -> list[Row]:
    """Records without provenance, or citing a message that is not in their own group."""
    out = []
    for r in records:
        ids = r["from_ids"] or []
        missing = [m for m in ids if m not in msg_ids]
        if not ids or missing:
            out.append({"entry_id": r["entry_id"], "problem": "no from_ids" if not ids else f"unknown messages {missing[:5]}"})
    return out


def find_multiple_heads(records: list[Row]) -> list[Row]:
    """Update chains with more than one head (a record superseded twice forks its chain)."""
    by_id = {r["entry_id"]: r for r in records}
    successors: dict[str, list[str]] = defaultdict(list)
    for r in records:
        if r["supersedes"]:
            successors[r["supersedes"]].append(r["entry_id"])
    out = [{"entry_id": old, "problem": f"superseded by several records {sorted(new)}"}
           for old, new in successors.items() if len(new) > 1]

    def root(entry: str) -> str:
        seen = set()
        while (prev := by_id.get(entry, {}).get("supersedes")) and prev in by_id and entry not in seen:
            seen.add(entry)
            entry = prev
        return entry

    heads: dict[str, list[str]] = defaultdict(list)
    for r in records:
        if not r["superseded_by"]:
            heads[root(r["entry_id"])].append(r["entry_id"])
    out += [{"entry_id": chain, "problem": f"chain has {len(h)} heads {sorted(h)}"}
            for chain, h in heads.items() if len(h) > 1]
    return out


def find_foreign_owners(records: list[Row], roster: set[str]) -> list[Row]:
    """Records whose owner is neither a roster member nor ``GROUP``."""
    return [{"entry_id": r["entry_id"], "problem": f"owner {r['owner']!r} not in roster or {GROUP_OWNER}"}
            for r in records if r["owner"] != GROUP_OWNER and r["owner"] not in roster]


def find_cross_group_references(records: list[Row], group: str) -> list[Row]:
    """Records of another group, or whose chain links point outside this group's records."""
    ids = {r["entry_id"] for r in records}
    out = []
    for r in records:
        if r["group_id"] != group:
            out.append({"entry_id": r["entry_id"], "problem": f"group_id {r['group_id']!r} in store of {group!r}"})
        for link in ("supersedes", "superseded_by"):
            if r[link] and r[link] not in ids:
                out.append({"entry_id": r["entry_id"], "problem": f"{link} {r[link]!r} is not a record of {group!r}"})
    return out


def _group_state(store: StoreResource, group: str) -> dict[str, Any]:
    with store.open(group) as s:
        records = s.records().to_pylist()
        messages = s.messages().select(["msg_id", "group_id"]).to_pylist()
        roster = set(s.roster())
    return {"records": records, "roster": roster,
            "msg_ids": {m["msg_id"] for m in messages if m["group_id"] == group}}


def _result(violations: list[Row], what: str, total: int) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=not violations,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "records_checked": total,
            "violations": len(violations),
            "detail": dg.MetadataValue.md(md_table(violations, ["entry_id", "problem"], limit=20)
                                          if violations else f"every record: {what}"),
        },
    )


def _make_check(name: str, what: str, find: Callable[[dict[str, Any], str], list[Row]]) -> dg.AssetChecksDefinition:
    @dg.asset_check(asset="derived_memory", name=name, description=what, partitions_def=GROUPS, blocking=False)
    def _check(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
        group = context.partition_key
        state = _group_state(store, group)
        return _result(find(state, group), what, len(state["records"]))

    return _check


derived_memory_checks = [
    _make_check("no_valid_after_invalid", "valid_at <= invalid_at; superseded records are closed",
                lambda s, g: find_valid_after_invalid(s["records"])),
    _make_check("provenance_resolves", "from_ids resolve to messages of its own group",
                lambda s, g: find_unresolved_provenance(s["records"], s["msg_ids"])),
    _make_check("one_head_per_chain", "at most one head per update chain",
                lambda s, g: find_multiple_heads(s["records"])),
    _make_check("owner_in_roster", "owner is a roster member or GROUP",
                lambda s, g: find_foreign_owners(s["records"], s["roster"])),
    _make_check("no_cross_group_reference", "no reference to another group's records",
                lambda s, g: find_cross_group_references(s["records"], g)),
]

"""Maintenance of a group's memory: decay, invalidation sweep, probes and the review queue.

One ``maintenance_tick`` materialisation runs ``speakerflow.ops.knowledge.maintenance.tick`` on the
group's store; the maintenance job runs it for every group on a schedule.
"""

import time
from datetime import UTC, datetime
from typing import Any

import dagster as dg

from speakerflow.pipelines.resources import StoreResource

from .common import (
    GROUPS,
    MAINTENANCE,
    WRITES_STORE,
    backfill_policy,
    group_metadata,
    md_table,
    run_groups,
)


class MaintenanceConfig(dg.Config):
    """``now`` pins the clock (ISO time, empty = the run's start); ``seed`` the probe sampling."""

    now: str = ""
    seed: int = 0


def tick_metadata(report: dict[str, Any]) -> dict[str, Any]:
    """Metadata of one tick: counts as numbers, lists as JSON, the log as Markdown."""
    meta: dict[str, Any] = {}
    for k, v in report.items():
        if isinstance(v, bool):
            meta[k] = v
        elif isinstance(v, int | float):
            meta[k] = v
        elif k in ("log", "log_lines") and isinstance(v, list):
            meta["log"] = dg.MetadataValue.md(
                "\n".join(f"- {line}" for line in v[:50]) or "_(empty)_"
            )
        elif (
            k in ("review_queue", "queued") and isinstance(v, list) and v and isinstance(v[0], dict)
        ):
            meta[k] = dg.MetadataValue.md(md_table(v, limit=20))
            meta[f"{k}_count"] = len(v)
        elif isinstance(v, dict | list):
            meta[k] = dg.MetadataValue.json(v)
    return meta


@dg.asset(
    partitions_def=GROUPS,
    group_name=MAINTENANCE,
    deps=["derived_memory", "entity_graph"],
    kinds={"python"},
    op_tags=WRITES_STORE,
    backfill_policy=backfill_policy(),
)
def maintenance_tick(
    context: dg.AssetExecutionContext, config: MaintenanceConfig, store: StoreResource
) -> dg.MaterializeResult:
    """One maintenance pass: decay and maturity, invalidation sweep, probes, review queue.
    A backfill run over several groups runs each group's pass in turn, at the same ``now``."""
    from speakerflow.ops.knowledge.maintenance import tick

    now = datetime.fromisoformat(config.now) if config.now else datetime.now(UTC)
    for group in run_groups(context):
        start = time.perf_counter()
        with store.open(group, write=True) as s:
            report = dict(tick(s, now=now, seed=config.seed, pack=store.domain_pack(s)) or {})
        meta = tick_metadata(report)
        meta.setdefault("seconds", round(time.perf_counter() - start, 3))
        group_metadata(context, group, meta)
    return dg.MaterializeResult()

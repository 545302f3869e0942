"""InKH over a group: the entity graph (Detect -> Canonicalize -> extract -> upsert ->
invalidate) and the wiki pages written from it."""

import time
from pathlib import Path
from typing import Any

import dagster as dg

from speakerflow.pipelines import constants as C
from speakerflow.pipelines.resources import StoreResource

from .common import GROUPS, KNOWLEDGE, WRITES_STORE, backfill_policy, group_metadata, run_groups


class EntityGraphConfig(dg.Config):
    """Which extraction backend builds the graph (``rules`` needs no model)."""

    backend: str = "rules"


def _flat_numbers(stats: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in stats.items():
        if isinstance(v, bool):
            continue
        if isinstance(v, int | float):
            out[k] = v
        elif isinstance(v, dict | list):
            out[k] = dg.MetadataValue.json(v)
        elif isinstance(v, str):
            out[k] = v
    return out


@dg.asset(
    partitions_def=GROUPS,
    group_name=KNOWLEDGE,
    deps=["derived_memory"],
    kinds={"kuzu"},
    op_tags=WRITES_STORE,
    backfill_policy=backfill_policy(),
)
def entity_graph(
    context: dg.AssetExecutionContext, config: EntityGraphConfig, store: StoreResource
) -> dg.MaterializeResult:
    """Entities and bi-temporal facts of the group in Kuzu, with write-time invalidation.
    A backfill run over several groups builds each group's graph in turn."""
    from speakerflow.pipelines.entity_path import build_entity_graph as build

    for group in run_groups(context):
        start = time.perf_counter()
        with store.open(group, write=True) as s:
            stats = dict(build(s, backend=config.backend, pack=store.domain_pack(s)) or {})
        meta = _flat_numbers(stats)
        meta.setdefault("seconds", round(time.perf_counter() - start, 3))
        group_metadata(context, group, meta)
    return dg.MaterializeResult()


@dg.asset(
    partitions_def=GROUPS,
    group_name=KNOWLEDGE,
    deps=["entity_graph"],
    kinds={"markdown"},
    backfill_policy=backfill_policy(),
)
def wiki_pages(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    """Markdown wiki pages of the group's entities and facts, under ``<home>/wiki/<group>/``."""
    from speakerflow.ops.knowledge.wiki import write_wiki

    for group in run_groups(context):
        start = time.perf_counter()
        out_dir = store.subdir(C.WIKI_DIRNAME, group)
        with store.open(group) as s:
            pages = [Path(p) for p in write_wiki(s, out_dir)]
        meta: dict[str, Any] = {
            "pages": len(pages),
            "folder": dg.MetadataValue.path(str(out_dir)),
            "files": dg.MetadataValue.json([p.name for p in pages[:50]]),
            "seconds": round(time.perf_counter() - start, 3),
        }
        if pages:
            index = next((p for p in pages if p.stem.lower() in ("index", "readme")), pages[0])
            meta["preview"] = dg.MetadataValue.md(index.read_text(encoding="utf-8")[:4000])
        group_metadata(context, group, meta)
    return dg.MaterializeResult()

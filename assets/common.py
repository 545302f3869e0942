"""What every asset module shares: the group partitions, write tags, metadata helpers.

Assets are thin: they read the partition and resources, call one pure function of the
operator layer, and attach metadata. The helpers here keep that metadata uniform (rows,
records by layer, updates, rejects, tokens, model calls, seconds, a Markdown preview).

Heavy modules (training, evaluation, the InKH paths) are imported inside the asset function
that uses them, with a plain ``from ... import ...``: loading the Dagster definitions stays
cheap (no torch, TRL or model stacks), and the import is still visible to ``lint-imports``,
which checks that assets only import lower layers. That is the only deferred-import
mechanism; there is no string-based import helper.
"""

import base64
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from speakerflow.pipelines import constants as C
from speakerflow.settings import env_name, setting

#: One partition per group id; added by the inbox sensor, the UI, or
#: ``instance.add_dynamic_partitions``.
GROUPS = dg.DynamicPartitionsDefinition(name=C.GROUPS_PARTITION)

#: Environment variable: groups per run of a backfill of the ingest assets (default below).
BACKFILL_PARTITIONS_ENV = env_name("backfill_partitions_per_run")
#: Default groups per backfill run: Dagster's fixed cost of a run (launch the run process,
#: load the code location, one worker or Celery hand-off per step) is paid once per 10
#: groups instead of once per group (docs/scaling.md "Dagster backfill").
BACKFILL_PARTITIONS_PER_RUN = 10


# ``backfill_policy`` on ``@dg.asset`` is a Dagster beta parameter: its warning, on every
# load of the definitions, says nothing a user can act on
warnings.filterwarnings(
    "ignore", message="Parameter `backfill_policy` of function", category=dg.BetaWarning
)


def backfill_policy() -> dg.BackfillPolicy:
    """The backfill policy of every per-group asset: ``multi_run`` of
    ``$SPEAKERFLOW_BACKFILL_PARTITIONS_PER_RUN`` (default 10) groups per run. A run over a
    range loops over its groups, one store writer per group at a time; single-partition
    runs (the inbox sensor, the UI's "Materialize" of one group) are unchanged."""
    try:
        n = setting("backfill_partitions_per_run") or BACKFILL_PARTITIONS_PER_RUN
    except ValueError:  # a value that is no positive count keeps the default
        n = BACKFILL_PARTITIONS_PER_RUN
    return dg.BackfillPolicy.multi_run(max_partitions_per_run=n)


def run_groups(context: dg.AssetExecutionContext) -> list[str]:
    """The groups a run of a partitioned asset covers: one, or a range (backfill policy)."""
    return list(context.partition_keys)


def per_group(value: Any, groups: list[str]) -> dict[str, Any]:
    """An upstream value as ``{group: value}``: the IO manager hands a range run a dict of
    partition -> table and a single-partition run the table itself."""
    if isinstance(value, dict) and len(groups) > 1:
        return {g: value[g] for g in groups}
    return {groups[0]: value}


def group_metadata(context: dg.AssetExecutionContext, group: str, meta: dict[str, Any]) -> None:
    """``meta`` on the materialisation event of ``group`` (a range run emits one event per
    group, each with its own metadata)."""
    context.add_asset_metadata(meta, partition_key=group)


#: Op tags of steps that write a group's store: the multiprocess executor runs at most one
#: of them at a time within a run (see ``assets/jobs.py``); across runs the store's
#: writer lock queues them.
WRITES_STORE = {C.STORE_WRITE_TAG: C.STORE_WRITE_VALUE}

#: Asset groups shown in the UI.
INGESTION, MEMORY, KNOWLEDGE, MAINTENANCE, EVALUATION, TRAINING = (
    "ingestion",
    "memory",
    "knowledge",
    "maintenance",
    "evaluation",
    "training",
)


def md_table(
    rows: Iterable[Mapping[str, Any]],
    columns: list[str] | None = None,
    limit: int = C.PREVIEW_ROWS,
    width: int = 80,
) -> str:
    """A Markdown table of the first ``limit`` rows; cells cut to ``width`` characters."""
    rows = list(rows)
    if not rows:
        return "_(no rows)_"
    columns = columns or list(rows[0])

    def cell(v: Any) -> str:
        text = (
            ", ".join(map(str, v)) if isinstance(v, list | tuple) else ("" if v is None else str(v))
        )
        text = text.replace("|", "\\|").replace("\n", " ")
        return text if len(text) <= width else text[: width - 1] + "…"

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows[:limit]]
    if len(rows) > limit:
        lines.append(f"\n_{len(rows) - limit} more row(s)_")
    return "\n".join(lines)


def png_markdown(path: str | Path, title: str = "plot") -> dg.MetadataValue:
    """A PNG embedded in Markdown (base64), so the UI shows the plot itself."""
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return dg.MetadataValue.md(f"![{title}](data:image/png;base64,{data})")


def numbers(report: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """The numeric values of ``report`` under ``keys`` (missing keys left out)."""
    out: dict[str, Any] = {}
    for k in keys:
        v = report.get(k)
        if isinstance(v, bool):
            out[k] = v
        elif isinstance(v, int | float):
            out[k] = v
    return out


def report_metadata(report: Mapping[str, Any], *, plot_key: str = "plot") -> dict[str, Any]:
    """Metadata for a report dict: its top-level numbers, a JSON view, paths and PNG plots.

    Any string value that names an existing ``.png`` file becomes an embedded image; other
    existing paths become path metadata.
    """
    meta: dict[str, Any] = {
        k: v for k, v in report.items() if isinstance(v, int | float) and not isinstance(v, bool)
    }
    pngs = 0
    for key, value in _paths(report):
        path = Path(value)
        if path.suffix == ".png" and path.exists():
            meta[plot_key if pngs == 0 else f"{plot_key}_{pngs}"] = png_markdown(path, key)
            meta[f"{key}_path"] = dg.MetadataValue.path(str(path))
            pngs += 1
        elif path.exists():
            meta[f"{key}_path"] = dg.MetadataValue.path(str(path))
    meta["report"] = dg.MetadataValue.json(_jsonable(report))
    return meta


def _paths(obj: Any, prefix: str = "") -> Iterable[tuple[str, str]]:
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            yield from _paths(v, f"{prefix}{k}" if not prefix else f"{prefix}_{k}")
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            yield from _paths(v, f"{prefix}_{i}")
    elif (
        isinstance(obj, str | Path)
        and str(obj).endswith((".png", ".md", ".json"))
        and len(str(obj)) < 500
    ):
        yield prefix or "file", str(obj)


def _jsonable(obj: Any, depth: int = 0) -> Any:
    if depth > 6:
        return str(obj)
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v, depth + 1) for v in obj[:200]]
    if isinstance(obj, str | int | float | bool) or obj is None:
        return obj
    return str(obj)

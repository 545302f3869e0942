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
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from speakerflow.pipelines import constants as C

#: One partition per group id; added by the inbox sensor, the UI, or
#: ``instance.add_dynamic_partitions``.
GROUPS = dg.DynamicPartitionsDefinition(name=C.GROUPS_PARTITION)

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

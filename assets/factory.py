"""Turn any operator :class:`~speakerflow.ops.Pipeline` into Dagster assets, partitioned by group.

Each operator of the pipeline becomes one asset (``<name>/<operator>``), chained in
pipeline order, so the UI shows the pipeline as a lineage graph and every operator's stats
(rows in/out, seconds, tokens, model calls, rejects, extra counters) as the metadata of its
own materialisation (a :class:`~speakerflow.ops.ForEach` step adds its inner operators'
stats, keyed ``<inner operator>/<stat>``). The operators run in one step, in order, sharing one
:class:`~speakerflow.ops.Context` (so side tables such as rejects pass between them, as in
a plain ``pipeline(table, ctx)`` call).

>>> import pyarrow as pa
>>> from speakerflow.ops import Lambda
>>> text = pa.schema([("text", pa.string())])
>>> upper = Lambda(lambda t, c: pa.table({"text": [s.upper() for s in t["text"].to_pylist()]}),
...                name="upper", consumes=("text",), produces=text)
>>> strip = Lambda(lambda t, c: pa.table({"text": [s.strip() for s in t["text"].to_pylist()]}),
...                name="strip", consumes=("text",), produces=text)
>>> sorted(k.to_user_string() for k in pipeline_assets("loud", upper >> strip).keys)
['loud/strip', 'loud/upper']

See ``docs/custom-pipelines.md`` for a walk-through.
"""

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq

from speakerflow.ops.core import ForEach, Pipeline
from speakerflow.ops.core.base import Context, OperatorStats
from speakerflow.pipelines.resources import ChatModel, StoreResource

from .common import GROUPS, WRITES_STORE, md_table

#: ``source(store) -> table``: where the pipeline's input comes from (default: the group's
#: messages).
Source = Callable[[Any], pa.Table]
#: ``backends(chat_model) -> {role: backend}``: what ``ctx.backends`` holds for the operators.
Backends = Callable[[ChatModel], dict[str, Any]]


def _messages(store: Any) -> pa.Table:
    return store.messages()


def _default_backends(chat_model: ChatModel) -> dict[str, Any]:
    return {"writer": chat_model.writer()}


def _first_line(obj: Any) -> str:
    doc = (type(obj).__doc__ or "").strip()
    return doc.splitlines()[0] if doc else f"operator {obj.op_name}"


def _preview(table: pa.Table) -> dg.MetadataValue:
    cols = [c for c in table.column_names if not pa.types.is_nested(table.schema.field(c).type)][:6]
    return dg.MetadataValue.md(
        md_table(table.select(cols).slice(0, 5).to_pylist(), cols)
        if cols
        else "_(no flat columns)_"
    )


def _reset_stats(pipeline: Pipeline) -> None:
    for step in pipeline.steps:
        step.stats = OperatorStats()
        if isinstance(step, ForEach):
            _reset_stats(step.inner)


def step_metadata(step: Any) -> dict[str, Any]:
    """An operator's stats as flat metadata; a :class:`ForEach` adds each inner operator's,
    keyed ``<inner operator>/<stat>`` (``writer/model_calls``, ``upsert/adds`` ...)."""
    meta: dict[str, Any] = dict(step.stats.as_metadata())
    if isinstance(step, ForEach):
        inner = step.inner.stats()
        for op, stats in inner.items():
            meta.update({f"{op}/{k}": v for k, v in stats.items()})
        cols = ["operator", "calls", "rows_in", "rows_out", "seconds", "model_calls", "rejects"]
        meta["inner"] = dg.MetadataValue.md(
            md_table([{"operator": op, **st} for op, st in inner.items()], cols)
        )
    return meta


def run_pipeline(pipeline: Pipeline, table: pa.Table, ctx: Context):
    """Run ``pipeline`` operator by operator, yielding ``(operator, output table)``.

    Stats are reset first (inner operators of a :class:`ForEach` too), so they describe
    this run alone.
    """
    _reset_stats(pipeline)
    for step in pipeline.steps:
        table = step(table, ctx)
        yield step, table


def pipeline_assets(
    name: str,
    pipeline: Pipeline | Callable[[], Pipeline],
    *,
    source: Source = _messages,
    deps: Sequence[str] = ("verbatim_track",),
    writes_store: bool = False,
    backends: Backends = _default_backends,
    save_output: bool = True,
    group_name: str | None = None,
) -> dg.AssetsDefinition:
    """Dagster assets for ``pipeline``: one per operator, partitioned by group.

    Parameters
    ----------
    name
        Key prefix and UI group of the assets (``<name>/<operator name>``).
    pipeline
        The operators, or a zero-argument function that builds them (called once here to
        lay out the assets, and once per run so stats and state start fresh).
    source
        ``source(store) -> pa.Table``: the pipeline's input for the partition's group.
        The default reads the group's verbatim messages.
    deps
        Upstream asset keys the first operator waits for (default ``verbatim_track``).
    writes_store
        True when an operator writes the store (an ``Upsert``): the group's store is then
        opened for writing (one writer per group) and the step carries the write tag.
    backends
        Builds ``ctx.backends`` from the ``chat_model`` resource (default: the Writer).
    save_output
        Keep the last operator's table as ``<home>/custom/<name>/<group>.parquet``.
    """
    build = (
        pipeline
        if callable(pipeline) and not isinstance(pipeline, Pipeline)
        else (lambda: pipeline)
    )
    layout = build()
    if not isinstance(layout, Pipeline):
        layout = Pipeline(layout)
    keys = [dg.AssetKey([name, step.op_name]) for step in layout.steps]
    specs = _specs(layout, keys, deps, group_name or name)

    @dg.multi_asset(
        name=f"{name}_pipeline",
        specs=specs,
        partitions_def=GROUPS,
        op_tags=WRITES_STORE if writes_store else None,
        description=f"Operator pipeline {layout!r}",
    )
    def _pipeline(context: dg.AssetExecutionContext, store: StoreResource, chat_model: ChatModel):
        group = context.partition_key
        pipe = build()
        pipe = pipe if isinstance(pipe, Pipeline) else Pipeline(pipe)
        with store.open(group, write=writes_store) as s:
            table = source(s)
            ctx = Context(store=s, backends=backends(chat_model), state={})
            start = time.perf_counter()
            for (step, out), key in zip(run_pipeline(pipe, table, ctx), keys, strict=True):
                meta: dict[str, Any] = {
                    "rows": out.num_rows,
                    **step_metadata(step),
                    "preview": _preview(out),
                }
                if key == keys[-1]:
                    meta["pipeline_seconds"] = round(time.perf_counter() - start, 4)
                    meta.update(_last_step_metadata(ctx, out, store, name, group, save_output))
                yield dg.MaterializeResult(asset_key=key, metadata=meta)

    return _pipeline


def _specs(
    layout: Pipeline, keys: list[dg.AssetKey], deps: Sequence[str], group_name: str
) -> list[dg.AssetSpec]:
    """One asset spec per operator, each depending on the one before (the first on ``deps``)."""
    specs = []
    for i, (key, step) in enumerate(zip(keys, layout.steps, strict=True)):
        upstream = [dg.AssetKey.from_user_string(d) for d in deps] if i == 0 else [keys[i - 1]]
        specs.append(
            dg.AssetSpec(
                key,
                deps=upstream,
                description=_first_line(step),
                group_name=group_name,
                kinds={"python"},
                metadata={
                    "operator": type(step).__name__,
                    "consumes": ", ".join(step.consumes) or "-",
                    "produces": ", ".join(step.output_columns) or "-",
                    **(
                        {"for_each": f"{step.key}: {step.inner!r}"}
                        if isinstance(step, ForEach)
                        else {}
                    ),
                },
            )
        )
    return specs


def _last_step_metadata(
    ctx: Context, out: pa.Table, store: StoreResource, name: str, group: str, save_output: bool
) -> dict[str, Any]:
    """What the last operator's materialisation adds: the rejects' count (Validate leaves
    ``reject_table``) and, with ``save_output``, where its table was saved."""
    meta: dict[str, Any] = {}
    rejects = next(
        (
            t
            for t in (ctx.state.get("rejects"), ctx.state.get("reject_table"))
            if isinstance(t, pa.Table)
        ),
        None,
    )
    if rejects is not None:
        meta["reject_rows"] = rejects.num_rows
    if save_output:
        path = store.subdir("custom", name) / f"{group}.parquet"
        pq.write_table(out, path)
        meta["output"] = dg.MetadataValue.path(str(path))
    return meta


def read_output(store: StoreResource, name: str, group: str) -> pa.Table:
    """The last table a custom pipeline saved for ``group``."""
    path = Path(store.root()) / "custom" / name / f"{group}.parquet"
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: materialise the {name!r} pipeline assets for {group!r} first"
        )
    return pq.read_table(path)

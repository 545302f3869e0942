"""Compose operators; the composition is checked when it is built, not when it runs.

>>> import pyarrow as pa
>>> from speakerflow.ops import Lambda
>>> up = Lambda(lambda t, c: t.set_column(0, "text", pa.array([s.upper() for s in t["text"].to_pylist()])),
...             name="up", consumes=("text",), produces=pa.schema([("text", pa.string())]))
>>> n = Lambda(lambda t, c: t.append_column("n", pa.array([len(s) for s in t["text"].to_pylist()])),
...            name="n", consumes=("text",), produces=pa.schema([("text", pa.string()), ("n", pa.int64())]))
>>> (up >> n)(pa.table({"text": ["ab"]})).to_pylist()
[{'text': 'AB', 'n': 2}]
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from speakerflow.ops.core.base import Context, Operator, SchemaMismatchError


class Pipeline:
    """Operators run in order; each must find its columns in what the one before produces.

    A passthrough step hands its input columns on, so a later step may consume columns
    from further upstream; when every step before it is passthrough, the columns it needs
    that nobody produces become requirements of the pipeline's input (:attr:`consumes`),
    checked when the pipeline is called. ``Segmenter() >> ForEach("segment_id", Writer(...))``
    thus asks its input for the message columns (``speaker``, ``text`` ...) the Writer reads.
    """

    steps: list[Operator]

    def __init__(self, *steps: Operator | Pipeline):
        flat: list[Operator] = []
        for step in steps:
            flat.extend(step.steps if isinstance(step, Pipeline) else [step])
        if not flat:
            raise ValueError("a Pipeline needs at least one operator")
        needs = list(flat[0].consumes)  # what the pipeline's input must have
        available = set(needs)
        open_input = True  # every step so far hands its input columns on
        for before, after in zip(flat, flat[1:], strict=False):
            open_input = open_input and before.passthrough
            available = (
                available | set(before.output_columns)
                if before.passthrough
                else set(before.output_columns)
            )
            missing = [c for c in after.consumes if c not in available]
            if missing and open_input:  # the input itself reaches `after`: it must carry them
                needs.extend(missing)
                available.update(missing)
                missing = []
            if missing:
                raise SchemaMismatchError(
                    f"{after.op_name!r} needs {missing}, which nothing upstream of it produces "
                    f"({before.op_name!r} hands on {sorted(available)})"
                )
        names = [s.op_name for s in flat]
        if len(set(names)) != len(names):
            raise ValueError(
                f"operator names repeat in pipeline: {names}; give each a distinct name"
            )
        self.steps = flat
        self._needs = tuple(needs)

    @property
    def consumes(self) -> tuple[str, ...]:
        """Columns the input must have: the first step's, plus those a later step needs that
        only the input can supply because every step before it is passthrough."""
        return self._needs

    @property
    def produces(self) -> pa.Schema:
        return self.steps[-1].produces

    def __rshift__(self, other: Operator | Pipeline) -> Pipeline:
        return Pipeline(self, other)

    def __call__(self, table: pa.Table, ctx: Context | None = None) -> pa.Table:
        ctx = ctx or Context()
        missing = [c for c in self._needs if c not in table.column_names]
        if missing:
            raise SchemaMismatchError(
                f"pipeline {self!r} needs input column(s) {missing}; the table has "
                f"{table.column_names}"
            )
        for step in self.steps:
            table = step(table, ctx)
        return table

    def stats(self) -> dict[str, dict[str, float | int]]:
        """Per-operator stats, keyed by operator name (``each/inner`` for :class:`ForEach`
        steps)."""
        out: dict[str, dict[str, float | int]] = {}
        for step in self.steps:
            out[step.op_name] = step.stats.as_metadata()
            if isinstance(step, ForEach):
                out.update({f"{step.op_name}/{k}": v for k, v in step.inner.stats().items()})
        return out

    def __repr__(self) -> str:
        return " >> ".join(s.op_name for s in self.steps)


class ForEach(Operator):
    """Run an inner pipeline once per value of a key column, in order of first appearance.

    For steps that must see the effect of the previous part before the next one, e.g. the
    Writer, which reads the memory heads that earlier segments just wrote:
    ``Segmenter() >> ForEach("segment_id", Writer(...) >> Validate() >> Upsert())``.
    The outputs are concatenated; every inner operator keeps its own stats. ``progress``,
    when set, is the label of a tqdm bar over the key values; ``on_step``, when set, is
    called as ``on_step(done, total, rows)`` after each key value (``rows``: the input rows
    done so far).
    """

    name = "for_each"

    def __init__(
        self,
        key: str,
        inner: Operator | Pipeline,
        name: str | None = None,
        progress: str | None = None,
        on_step: Callable[[int, int, int], None] | None = None,
    ):
        self.key = key
        self.progress = progress
        self.on_step = on_step
        self.inner = inner if isinstance(inner, Pipeline) else Pipeline(inner)
        self._name = name or f"for_each_{key}"
        self.consumes = tuple(dict.fromkeys((key, *self.inner.consumes)))  # type: ignore[misc]
        self.produces = self.inner.produces  # type: ignore[misc]
        super().__init__()

    @property
    def op_name(self) -> str:
        return self._name

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        keys = list(dict.fromkeys(table[self.key].to_pylist()))
        if self.progress:
            from tqdm import tqdm

            keys = tqdm(keys, desc=self.progress, unit=self.key)
        outs, rows = [], 0
        for done, k in enumerate(keys, start=1):
            part = table.filter(pc.equal(table[self.key], k))
            outs.append(self.inner(part, ctx))
            rows += part.num_rows
            if self.on_step is not None:
                self.on_step(done, len(keys), rows)
        outs = [o for o in outs if o.num_rows]
        if not outs:
            return self.produces.empty_table()
        return pa.concat_tables(outs, promote_options="permissive")

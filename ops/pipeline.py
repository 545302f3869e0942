"""Compose operators; the composition is checked when it is built, not when it runs.

>>> import pyarrow as pa
>>> from speakerflow.ops import Lambda
>>> up = Lambda(lambda t, c: t.set_column(0, "text", pa.array([s.upper() for s in t["text"].to_pylist()])),
...             name="up", consumes=("text",), produces=pa.schema([("text", pa.string())]))
>>> n = Lambda(lambda t, c: t.append_column("n", pa.array([len(s) for s in t["text"].to_pylist()])),
...            name="n", consumes=("text",), produces=pa.schema([("text", pa.string()), ("n", pa.int64())]))
>>> (up >> n)(pa.table({"text": ["ab"]})).to_pylist()
[{'text': 'AB', 'n': 2}]
"""
from __future__ import annotations

import pyarrow as pa

from .base import Context, Operator, SchemaMismatchError


class Pipeline:
    """Operators run in order; each must find its columns in what the one before produces."""

    def __init__(self, *steps: Operator | Pipeline):
        flat: list[Operator] = []
        for step in steps:
            flat.extend(step.steps if isinstance(step, Pipeline) else [step])
        if not flat:
            raise ValueError("a Pipeline needs at least one operator")
        for before, after in zip(flat, flat[1:], strict=False):
            missing = [c for c in after.consumes if c not in before.output_columns]
            if missing:
                raise SchemaMismatchError(
                    f"{after.op_name!r} needs {missing}, which {before.op_name!r} does not produce "
                    f"(it produces {list(before.output_columns)})"
                )
        names = [s.op_name for s in flat]
        if len(set(names)) != len(names):
            raise ValueError(f"operator names repeat in pipeline: {names}; give each a distinct name")
        self.steps = flat

    @property
    def consumes(self) -> tuple[str, ...]:
        return self.steps[0].consumes

    @property
    def produces(self) -> pa.Schema:
        return self.steps[-1].produces

    def __rshift__(self, other: Operator | Pipeline) -> Pipeline:
        return Pipeline(self, other)

    def __call__(self, table: pa.Table, ctx: Context | None = None) -> pa.Table:
        ctx = ctx or Context()
        for step in self.steps:
            table = step(table, ctx)
        return table

    def stats(self) -> dict[str, dict[str, float | int]]:
        """Per-operator stats, keyed by operator name."""
        return {s.op_name: s.stats.as_metadata() for s in self.steps}

    def __repr__(self) -> str:
        return " >> ".join(s.op_name for s in self.steps)

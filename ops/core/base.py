"""The Operator base and the Pipeline: typed, metered steps from one table to the next,
and their composition (``a >> b``), checked when it is built.

An operator declares the columns it ``consumes`` and the schema it ``produces``, carries
a frozen pydantic ``Config``, declares optional dependencies (checked when it is built,
with an install hint) and meters every call in :class:`OperatorStats`. It implements
``run`` (an Arrow table in, one out) or ``run_batch`` (a :class:`~.batch.Batch` in, one
out: typed columns passed as Python values, see :mod:`.batch`); either way it can be
called on a table and composed with any other operator.

>>> import pyarrow as pa
>>> class Upper(Operator):
...     name = "upper"
...     consumes = ("text",)
...     produces = pa.schema([("text", pa.string())])
...     def run(self, table, ctx):
...         return pa.table({"text": [t.upper() for t in table["text"].to_pylist()]})
>>> Upper()(pa.table({"text": ["hi"]}))["text"].to_pylist()
['HI']
"""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from speakerflow.ops.core.batch import Batch, Column, put_columns

__all__ = [
    "Batch",
    "Column",
    "Context",
    "MissingDependencyError",
    "Operator",
    "OperatorConfig",
    "OperatorStats",
    "Pipeline",
    "SchemaMismatchError",
    "put_columns",
]


class OperatorConfig(BaseModel):
    """Base of operator configs: frozen, unknown keys refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class MissingDependencyError(ImportError):
    """An operator needs a package that is not installed."""


class SchemaMismatchError(TypeError):
    """A table (or an upstream operator) lacks columns an operator consumes."""


@dataclass
class OperatorStats:
    """Counters for one operator, summed over its calls.

    ``tokens`` counts model tokens (prompt + completion), ``model_calls`` calls to a model
    backend, ``rejects`` rows refused with a reason (kept in the reject table).
    """

    calls: int = 0
    rows_in: int = 0
    rows_out: int = 0
    seconds: float = 0.0
    tokens: int = 0
    model_calls: int = 0
    rejects: int = 0
    extra: dict[str, float] = field(default_factory=dict)

    def as_metadata(self) -> dict[str, float | int]:
        """A flat dict, suitable for Dagster materialisation metadata."""
        out: dict[str, float | int] = {
            "calls": self.calls,
            "rows_in": self.rows_in,
            "rows_out": self.rows_out,
            "seconds": round(self.seconds, 4),
            "tokens": self.tokens,
            "model_calls": self.model_calls,
            "rejects": self.rejects,
        }
        out.update(self.extra)
        return out

    def count_model_call(self, tokens: int = 0) -> None:
        """Meter one call to a model backend and the tokens it cost."""
        self.model_calls += 1
        self.tokens += tokens

    def bump(self, key: str, amount: float = 1) -> None:
        """Add to a named extra counter (``updates``, ``invalidations`` ...)."""
        self.extra[key] = self.extra.get(key, 0) + amount


@dataclass
class Context:
    """What an operator may touch besides its input table.

    ``store`` is a :class:`speakerflow.graphs.GroupStore` (or an in-memory double),
    ``backends`` maps roles (``writer``, ``answer`` ...) to model backends, ``clock``
    returns "now" (tests pin it), ``state`` carries side tables (such as rejects) between
    operators of one pipeline run.
    """

    store: Any = None
    backends: dict[str, Any] = field(default_factory=dict)
    clock: Any = None
    state: dict[str, Any] = field(default_factory=dict)


class Operator:
    """Base class: subclasses set ``name``, ``consumes``, ``produces`` and implement ``run``
    (Arrow) or ``run_batch`` (typed columns)."""

    name: ClassVar[str] = ""
    consumes: ClassVar[tuple[str, ...]] = ()
    produces: ClassVar[pa.Schema] = pa.schema([])
    requires: ClassVar[tuple[tuple[str, str], ...]] = ()  # (module, pip install hint)
    #: True: the output keeps every input column and adds (or replaces) the produced ones,
    #: so a Pipeline lets later operators consume columns from further upstream.
    passthrough: ClassVar[bool] = False
    Config: ClassVar[type[OperatorConfig]] = OperatorConfig

    def __init__(self, config: OperatorConfig | dict[str, Any] | None = None, **overrides: Any):
        for module, hint in self.requires:
            if importlib.util.find_spec(module) is None:
                raise MissingDependencyError(
                    f"operator {self.op_name!r} needs the package {module!r}: pip install {hint}"
                )
        if isinstance(config, OperatorConfig):
            self.config = config.model_copy(update=overrides) if overrides else config
        else:
            self.config = self.Config(**{**(config or {}), **overrides})
        self.stats = OperatorStats()

    @property
    def op_name(self) -> str:
        return self.name or type(self).__name__.lower()

    @property
    def output_columns(self) -> tuple[str, ...]:
        """The names of :attr:`produces` (read once per operator)."""
        found = self.__dict__.get("_output_columns")
        if found is None:
            found = self.__dict__["_output_columns"] = tuple(self.produces.names)
        return found

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        """One Arrow table in, one out (an operator with ``run_batch`` has it for free)."""
        if type(self).run_batch is not Operator.run_batch:
            return self.run_batch(Batch(table), ctx).table()
        raise NotImplementedError(f"{type(self).__name__} implements neither run nor run_batch")

    def run_batch(self, batch: Batch, ctx: Context) -> Batch:
        """One batch in, one out: typed columns in and out without Arrow in between."""
        return Batch(self.run(batch.table(), ctx))

    def __call__(self, table: pa.Table, ctx: Context | None = None) -> pa.Table:
        return self.call_batch(Batch(table), ctx).table()

    def call_batch(self, batch: Batch, ctx: Context | None = None) -> Batch:
        """:meth:`run_batch` with the column checks and the meters of a call."""
        names = batch.column_names
        have = set(names)
        missing = [c for c in self.consumes if c not in have]
        if missing:
            raise SchemaMismatchError(
                f"operator {self.op_name!r} needs column(s) {missing}; the table has {names}"
            )
        start = time.perf_counter()
        out = self.run_batch(batch, ctx or Context())
        had, have = have, set(out.column_names)
        lost = [c for c in self.output_columns if c not in have]
        if self.passthrough and not had <= have:
            lost += [c for c in names if c not in have]
        if lost:
            raise SchemaMismatchError(
                f"operator {self.op_name!r} did not return column(s) {lost} it declares"
            )
        self.stats.calls += 1
        self.stats.rows_in += batch.num_rows
        self.stats.rows_out += out.num_rows
        self.stats.seconds += time.perf_counter() - start
        return out

    def fresh(self) -> Operator:
        """A copy with its own, zeroed stats (the same config): one per concurrent call."""
        op = object.__new__(type(self))
        op.__dict__.update(self.__dict__)
        op.stats = OperatorStats()
        return op

    def nested_stats(self) -> dict[str, dict[str, float | int]]:
        """Stats of the operators inside this one, by name (none; see ``ForEach``)."""
        return {}

    def __rshift__(self, other: Operator | Pipeline) -> Pipeline:
        return Pipeline(self, other)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r})"


class Pipeline:
    """Operators run in order; each must find its columns in what the one before produces.

    A passthrough step hands its input columns on, so a later step may consume columns
    from further upstream; when every step before it is passthrough, the columns it needs
    that nobody produces become requirements of the pipeline's input (:attr:`consumes`),
    checked when the pipeline is called. ``Segmenter() >> ForEach("segment_id", Writer(...))``
    thus asks its input for the message columns (``speaker``, ``text`` ...) the Writer reads.
    Between steps the rows travel as a :class:`~.batch.Batch`: typed steps hand Python values
    on, and Arrow is built where a step (or the caller) reads a table.
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
        last = flat[-1]
        self.steps = flat
        self._needs = tuple(needs)
        self._outputs = frozenset(
            available | set(last.output_columns) if last.passthrough else last.output_columns
        )

    @property
    def consumes(self) -> tuple[str, ...]:
        """Columns the input must have: the first step's, plus those a later step needs that
        only the input can supply because every step before it is passthrough."""
        return self._needs

    @property
    def produces(self) -> pa.Schema:
        return self.steps[-1].produces

    @property
    def output_columns(self) -> frozenset[str]:
        """Columns the output is sure to have (those a passthrough tail hands on included)."""
        return self._outputs

    def __rshift__(self, other: Operator | Pipeline) -> Pipeline:
        return Pipeline(self, other)

    def __call__(self, table: pa.Table, ctx: Context | None = None) -> pa.Table:
        return self.call_batch(Batch(table), ctx).table()

    def call_batch(self, batch: Batch, ctx: Context | None = None) -> Batch:
        """Run every step on ``batch``; the result's typed columns are read without Arrow."""
        ctx = ctx or Context()
        names = batch.column_names
        missing = [c for c in self._needs if c not in names]
        if missing:
            raise SchemaMismatchError(
                f"pipeline {self!r} needs input column(s) {missing}; the table has {names}"
            )
        for step in self.steps:
            batch = step.call_batch(batch, ctx)
        return batch

    def fresh(self) -> Pipeline:
        """The same pipeline with fresh operator stats (see :meth:`Operator.fresh`): what a
        server runs per request, so concurrent calls meter their own work."""
        out = object.__new__(Pipeline)
        out.__dict__.update(self.__dict__)
        out.steps = [s.fresh() for s in self.steps]
        return out

    def stats(self) -> dict[str, dict[str, float | int]]:
        """Per-operator stats, keyed by operator name (``each/inner`` for operators with
        inner ones, such as ``ForEach``)."""
        out: dict[str, dict[str, float | int]] = {}
        for step in self.steps:
            out[step.op_name] = step.stats.as_metadata()
            out.update({f"{step.op_name}/{k}": v for k, v in step.nested_stats().items()})
        return out

    def __repr__(self) -> str:
        return " >> ".join(s.op_name for s in self.steps)

"""The Operator base: a typed, metered step from one Arrow table to another.

An operator declares the columns it ``consumes`` and the schema it ``produces``, carries
a frozen pydantic ``Config``, declares optional dependencies (checked when it is built,
with an install hint) and meters every call in :class:`OperatorStats`.

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
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from speakerflow.ops.core.pipeline import Pipeline


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


def put_columns(table: pa.Table, columns: dict[str, Any], schema: pa.Schema) -> pa.Table:
    """``table`` with ``columns`` (name -> values) replaced in place or appended at the end,
    typed by the fields of ``schema``: how a passthrough operator adds what it produces."""
    for name, values in columns.items():
        spec = schema.field(name)
        array = (
            values
            if isinstance(values, (pa.Array, pa.ChunkedArray))
            else pa.array(values, spec.type)
        )
        if name in table.column_names:
            table = table.set_column(table.column_names.index(name), spec, array)
        else:
            table = table.append_column(spec, array)
    return table


class Operator:
    """Base class: subclasses set ``name``, ``consumes``, ``produces`` and implement ``run``."""

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
        return tuple(self.produces.names)

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, table: pa.Table, ctx: Context | None = None) -> pa.Table:
        missing = [c for c in self.consumes if c not in table.column_names]
        if missing:
            raise SchemaMismatchError(
                f"operator {self.op_name!r} needs column(s) {missing}; the table has "
                f"{table.column_names}"
            )
        start = time.perf_counter()
        out = self.run(table, ctx or Context())
        lost = [c for c in self.output_columns if c not in out.column_names]
        if self.passthrough:
            lost += [c for c in table.column_names if c not in out.column_names]
        if lost:
            raise SchemaMismatchError(
                f"operator {self.op_name!r} did not return column(s) {lost} it declares"
            )
        self.stats.calls += 1
        self.stats.rows_in += table.num_rows
        self.stats.rows_out += out.num_rows
        self.stats.seconds += time.perf_counter() - start
        return out

    def __rshift__(self, other: Operator) -> Pipeline:
        from speakerflow.ops.core.pipeline import Pipeline

        return Pipeline(self, other)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r})"

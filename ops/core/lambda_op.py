"""The escape hatch: wrap any ``f(table, ctx) -> table`` as an operator."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from speakerflow.ops.core.base import Context, Operator


class Lambda(Operator):
    """An operator around a plain function; declare its columns so pipelines can check them.
    ``passthrough=True``: the function keeps every input column (see ``Operator.passthrough``),
    so it can sit between two stages that hand columns on, e.g. inside the query path."""

    def __init__(
        self,
        fn: Callable[[pa.Table, Context], pa.Table],
        name: str,
        consumes: tuple[str, ...] = (),
        produces: pa.Schema | None = None,
        passthrough: bool = False,
    ):
        if not name:
            raise ValueError("a Lambda operator needs a name")
        self._fn = fn
        self._name = name
        # instance attributes shadow the class-level declarations of Operator
        self.consumes = tuple(consumes)  # type: ignore[misc]
        self.produces = produces if produces is not None else pa.schema([])  # type: ignore[misc]
        self.passthrough = passthrough  # type: ignore[misc]
        super().__init__()

    @property
    def op_name(self) -> str:
        return self._name

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        return self._fn(table, ctx)

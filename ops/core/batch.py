"""What a pipeline hands from step to step: a :class:`Batch`, an Arrow table plus the
Python values of typed columns (:class:`Column`) that steps added and no step has needed
as Arrow yet.

A step that reads and writes typed columns (``Operator.run_batch``) passes Python objects
straight to the next such step; the Arrow table is made only when a step reads it
(``Batch.table()``), so a one-question query path builds no table per stage. A step that
works on Arrow (``Operator.run``) sees exactly the table it always did.

>>> import pyarrow as pa
>>> WORDS = Column("words", [pa.field("words", pa.list_(pa.string()))])
>>> b = Batch(pa.table({"text": ["a b"]}))
>>> b = b.put(WORDS, [["a", "b"]])
>>> b.get(WORDS), b.column_names
([['a', 'b']], ['text', 'words'])
>>> b.table().to_pylist()
[{'text': 'a b', 'words': ['a', 'b']}]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa


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


class Column:
    """A typed column: one Python value per row, standing for one or more Arrow fields.

    ``encode(values)`` gives the Arrow columns (field name -> values or array); ``decode``
    reads the values back from a table that has the fields. The defaults fit a single
    field whose Python values are what ``to_pylist`` gives.
    """

    def __init__(
        self,
        name: str,
        fields: Sequence[pa.Field],
        encode: Callable[[list], dict[str, Any]] | None = None,
        decode: Callable[[pa.Table], list] | None = None,
    ):
        if not fields:
            raise ValueError(f"column {name!r} needs at least one Arrow field")
        if (encode is None or decode is None) and [f.name for f in fields] != [name]:
            raise ValueError(f"column {name!r} spans several fields: give encode and decode")
        self.name = name
        self.schema = pa.schema(list(fields))
        self.names = tuple(self.schema.names)
        self.name_set = frozenset(self.names)
        self._encode = encode
        self._decode = decode

    def encode(self, values: list) -> dict[str, Any]:
        return self._encode(values) if self._encode else {self.name: values}

    def decode(self, table: pa.Table) -> list:
        return self._decode(table) if self._decode else table[self.name].to_pylist()

    def __repr__(self) -> str:
        return f"Column({self.name!r}, {list(self.names)})"


class Batch:
    """An Arrow table and typed column values on top of it (see the module doc).

    Values put but not yet encoded are *pending*; :meth:`table` encodes them (once) into
    the table, in the order they were put: a new field is appended at the end, a field
    the table has is replaced in place, as :func:`put_columns` does.
    """

    def __init__(self, table: pa.Table):
        self._table: pa.Table | None = table  # None: no Arrow yet (see :meth:`of`)
        self._rows: int = table.num_rows
        self._names: tuple[str, ...] = tuple(table.column_names)
        self._values: dict[str, list] = {}  # column name -> values (pending or decoded)
        self._columns: dict[str, Column] = {}  # the columns of _values
        self._pending: dict[str, Column] = {}  # put, not yet in _table (in put order)

    @classmethod
    def of(cls, columns: dict[Column, list]) -> Batch:
        """A batch of typed values only: its Arrow table is made when it is first read."""
        if not columns:
            raise ValueError("Batch.of needs at least one column")
        out = cls.__new__(cls)
        out._table, out._rows, out._names = None, len(next(iter(columns.values()))), ()
        out._values, out._columns, out._pending = {}, {}, {}
        for column, values in columns.items():
            out = out.put(column, values)
        return out

    @property
    def num_rows(self) -> int:
        return self._rows

    @property
    def column_names(self) -> list[str]:
        """The columns of :meth:`table`, in its order (nothing is encoded to tell them)."""
        return list(self._names)

    def get(self, column: Column) -> list:
        """The values of ``column``, one per row (decoded from the table on first use)."""
        found = self._values.get(column.name)
        if found is not None and self._columns[column.name] is column:
            return found
        if self._table is None or any(self._overlaps(c, column) for c in self._pending.values()):
            self.table()
        values = column.decode(self.table())
        self._values[column.name], self._columns[column.name] = values, column
        return values

    def put(self, column: Column, values: list) -> Batch:
        """A new batch with ``column`` set to ``values`` (one per row); this one is unchanged."""
        if len(values) != self._rows:
            raise ValueError(f"column {column.name!r}: {len(values)} values for {self._rows} rows")
        clash = [name for name, col in self._columns.items() if self._overlaps(col, column)]
        if any(name in self._pending for name in clash):
            self.table()  # a pending column sharing a field is encoded first, then replaced
        out = Batch.__new__(Batch)
        out._table, out._rows = self._table, self._rows
        out._values, out._columns = dict(self._values), dict(self._columns)
        for name in clash:
            del out._values[name], out._columns[name]
        out._pending = dict(self._pending)
        out._values[column.name], out._columns[column.name] = values, column
        out._pending[column.name] = column
        out._names = self._names + tuple(n for n in column.names if n not in self._names)
        return out

    def table(self) -> pa.Table:
        """The batch as an Arrow table (pending columns encoded now, once)."""
        if self._pending:
            table = self._table
            if table is None:  # no columns yet, but the rows: what the first column is put on
                table = pa.table({"_": pa.nulls(self._rows)}).drop_columns(["_"])
            for col in self._pending.values():
                table = put_columns(table, col.encode(self._values[col.name]), col.schema)
            self._table, self._pending = table, {}
        assert self._table is not None  # a batch is made from a table or from columns
        return self._table

    @staticmethod
    def _overlaps(a: Column, b: Column) -> bool:
        return a is not b and (a.name == b.name or not a.name_set.isdisjoint(b.name_set))

    def __repr__(self) -> str:
        pending = ", ".join(self._pending) or "none"
        return f"Batch({self.num_rows} rows, {self.column_names}, pending: {pending})"

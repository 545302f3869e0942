"""The temporal graph on Kuzu 0.11.3.

Kuzu facts that shape this module (see ``docs/stores.md``): one read-write ``Database`` per
file and process; one write transaction at a time; an unbound ``$param`` in a ``WHERE`` is
silently ignored (a ``DELETE`` would then delete every row), so every statement goes
through :meth:`KuzuGraph.execute`, which refuses unbound parameters; timestamps are stored
naive, so we normalise to UTC on the way in and re-attach UTC on the way out.
"""

from __future__ import annotations

import re
import tempfile
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from speakerflow.schemas import EDGE_SCHEMA, ENTITY_SCHEMA, MESSAGE_SCHEMA, RECORD_SCHEMA

_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


class UnboundParameterError(ValueError):
    """A query names ``$x`` but no value for ``x`` was given (Kuzu would ignore the filter)."""


def _kuzu_type(dtype: pa.DataType) -> str:
    if pa.types.is_list(dtype):
        return _kuzu_type(dtype.value_type) + "[]"
    if pa.types.is_timestamp(dtype):
        return "TIMESTAMP"
    if pa.types.is_int64(dtype):
        return "INT64"
    if pa.types.is_floating(dtype):
        return "DOUBLE"
    if pa.types.is_boolean(dtype):
        return "BOOLEAN"
    if pa.types.is_string(dtype):
        return "STRING"
    raise TypeError(f"no Kuzu type for {dtype}")


def node_ddl(table: str, schema: pa.Schema, primary_key: str) -> str:
    """``CREATE NODE TABLE`` for an Arrow schema (one column per field)."""
    cols = ", ".join(f"{f.name} {_kuzu_type(f.type)}" for f in schema)
    return f"CREATE NODE TABLE IF NOT EXISTS {table}({cols}, PRIMARY KEY({primary_key}))"


#: Columns of a message that the graph keeps: every column of :data:`MESSAGE_SCHEMA` but
#: ``text``. The Parquet parts are the record of truth of a message; no graph query reads its
#: text (search is Tantivy's, provenance reads the text from Parquet), and the text was half
#: the cost of the ingest's COPY and most of the graph's bytes. A graph made before this keeps
#: its ``text`` column (still filled by :meth:`KuzuGraph.copy_nodes`, which writes the columns
#: a table has).
MESSAGE_GRAPH_SCHEMA = pa.schema([f for f in MESSAGE_SCHEMA if f.name != "text"])

#: Node tables: (name, schema, primary key). Facts that need text search are nodes.
NODE_TABLES: tuple[tuple[str, pa.Schema, str], ...] = (
    ("Message", MESSAGE_GRAPH_SCHEMA, "msg_id"),
    ("Record", RECORD_SCHEMA, "entry_id"),
    ("Entity", ENTITY_SCHEMA, "entity_id"),
    ("Fact", EDGE_SCHEMA, "edge_id"),
)
#: Relationship tables.
REL_DDL: tuple[str, ...] = (
    "CREATE REL TABLE IF NOT EXISTS FROM_MSG(FROM Record TO Message, FROM Fact TO Message)",
    "CREATE REL TABLE IF NOT EXISTS SUPERSEDES(FROM Record TO Record, FROM Fact TO Fact)",
    "CREATE REL TABLE IF NOT EXISTS MENTIONS(FROM Message TO Entity, FROM Record TO Entity)",
    "CREATE REL TABLE IF NOT EXISTS SUBJECT(FROM Fact TO Entity)",
    "CREATE REL TABLE IF NOT EXISTS OBJECT(FROM Fact TO Entity)",
    "CREATE REL TABLE IF NOT EXISTS REPLY_TO(FROM Message TO Message)",
)


def rel_pairs() -> list[tuple[str, str, str]]:
    """(relationship table, from node table, to node table) for every pair in :data:`REL_DDL`."""
    out = []
    for ddl in REL_DDL:
        name = re.findall(r"REL TABLE IF NOT EXISTS (\w+)\(", ddl)[0]
        out += [(name, a, b) for a, b in re.findall(r"FROM (\w+) TO (\w+)", ddl)]
    return out


def naive_utc(table: pa.Table) -> pa.Table:
    """Cast every tz-aware timestamp column to naive UTC microseconds (Kuzu's storage)."""
    cols = []
    for field, col in zip(table.schema, table.columns, strict=True):
        if pa.types.is_timestamp(field.type) and field.type.tz is not None:
            col = col.cast(pa.timestamp("us", tz="UTC")).cast(pa.timestamp("us"))
        cols.append(col)
    return pa.Table.from_arrays(cols, names=table.column_names)


class KuzuGraph:
    """One Kuzu database file; statements serialised by a lock; refuses unbound parameters."""

    def __init__(self, path: str | Path, read_only: bool = False, buffer_pool_mb: int = 256):
        import kuzu

        self.path = Path(path)
        self.read_only = read_only
        self._db = kuzu.Database(
            str(self.path), read_only=read_only, buffer_pool_size=buffer_pool_mb * 1024 * 1024
        )
        self._conn: Any = kuzu.Connection(self._db)  # None once closed
        # the connection's thread cap, restored after a COPY that lowers it
        setting: Any = self._conn.execute("CALL current_setting('threads') RETURN *")
        self._threads = int(setting.get_next()[0])
        self._lock = threading.RLock()
        #: column names per node table, as this database has them (read once per table)
        self._columns: dict[str, list[str]] = {}
        if not read_only:
            self.ensure_schema()

    # -- schema -----------------------------------------------------------------------
    def ensure_schema(self, extra_ddl: Iterable[str] = ()) -> None:
        """Create the node and relationship tables if they do not exist yet."""
        for name, schema, pk in NODE_TABLES:
            self.execute(node_ddl(name, schema, pk))
        for ddl in (*REL_DDL, *extra_ddl):
            self.execute(ddl)

    # -- statements -------------------------------------------------------------------
    @staticmethod
    def check_params(query: str, params: Mapping[str, Any] | None) -> None:
        """Raise :class:`UnboundParameterError` if ``query`` names a ``$param`` not in
        ``params``."""
        names = set(_PARAM.findall(_STRING_LITERAL.sub("''", query)))
        missing = sorted(names - set(params or {}))
        if missing:
            raise UnboundParameterError(
                f"query uses unbound parameter(s) {missing}; pass them in params "
                f"(Kuzu would silently drop the filter): {query[:120]}"
            )

    def execute(self, query: str, params: Mapping[str, Any] | None = None) -> Any:
        """Run one statement (read or write) and return Kuzu's result."""
        self.check_params(query, params)
        with self._lock:
            return self._conn.execute(query, dict(params or {}))

    def rows(self, query: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a read query and return its rows as dicts."""
        result = self.execute(query, params)
        names = result.get_column_names()
        out = []
        while result.has_next():
            out.append(dict(zip(names, result.get_next(), strict=True)))
        return out

    def arrow(self, query: str, params: Mapping[str, Any] | None = None) -> pa.Table:
        """Run a read query and return an Arrow table."""
        result = self.execute(query, params)
        table = result.get_as_arrow()
        return table

    def columns(self, table_name: str) -> list[str]:
        """The columns of node table ``table_name`` in this database, in order (a store made
        before :data:`MESSAGE_GRAPH_SCHEMA` has a ``text`` column in ``Message``)."""
        if table_name not in self._columns:
            rows = self.rows(f"CALL table_info('{table_name}') RETURN name")
            self._columns[table_name] = [r["name"] for r in rows]
        return self._columns[table_name]

    def copy_nodes(self, table_name: str, table: pa.Table, threads: int | None = None) -> int:
        """Bulk-load an Arrow table into a node table (all or nothing). Returns rows loaded.
        Only the table's columns that the node table has are written (a message's ``text``
        goes to a graph of the older layout only). ``threads`` caps Kuzu's threads for this
        COPY (``None``: Kuzu's default, one per core)."""
        if table.num_rows == 0:
            return 0
        cols = self.columns(table_name)
        if table.column_names != cols and set(cols) <= set(table.column_names):
            table = table.select(cols)
        data = naive_utc(table)
        with self._lock:
            if threads:
                self._conn.set_max_threads_for_exec(threads)
            try:
                self._copy(f"COPY {table_name} FROM {{source}}", data)
            finally:
                if threads:
                    self._conn.set_max_threads_for_exec(self._threads)
        return table.num_rows

    def copy_rels(self, rel: str, table: pa.Table, from_table: str, to_table: str) -> int:
        """Bulk-load relationships; ``table``'s first two columns are the endpoint keys."""
        if table.num_rows == 0:
            return 0
        with self._lock:
            self._copy(f"COPY {rel} FROM {{source}} (from='{from_table}', to='{to_table}')", table)
        return table.num_rows

    def _copy(self, statement: str, table: pa.Table) -> None:
        """Run ``statement`` (a ``COPY ... FROM {source}``, the lock held) from a Parquet file
        of ``table``. Not from the Arrow table as a parameter: Kuzu 0.11.3's binding imports
        pandas and polars on the first parameter it scans, to ask whether it is one of their
        frames (0.9 s of CPU, once per process: a fifth of a fresh ``maintain``), and the
        file costs about the same (docs/scaling.md, "ingest": 100,000 and 1,000,000 rows)."""
        import pyarrow.parquet as pq

        with tempfile.TemporaryDirectory(prefix="speakerflow-copy-") as tmp:
            path = Path(tmp) / "rows.parquet"
            pq.write_table(table, path, compression="none")
            source = "'" + path.as_posix().replace("\\", "\\\\").replace("'", "\\'") + "'"
            self._conn.execute(statement.format(source=source))

    def copy_into(self, dest: str | Path) -> dict[str, int]:
        """Write every node and relationship of this graph into a NEW database at ``dest``
        (a compacted copy: deleted rows leave nothing behind in it); returns rows per table."""
        counts: dict[str, int] = {}
        with KuzuGraph(dest) as new:
            for name, schema, _ in NODE_TABLES:
                cols = ", ".join(f"n.{f} AS {f}" for f in schema.names)
                table = self.arrow(f"MATCH (n:{name}) RETURN {cols}")
                counts[name] = new.copy_nodes(
                    name, table.cast(naive_utc(schema.empty_table()).schema)
                )
            pks = {name: pk for name, _, pk in NODE_TABLES}
            for rel, a, b in rel_pairs():
                table = self.arrow(
                    f"MATCH (x:{a})-[:{rel}]->(y:{b}) RETURN x.{pks[a]} AS f, y.{pks[b]} AS t"
                )
                counts[f"{rel}:{a}->{b}"] = new.copy_rels(rel, table, a, b)
        return counts

    def count(self, table_name: str) -> int:
        return int(self.rows(f"MATCH (n:{table_name}) RETURN count(n) AS n")[0]["n"])

    def close(self) -> None:
        """Close the connection and database (flushes the write-ahead log)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._db.close()
                self._conn = None

    def __enter__(self) -> KuzuGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

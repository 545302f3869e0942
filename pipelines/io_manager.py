"""The IO manager of the Dagster definitions: Arrow tables between assets as Parquet files.

Split from :mod:`speakerflow.pipelines.resources` (which re-exports it): resources are the
systems an asset talks to (store, chat model, embedder); this is where asset outputs live.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq

from speakerflow.settings import home_root

from . import constants as C

__all__ = ["ParquetIOManager"]


class ParquetIOManager(dg.ConfigurableIOManager):
    """Keeps Arrow tables that flow between assets as Parquet files.

    ``<base_dir>/<asset key path>/<partition>.parquet`` (``base_dir`` empty =
    ``<store home>/dagster-io``). Works across processes, so the multiprocess executor can
    hand a table from one step to the next. A run over a range of partitions (a backfill
    policy of several partitions per run) hands over ``{partition: table}``, one file each.
    """

    base_dir: str = ""

    def _path(self, context: dg.OutputContext | dg.InputContext, partition: str = "") -> Path:
        base = Path(self.base_dir) if self.base_dir else home_root() / C.IO_DIRNAME
        key = context.asset_key.path
        if context.has_asset_partitions and not partition:
            partition = context.asset_partition_key
        return base.joinpath(*key) / (f"{partition}.parquet" if partition else "table.parquet")

    @staticmethod
    def _partitions(context: dg.OutputContext | dg.InputContext) -> list[str]:
        """The partitions of a range run (more than one), else []."""
        if not context.has_asset_partitions:
            return []
        keys = list(context.asset_partition_keys)
        return keys if len(keys) > 1 else []

    def handle_output(
        self, context: dg.OutputContext, obj: pa.Table | dict[str, pa.Table] | None
    ) -> None:
        if obj is None:
            return
        many = self._partitions(context)
        tables = obj if many and isinstance(obj, dict) else {"": obj}
        for part, table in tables.items():
            if not isinstance(table, pa.Table):
                raise TypeError(
                    f"asset {context.asset_key.to_user_string()} returned "
                    f"{type(table).__name__}; the Parquet IO manager stores pyarrow Tables "
                    "(a Table, {partition: Table} in a run of several partitions, or "
                    "MaterializeResult)"
                )
            path = self._path(context, part)
            path.parent.mkdir(parents=True, exist_ok=True)
            # a name of its own per process: two runs of one partition may write at once
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{context.run_id[:8]}.tmp")
            pq.write_table(table, tmp)
            tmp.replace(path)

    def load_input(self, context: dg.InputContext) -> pa.Table | dict[str, pa.Table]:
        many = self._partitions(context)
        paths = {p: self._path(context, p) for p in many} or {"": self._path(context)}
        for path in paths.values():
            if not path.exists():
                raise dg.Failure(
                    f"{path} is missing: materialise {context.asset_key.to_user_string()} "
                    "for this partition first"
                )
        if not many:
            return pq.read_table(paths[""])
        return {p: pq.read_table(path) for p, path in paths.items()}

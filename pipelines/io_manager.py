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
    hand a table from one step to the next.
    """

    base_dir: str = ""

    def _path(self, context: dg.OutputContext | dg.InputContext) -> Path:
        base = Path(self.base_dir) if self.base_dir else home_root() / C.IO_DIRNAME
        key = context.asset_key.path
        name = (
            f"{context.asset_partition_key}.parquet"
            if context.has_asset_partitions
            else "table.parquet"
        )
        return base.joinpath(*key) / name

    def handle_output(self, context: dg.OutputContext, obj: pa.Table | None) -> None:
        if obj is None:
            return
        if not isinstance(obj, pa.Table):
            raise TypeError(
                f"asset {context.asset_key.to_user_string()} returned {type(obj).__name__}; "
                "the Parquet IO manager stores pyarrow Tables (return a Table or MaterializeResult)"
            )
        path = self._path(context)
        path.parent.mkdir(parents=True, exist_ok=True)
        # a name of its own per process: two runs of one partition may write at once
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{context.run_id[:8]}.tmp")
        pq.write_table(obj, tmp)
        tmp.replace(path)

    def load_input(self, context: dg.InputContext) -> pa.Table:
        path = self._path(context)
        if not path.exists():
            raise dg.Failure(
                f"{path} is missing: materialise {context.asset_key.to_user_string()} "
                "for this partition first"
            )
        return pq.read_table(path)

"""Groups as Dagster partitions, whoever ingested them.

The CLI (``speakerflow ingest``), the Python API and the server write groups straight into
the store home; the Dagster UI lists the ``groups`` dynamic partitions of the instance at
``$DAGSTER_HOME``. Two ways keep them the same world:

* :func:`register_groups` - called by ``speakerflow ingest`` after a successful ingest when
  ``DAGSTER_HOME`` is set: adds the ingested group ids to the instance's partitions.
* :func:`missing_partitions` - used by the inbox sensor on every tick: the store's groups
  that are not partitions yet (ingested while no ``DAGSTER_HOME`` was set, or by the API).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import dagster as dg

from speakerflow.pipelines.constants import GROUPS_PARTITION


def dagster_home() -> Path | None:
    """``$DAGSTER_HOME`` when it is set and names a folder (Dagster's own rule), else None."""
    value = os.environ.get("DAGSTER_HOME", "").strip()
    if not value:
        return None
    path = Path(value).expanduser()
    return path if path.is_dir() else None


def register_groups(groups: Iterable[str], instance: dg.DagsterInstance | None = None) -> list[str]:
    """Add ``groups`` to the ``groups`` dynamic partitions; return the ones that were new.

    ``instance`` defaults to the instance at ``$DAGSTER_HOME`` (opened and closed here);
    raises ``RuntimeError`` when neither is given.
    """
    wanted = sorted(set(groups))
    if instance is None:
        if dagster_home() is None:
            raise RuntimeError(
                "DAGSTER_HOME is not set to a folder: no Dagster instance to register groups in"
            )
        with dg.DagsterInstance.get() as inst:
            return register_groups(wanted, inst)
    known = set(instance.get_dynamic_partitions(GROUPS_PARTITION))
    new = [g for g in wanted if g not in known]
    if new:
        instance.add_dynamic_partitions(GROUPS_PARTITION, new)
    return new


def missing_partitions(store_groups: Iterable[str], known: Iterable[str]) -> list[str]:
    """The store's groups that are not partitions yet (sorted)."""
    return sorted(set(store_groups) - set(known))

"""``ingest_job`` on the Celery executor, as a code location of its own (not in ``workspace.yaml``).

Used by ``speakerflow bench backfill --executor celery`` and by deployments whose steps run
on Celery workers: the broker and result backend come from ``SPEAKERFLOW_CELERY_BROKER`` and
``SPEAKERFLOW_CELERY_BACKEND`` (default: redis on 127.0.0.1:6379, databases 0 and 1); start
workers with ``celery -A dagster_celery.app worker -Q dagster`` and a ``dagster_celery_config``
module naming the same broker (docs/scaling.md). Needs ``dagster-celery``.
"""

from __future__ import annotations

import dagster as dg
from dagster_celery import celery_executor

from speakerflow.pipelines.resources import default_resources
from speakerflow.settings import setting

from . import ingestion, memory
from .jobs import INGEST_ASSETS

BROKER = setting("celery_broker")
BACKEND = setting("celery_backend")

ingest_job = dg.define_asset_job(
    "ingest_job",
    selection=dg.AssetSelection.assets(*INGEST_ASSETS),
    executor_def=celery_executor.configured({"broker": BROKER, "backend": BACKEND}),
    description="One group (a backfill: up to 10 groups per run) on Celery workers: read its "
    "messages, append the verbatim track, run the Writer, check the memory.",
)

defs = dg.Definitions(
    assets=dg.load_assets_from_modules([ingestion, memory]),
    jobs=[ingest_job],
    resources=default_resources(),
)

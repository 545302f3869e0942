"""The Dagster definitions of speakerflow: one asset module per domain, jobs, resources.

Load with ``dagster dev -w workspace.yaml`` (see ``docs/dagster.md``). The example custom
pipeline ``my_memory`` is a code location of its own (``assets/example_definitions.py``).
:func:`ingest_job_def` and :func:`ingest_job_celery_def` are ``ingest_job`` with these
resources bound, for ``dg.reconstructable`` and the Celery executor.
"""

from __future__ import annotations

import dagster as dg

from speakerflow.pipelines.resources import default_resources

from . import evaluation, ingestion, knowledge, maintenance, memory, training
from .jobs import jobs, schedules, sensors

defs = dg.Definitions(
    assets=dg.load_assets_from_modules(
        [ingestion, memory, knowledge, maintenance, evaluation, training]
    ),
    jobs=jobs,
    schedules=schedules,
    sensors=sensors,
    resources=default_resources(),
)


def ingest_job_def() -> dg.JobDefinition:
    """``ingest_job`` with its resources bound, for ``dg.reconstructable`` (child processes
    of the multiprocess executor rebuild the job by importing this function)."""
    return defs.resolve_job_def("ingest_job")


def ingest_job_celery_def() -> dg.JobDefinition:
    """``ingest_job`` on the Celery executor (needs ``dagster-celery``; see docs/scaling.md).

    Broker and backend come from run config ``execution.config.broker/backend``; workers
    started with ``celery -A dagster_celery.app worker -Q dagster`` run its steps."""
    from dagster_celery import celery_executor

    return ingest_job_def().with_executor_def(celery_executor)

"""The Dagster definitions of speakerflow: one asset module per domain, jobs, resources.

Load with ``dagster dev -w workspace.yaml`` (see ``docs/dagster.md``). The example custom
pipeline ``my_memory`` is a code location of its own (``assets/example_definitions.py``).
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

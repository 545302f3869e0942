"""workspace.yaml: the shipped definitions and the example ``my_memory`` pipeline are two code
locations; the example's assets are not in the default definitions. The Celery definitions
(used by ``bench backfill --executor celery``) load on their own."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)


def _keys(defs: dg.Definitions) -> set[str]:
    return {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}


def test_my_memory_is_its_own_code_location():
    from speakerflow.assets.definitions import defs
    from speakerflow.assets.example_definitions import defs as example

    locations = yaml.safe_load((REPO / "workspace.yaml").read_text())["load_from"]
    modules = [loc["python_module"]["module_name"] for loc in locations]
    assert modules == ["speakerflow.assets.definitions", "speakerflow.assets.example_definitions"]
    assert len({loc["python_module"]["location_name"] for loc in locations}) == 2
    assert not any(k.startswith("my_memory") for k in _keys(defs))
    assert {"my_memory/detect", "my_memory/for_each_segment_id"} <= _keys(example)
    with dg.instance_for_test():
        dg.Definitions.validate_loadable(example)


def test_celery_definitions_hold_ingest_job_on_celery():
    pytest.importorskip("dagster_celery")
    from speakerflow.assets.celery_definitions import defs

    job = defs.resolve_job_def("ingest_job")
    assert job.executor_def.name == "celery"
    assert job.partitions_def.name == "groups"

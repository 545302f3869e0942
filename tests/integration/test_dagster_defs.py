"""The definitions load, ``dagster definitions validate -w workspace.yaml`` passes, and
they hold what the UI is expected to show."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(240)

GROUP_CHAIN = [
    "raw_messages",
    "verbatim_track",
    "writer_actions",
    "derived_memory",
    "entity_graph",
    "wiki_pages",
]


def test_definitions_load_with_assets_jobs_schedule_sensor_checks():
    from speakerflow.assets.definitions import defs

    # a fresh instance: Dagster keeps the last instance's definitions-state storage globally
    with dg.instance_for_test():
        dg.Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    expected = set(GROUP_CHAIN) | {
        "maintenance_tick",
        "group_catalog",
        "locomo_eval_report",
        "socialmem_eval_report",
        "harness_report",
        "writer_sft_dataset",
        "writer_sft_checkpoint",
        "writer_grpo_checkpoint",
        "writer_onnx",
    }
    assert expected <= keys
    for upstream, downstream in zip(GROUP_CHAIN, GROUP_CHAIN[1:], strict=False):
        assert dg.AssetKey(upstream) in graph.get(dg.AssetKey(downstream)).parent_keys
    assert graph.get(dg.AssetKey("raw_messages")).partitions_def.name == "groups"
    checks = {k.name for k in graph.asset_check_keys}
    assert checks == {
        "no_valid_after_invalid",
        "provenance_resolves",
        "one_head_per_chain",
        "owner_in_roster",
        "no_cross_group_reference",
    }
    assert {j.name for j in defs.jobs} >= {
        "ingest_job",
        "knowledge_job",
        "maintenance_job",
        "evaluation_job",
        "training_job",
    }
    assert defs.resolve_schedule_def("maintenance_schedule").job_name == "maintenance_job"
    assert defs.resolve_sensor_def("inbox_sensor").job_name == "ingest_job"


def test_dagster_definitions_validate_cli(tmp_path):
    dagster_home = tmp_path / "dh"
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(dagster_home),
        "SPEAKERFLOW_HOME": str(tmp_path / "home"),
    }
    dagster = Path(sys.executable).parent / "dagster"
    proc = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "All code locations passed validation" in proc.stdout + proc.stderr


def test_openai_key_comes_from_the_environment(monkeypatch):
    from speakerflow.pipelines.resources import BackendChatModel, default_resources

    monkeypatch.setenv("SPEAKERFLOW_WRITER_BACKEND", "openai")
    chat = default_resources()["chat_model"]
    assert isinstance(chat, BackendChatModel) and chat.kind == "openai"
    assert (
        isinstance(chat.api_key, dg.EnvVar)
        and chat.api_key.env_var_name == "SPEAKERFLOW_OPENAI_API_KEY"
    )

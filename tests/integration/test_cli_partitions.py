"""Groups ingested with the CLI are partitions of the Dagster instance at ``DAGSTER_HOME``
(registered on ingest), and the inbox sensor adds store groups that were ingested while no
``DAGSTER_HOME`` was set: the CLI and the UI show the same groups."""

from __future__ import annotations

import dagster as dg
import pytest

from speakerflow.assets.jobs import inbox_sensor
from speakerflow.graphs import Home
from speakerflow.pipelines.resources import HomeStore

pytestmark = pytest.mark.timeout(180)


def _dagster_home(path):
    path.mkdir()
    (path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return path


def test_cli_ingest_registers_groups_as_partitions(tmp_path, monkeypatch, capsys, ingest_sample):
    monkeypatch.setenv("DAGSTER_HOME", str(_dagster_home(tmp_path / "dh")))
    home = tmp_path / "home"
    for group in ("team", "crew"):
        assert ingest_sample(str(home), group) == 0
    out = capsys.readouterr().out
    assert "added 1 group(s) as partitions" in out
    with dg.DagsterInstance.get() as instance:
        assert (
            sorted(instance.get_dynamic_partitions("groups"))
            == sorted(Home(home).groups())
            == ["crew", "team"]
        )
    # ingesting a known group again adds nothing and says nothing about partitions
    assert ingest_sample(str(home)) == 0
    assert "partitions" not in capsys.readouterr().out


def test_sensor_adds_groups_ingested_without_dagster_home(tmp_path, monkeypatch, ingest_sample):
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    home = tmp_path / "home"
    assert ingest_sample(str(home)) == 0
    with dg.instance_for_test() as instance:
        assert instance.get_dynamic_partitions("groups") == []
        ctx = dg.build_sensor_context(
            instance=instance, resources={"store": HomeStore(home=str(home))}
        )
        result = inbox_sensor(ctx)
        assert (
            result.run_requests == []
        )  # the inbox is empty: nothing to ingest, the data is stored
        (add,) = result.dynamic_partitions_requests
        assert list(add.partition_keys) == ["team"]

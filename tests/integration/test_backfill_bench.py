"""``speakerflow bench backfill`` at a small size: 2 partitions through a real Dagster backfill
(launchPartitionBackfill + dagster-daemon's backfill daemon, QueuedRunCoordinator), 2 groups
per run (the ingest assets' BackfillPolicy: one run over the range of both groups; a range
run beside one-group runs is test_dagster_backfill_policy's) on the multiprocess executor,
against the sequential CLI loop; every group complete, the same record counts as the CLI
loop. The bench's Celery mode is the same backfill on the Celery executor, which
tests/integration/test_dagster_celery.py runs for real (a redis-server and a worker); it is
left out here because it doubles the default suite's slowest test (measure it with
``speakerflow bench backfill --modes cli,multiprocess,celery``)."""

from __future__ import annotations

import json

import pytest

from speakerflow.benchmarks.backfill import run, summary_table, write_groups
from speakerflow.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


def test_groups_are_written_as_jsonl(tmp_path):
    groups = write_groups(tmp_path, 2, 7)
    assert groups == ["bf0000", "bf0001"]
    rows = [json.loads(line) for line in (tmp_path / "bf0001.jsonl").read_text().splitlines()]
    assert (
        len(rows) == 7
        and {r["group_id"] for r in rows} == {"bf0001"}
        and rows[0]["ts"].endswith("Z")
    )


def test_backfill_against_the_cli_loop(tmp_path):
    modes = ["cli", "multiprocess"]
    report = run(
        partitions=2,
        messages=20,
        modes=tuple(modes),
        out=tmp_path / "r.json",
        workdir=tmp_path / "w",
        timeout_s=1200,
        partitions_per_run=2,
    )
    assert json.loads((tmp_path / "r.json").read_text())["complete"] is True
    for mode in modes:
        res = report["modes"][mode]
        runs = 2 if mode == "cli" else 1  # Dagster: groups bf0000-bf0001 in one range run
        assert res["runs"] == runs and res["failed"] == 0, (mode, res)
        assert res["partitions_done"] == 2 and res["partitions_per_minute"] > 0, (mode, res)
        assert res["groups_complete"] == 2 and res["records"] > 0, (mode, res)
        assert res["wall_s"] > 0 and res["runs_per_minute"] > 0
        if mode != "cli":
            assert res["partitions_covered"] == 2 and not res["timed_out"]
            assert res["groups_per_run_max"] == 2 and res["partitions_per_run"] == 2
            assert res["same_records_as_cli"], mode
    table = summary_table(report)
    assert table.splitlines()[0].split()[0] == "mode" and len(table.splitlines()) == 1 + len(modes)


def test_bench_backfill_rejects_an_unknown_mode(tmp_path, capsys):
    assert (
        main(
            [
                "bench",
                "backfill",
                "--partitions",
                "1",
                "--modes",
                "threads",
                "--workdir",
                str(tmp_path / "w"),
            ]
        )
        == 2
    )
    assert "unknown mode(s) ['threads']" in capsys.readouterr().err

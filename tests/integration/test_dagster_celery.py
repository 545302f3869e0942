"""The same ``ingest_job`` on the Celery executor (dagster-celery) with a redis-server the
test starts on 127.0.0.1 and one Celery worker: two groups at once, every step executed by
the worker, checks passing. Skipped where redis-server or dagster-celery is missing
(``.ci/run`` installs redis-server)."""

from __future__ import annotations

import os
import shutil
import subprocess

import dagster as dg
import pytest
from dagster_run_helpers import check_results, dagster_home, fill_inbox, launch_runs, store_state

from speakerflow.benchmarks.backfill_dagster import start_celery, stop_group

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]
REDIS = shutil.which("redis-server")


@pytest.fixture
def celery_worker(tmp_path):
    """redis-server on a free loopback port and one Celery worker on the ``dagster`` queue."""
    pytest.importorskip("dagster_celery")
    if not REDIS:
        pytest.skip("no redis-server (apt-get install redis-server; .ci/run does)")
    procs: list[subprocess.Popen] = []
    try:
        env = start_celery(tmp_path, dict(os.environ), 1, procs, tmp_path, concurrency=2)
        yield {
            "broker": env["SPEAKERFLOW_CELERY_BROKER"],
            "backend": env["SPEAKERFLOW_CELERY_BACKEND"],
            "log": tmp_path / "worker0.log",
        }
    finally:
        for proc in reversed(procs):
            stop_group(proc, wait_s=10)


def test_two_groups_on_the_celery_executor(celery_worker, tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home(tmp_path / "dh")))
    home = tmp_path / "home"
    groups = fill_inbox(home)
    monkeypatch.setenv("SPEAKERFLOW_HOME", str(home))
    extra = {
        "execution": {
            "config": {"broker": celery_worker["broker"], "backend": celery_worker["backend"]}
        }
    }
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("groups", groups)
        results = launch_runs(home, groups, job_fn="ingest_job_celery_def", extra=extra)
        for result in results:
            assert result["success"], result
            engine = [
                r.dagster_event.message or ""
                for r in instance.all_logs(
                    result["run_id"], of_type=dg.DagsterEventType.ENGINE_EVENT
                )
            ]
            ran_on_worker = [m for m in engine if "in celery worker" in m]
            assert len(ran_on_worker) == 4, engine  # every step went through the queue
            checks = check_results(instance, result["run_id"])
            assert len(checks) == 5 and all(checks.values()), checks
    for group in groups:
        state = store_state(home, group)
        assert state["messages"] and state["records"]
    assert "execute_plan" in celery_worker["log"].read_text()

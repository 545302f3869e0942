"""The same ``ingest_job`` on the Celery executor (dagster-celery) with a redis-server the
test starts on 127.0.0.1 and one Celery worker: two groups at once, every step executed by
the worker, checks passing. Skipped where redis-server or dagster-celery is missing
(``.ci/run`` installs redis-server)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster_run_helpers import check_results, dagster_home, fill_inbox, launch_runs, store_state

from speakerflow.benchmarks.backfill import free_port, stop_group

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]
REDIS = shutil.which("redis-server")


@pytest.fixture
def celery_worker(tmp_path):
    """redis-server on a free loopback port and one Celery worker on the ``dagster`` queue."""
    pytest.importorskip("dagster_celery")
    if not REDIS:
        pytest.skip("no redis-server (apt-get install redis-server; .ci/run does)")
    port = free_port()
    url = f"redis://127.0.0.1:{port}"
    procs = []
    try:
        procs.append(
            subprocess.Popen(
                [
                    REDIS,
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("redis-server did not start")
                time.sleep(0.2)
        cfg = tmp_path / "celery_cfg"
        cfg.mkdir()
        (cfg / "dagster_celery_config.py").write_text(
            f"broker_url = '{url}/0'\nresult_backend = '{url}/1'\n"
        )
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(cfg), os.environ.get("PYTHONPATH", "")]),
        }
        celery = Path(sys.executable).parent / "celery"
        log = (tmp_path / "worker.log").open("w")
        procs.append(
            subprocess.Popen(
                [
                    str(celery),
                    "-A",
                    "dagster_celery.app",
                    "worker",
                    "-Q",
                    "dagster",
                    "-c",
                    "2",
                    "--loglevel=INFO",
                    "--hostname",
                    f"sf-test-{port}@%h",
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        deadline = time.monotonic() + 60
        while "ready" not in (tmp_path / "worker.log").read_text():
            if procs[-1].poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"celery worker did not start:\n{(tmp_path / 'worker.log').read_text()[-2000:]}"
                )
            time.sleep(0.5)
        yield {"broker": f"{url}/0", "backend": f"{url}/1", "log": tmp_path / "worker.log"}
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

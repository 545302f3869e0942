"""The Dagster side of ``speakerflow bench backfill``: a partition backfill launched through
the webserver's GraphQL, run by ``dagster-daemon`` (multiprocess or Celery executor), the runs
and their steps read back from the instance."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from speakerflow.settings import env_name

from .percentiles import pct

BIN = Path(sys.executable).parent
DEFAULT_LOCATION = "speakerflow.assets.definitions"
CELERY_LOCATION = "speakerflow.assets.celery_definitions"
JOB = "ingest_job"
#: Groups per backfill run of the ingest assets (read by ``assets/common.py``; named here as
#: a string: benchmarks sit below the assets layer).
PARTITIONS_PER_RUN_ENV = env_name("backfill_partitions_per_run")
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
LAUNCH_BACKFILL = """
mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message stack }
    ... on PartitionSetNotFoundError { message }
    ... on UnauthorizedError { message }
  }
}
"""


def _dagster_home(path: Path, concurrency: int) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "dagster.yaml").write_text(
        "telemetry:\n  enabled: false\n"
        "run_coordinator:\n"
        "  module: dagster.core.run_coordinator\n"
        "  class: QueuedRunCoordinator\n"
        "  config:\n"
        f"    max_concurrent_runs: {concurrency}\n"
        "    dequeue_interval_seconds: 1\n"
    )
    return path


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_group(proc: subprocess.Popen, wait_s: float = 20) -> None:
    """SIGTERM, then SIGKILL, to the process group of ``proc`` (started with a new session)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=wait_s)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def _says_ready(log: Path) -> bool:
    return "ready" in log.read_text()


def _wait_for(
    what: str,
    ready: Callable[[], bool],
    timeout: float,
    proc: subprocess.Popen | None = None,
    logfile: Path | None = None,
) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
            tail = logfile.read_text()[-2000:] if logfile is not None and logfile.exists() else ""
            raise RuntimeError(f"{what} did not start in {timeout:.0f}s\n{tail}")
        time.sleep(0.5)


def run_dagster(
    mode: str,
    src: Path,
    work: Path,
    groups: list[str],
    concurrency: int,
    celery_workers: int,
    log: Callable[[str], None],
    timeout_s: float,
    partitions_per_run: int | None = None,
) -> dict[str, Any]:
    """One partition backfill of ``groups`` (``launchPartitionBackfill``) run by
    ``dagster-daemon``: its backfill daemon submits one run per range of
    ``partitions_per_run`` groups (None: the assets' default policy), the queued run
    coordinator launches them."""
    import dagster as dg

    home, dh = work / "home", _dagster_home(work / "dagster_home", concurrency)
    inbox = home / "inbox"
    inbox.mkdir(parents=True)
    for g in groups:
        shutil.copy(src / f"{g}.jsonl", inbox / f"{g}.jsonl")
    location = CELERY_LOCATION if mode == "celery" else DEFAULT_LOCATION
    env = _env(dh, home, partitions_per_run)
    procs: list[subprocess.Popen] = []
    logs = work / "logs"
    logs.mkdir()
    try:
        if mode == "celery":
            env.update(start_celery(work, env, celery_workers, procs, logs))
        daemon_log = logs / "daemon.log"
        os.environ["DAGSTER_HOME"] = str(dh)
        with dg.DagsterInstance.get() as instance:
            instance.add_dynamic_partitions(
                "groups", groups
            )  # creates the storage before the daemon opens it
            _start_daemon(instance, location, env, work, daemon_log, procs)
            log(f"{mode}: daemon up; launching the backfill of {len(groups)} partitions")
            start_wall = time.time()
            backfill_id = launch_backfill(location, groups, env, work)
            submitted = time.time() - start_wall
            order = {g: i for i, g in enumerate(groups)}
            runs, timed_out = _wait_for_runs(
                instance, backfill_id, groups, order, start_wall, timeout_s, mode, log
            )
            out = _report(instance, runs, groups, order, mode, start_wall, timed_out)
        out.update(
            submit_s=round(submitted, 2),
            partitions_per_run=partitions_per_run,
            concurrency=concurrency,
            home=str(home),
        )
        if mode == "celery":
            out["celery_workers"] = celery_workers
        return out
    finally:
        for p in reversed(procs):
            stop_group(p)


def _env(dh: Path, home: Path, partitions_per_run: int | None) -> dict[str, str]:
    """The daemon's (and its runs') environment: the Dagster and speakerflow homes, unbuffered
    output, and the partitions per run when given."""
    env = {
        **os.environ,
        "DAGSTER_HOME": str(dh),
        "SPEAKERFLOW_HOME": str(home),
        "PYTHONUNBUFFERED": "1",
    }
    if partitions_per_run is not None:
        env[PARTITIONS_PER_RUN_ENV] = str(partitions_per_run)
    return env


def _start_daemon(
    instance: Any,
    location: str,
    env: dict[str, str],
    work: Path,
    daemon_log: Path,
    procs: list[subprocess.Popen],
) -> None:
    """Start ``dagster-daemon`` on ``location`` (its own session, output to ``daemon_log``;
    added to ``procs`` at once, so the caller stops it even if it never comes up) and wait up
    to 180 s for its queued-run coordinator's heartbeat."""
    procs.append(
        subprocess.Popen(
            [str(BIN / "dagster-daemon"), "run", "-m", location],
            env=env,
            cwd=work,
            stdout=daemon_log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    )
    _wait_for(
        "dagster-daemon",
        lambda: "QUEUED_RUN_COORDINATOR" in instance.get_daemon_heartbeats(),
        180,
        procs[-1],
        daemon_log,
    )


def _wait_for_runs(
    instance: Any,
    backfill_id: str,
    groups: list[str],
    order: dict[str, int],
    start_wall: float,
    timeout_s: float,
    mode: str,
    log: Callable[[str], None],
) -> tuple[list[Any], bool]:
    """Poll the instance until the backfill's runs cover every group (or ``timeout_s``);
    returns the finished runs and whether it timed out."""
    from dagster._core.storage.dagster_run import DagsterRunStatus, RunsFilter

    done_states = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
    last = 0
    while True:
        runs = [
            r
            for r in instance.get_runs(RunsFilter(job_name=JOB))
            if r.tags.get("dagster/backfill") == backfill_id
        ]
        finished = [r for r in runs if r.status in done_states]
        covered = {g for r in finished for g in run_partitions(r.tags, groups, order)}
        if len(covered) >= len(groups):
            return finished, False
        if time.time() - start_wall > timeout_s:
            # stop here: the report holds the runs that finished and the time they took
            log(
                f"{mode}: timeout: {len(covered)}/{len(groups)} partitions in "
                f"{len(finished)} runs finished in {timeout_s:.0f}s"
            )
            return finished, True
        if len(covered) >= last + 10:
            last = len(covered) - len(covered) % 10
            log(
                f"{mode}: {len(covered)}/{len(groups)} partitions ({len(finished)} runs) "
                f"finished, {time.time() - start_wall:.0f}s"
            )
        time.sleep(1.0)


def _report(
    instance: Any,
    runs: list[Any],
    groups: list[str],
    order: dict[str, int],
    mode: str,
    start_wall: float,
    timed_out: bool,
) -> dict[str, Any]:
    """What the finished runs did: wall time, runs and partitions done, run times, the
    median seconds by step part and (Celery) how many steps ran on a worker."""
    import dagster as dg
    from dagster._core.storage.dagster_run import DagsterRunStatus

    stats = [instance.get_run_stats(r.run_id) for r in runs]
    ends = [s.end_time for s in stats if s.end_time]
    end_wall = time.time() if timed_out or not ends else max(ends)
    durations = [s.end_time - s.start_time for s in stats if s.end_time and s.start_time]
    failed = [r for r in runs if r.status != DagsterRunStatus.SUCCESS]
    partitions = {g for r in runs for g in run_partitions(r.tags, groups, order)}
    succeeded = sorted(
        g
        for r in runs
        if r.status == DagsterRunStatus.SUCCESS
        for g in run_partitions(r.tags, groups, order)
    )
    sizes = [len(run_partitions(r.tags, groups, order)) for r in runs]
    wall = end_wall - start_wall
    out: dict[str, Any] = {
        "wall_s": round(wall, 2),
        "runs": len(runs),
        "partitions_done": len(succeeded),
        "failed": len(failed),
        "runs_per_minute": round(len(runs) / wall * 60, 2),
        "partitions_per_minute": round(len(succeeded) / wall * 60, 2),
        "groups_per_run_max": max(sizes, default=0),
        "run_s_p50": pct(durations, 50),
        "run_s_p95": pct(durations, 95),
        "partitions_covered": len(partitions & set(groups)),
        "timed_out": timed_out,
        "median_seconds_by_part": step_breakdown(instance, [r.run_id for r in runs[:40]]),
        "_succeeded": succeeded,
    }
    if mode == "celery" and runs:
        engine = instance.all_logs(runs[0].run_id, of_type=dg.DagsterEventType.ENGINE_EVENT)
        out["steps_on_celery_workers_first_run"] = sum(
            "in celery worker" in ((e.dagster_event.message if e.dagster_event else None) or "")
            for e in engine
        )
    elif mode == "celery":
        out["steps_on_celery_workers_first_run"] = 0
    return out


def run_partitions(tags: Any, groups: list[str], order: dict[str, int]) -> list[str]:
    """The groups a run covers: its ``dagster/partition``, or its partition range (the
    groups were added as partitions in ``groups`` order)."""
    if tags.get("dagster/partition"):
        return [tags["dagster/partition"]]
    start, end = tags.get(RANGE_START), tags.get(RANGE_END)
    if start in order and end in order:
        return groups[order[start] : order[end] + 1]
    return []


def launch_backfill(location: str, groups: list[str], env: dict[str, str], cwd: Path) -> str:
    """Launch a partition backfill of ``ingest_job`` over ``groups`` as the UI does (the
    ``launchPartitionBackfill`` mutation, run by ``dagster-graphql`` against the code
    location); the daemon's backfill loop submits its runs. Returns the backfill id."""
    params = {
        "selector": {
            "partitionSetName": f"{JOB}_partition_set",
            "repositorySelector": {
                "repositoryLocationName": location,
                "repositoryName": "__repository__",
            },
        },
        "partitionNames": groups,
    }
    proc = subprocess.run(
        [
            str(BIN / "dagster-graphql"),
            "-m",
            location,
            "-t",
            LAUNCH_BACKFILL,
            "-v",
            json.dumps({"params": params}),
        ],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    try:
        result = json.loads(lines[-1])["data"]["launchPartitionBackfill"]
    except (IndexError, KeyError, TypeError, ValueError):
        result = None
    if proc.returncode != 0 or not result or "backfillId" not in result:
        raise RuntimeError(
            f"launching the backfill failed: {result}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        )
    return result["backfillId"]


def step_breakdown(instance: Any, run_ids: list[str]) -> dict[str, Any]:
    """Where a run's time goes, from its event log (median seconds over ``run_ids``):
    ``launch`` (run process start to PIPELINE_START), per step ``<step>.start`` (worker
    process start, or the Celery hand-off, to STEP_START) and ``<step>.run`` (STEP_START to
    STEP_SUCCESS)."""
    import dagster as dg

    parts: dict[str, list[float]] = {}
    for run_id in run_ids:
        first: dict[str, float] = {}
        for rec in instance.all_logs(run_id):
            ev = rec.dagster_event
            if ev is None:
                continue
            kind, step = ev.event_type, ev.step_key
            if kind == dg.DagsterEventType.RUN_STARTING:
                first["starting"] = rec.timestamp
            elif kind == dg.DagsterEventType.RUN_START and "starting" in first:
                parts.setdefault("launch", []).append(rec.timestamp - first["starting"])
            elif step and kind in (
                dg.DagsterEventType.STEP_WORKER_STARTING,
                dg.DagsterEventType.ENGINE_EVENT,
            ):
                first.setdefault(f"{step}.submit", rec.timestamp)
            elif step and kind == dg.DagsterEventType.STEP_START:
                first[f"{step}.start"] = rec.timestamp
                if f"{step}.submit" in first:
                    parts.setdefault(f"{step}.start", []).append(
                        rec.timestamp - first[f"{step}.submit"]
                    )
            elif step and kind == dg.DagsterEventType.STEP_SUCCESS and f"{step}.start" in first:
                parts.setdefault(f"{step}.run", []).append(rec.timestamp - first[f"{step}.start"])
    return {k: round(statistics.median(v), 2) for k, v in parts.items()}


def start_celery(
    work: Path,
    env: dict[str, str],
    workers: int,
    procs: list[subprocess.Popen],
    logs: Path,
    concurrency: int = 1,
) -> dict[str, str]:
    """redis-server on a free loopback port and ``workers`` Celery workers on the ``dagster``
    queue, ``concurrency`` processes each, logging to ``logs/worker<i>.log``; returns the
    broker/backend variables (``SPEAKERFLOW_CELERY_BROKER``/``_BACKEND``). The processes
    are appended to ``procs`` as they start, so the caller stops them (:func:`stop_group`)
    even when a later one fails to start (RuntimeError)."""
    redis = shutil.which("redis-server")
    if not redis:
        raise RuntimeError("no redis-server on PATH (make test-deps installs it)")
    port = free_port()
    url = f"redis://127.0.0.1:{port}"
    procs.append(
        subprocess.Popen(
            [redis, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    )

    def up() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    _wait_for("redis-server", up, 30, procs[-1])
    cfg = work / "celery_cfg"
    cfg.mkdir()
    (cfg / "dagster_celery_config.py").write_text(
        f"broker_url = '{url}/0'\nresult_backend = '{url}/1'\n"
    )
    extra = {"SPEAKERFLOW_CELERY_BROKER": f"{url}/0", "SPEAKERFLOW_CELERY_BACKEND": f"{url}/1"}
    wenv = {**env, **extra, "PYTHONPATH": os.pathsep.join([str(cfg), env.get("PYTHONPATH", "")])}
    for i in range(workers):
        wlog = logs / f"worker{i}.log"
        procs.append(
            subprocess.Popen(
                [
                    str(BIN / "celery"),
                    "-A",
                    "dagster_celery.app",
                    "worker",
                    "-Q",
                    "dagster",
                    "-c",
                    str(concurrency),
                    "--loglevel=INFO",
                    "--hostname",
                    f"sf-bf{i}-{port}@%h",
                ],
                env=wenv,
                cwd=work,
                stdout=wlog.open("w"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        _wait_for(f"celery worker {i}", partial(_says_ready, wlog), 120, procs[-1], wlog)
    return extra


# -- the whole benchmark --------------------------------------------------------------------------

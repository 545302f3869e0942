"""Many groups through Dagster: ``speakerflow bench backfill --partitions 200 --out r.json``.

The same ``N`` small groups (``--messages`` each, synthetic multi-party chat from
:func:`speakerflow.benchmarks.scale.synthetic_stream`) are ingested three ways, each into a
fresh store home, and timed end to end:

* ``cli`` - a sequential loop, one ``speakerflow ingest <group>.jsonl --writer rules``
  process per group (what a shell ``for`` loop does);
* ``multiprocess`` - a real Dagster backfill: the groups are added as ``groups`` partitions,
  a partition backfill of ``ingest_job`` is launched the way the UI launches one (the
  ``launchPartitionBackfill`` GraphQL mutation, through ``dagster-graphql``), and
  ``dagster-daemon``'s backfill daemon submits its runs to a ``QueuedRunCoordinator``
  (``--concurrency`` runs at a time): one run per ``--partitions-per-run`` groups, the
  ingest assets' ``BackfillPolicy``; each run executes on the shipped multiprocess executor
  (one process per step);
* ``celery`` - the same backfill of ``ingest_job`` from ``assets/celery_definitions.py``:
  each run's steps go through a redis-server broker to two Celery workers
  (``--celery-workers``, one process each).

The clock runs from the backfill's submission (daemon, workers and redis already up) to the
end of the last run. The report gives, per mode, total wall seconds, runs per minute,
groups (partitions) per minute, run seconds p50/p95 (Dagster's run stats) and checks that
every group holds its ``--messages`` messages and the same derived records as the CLI
loop.

The benchmark starts ``dagster``, ``dagster-daemon``, ``redis-server`` and ``celery``
as child processes: it never imports the assets layer (the import layers put benchmarks
below it), it names code locations by module.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
MODES = ("cli", "multiprocess", "celery")
DEFAULT_LOCATION = "speakerflow.assets.definitions"
CELERY_LOCATION = "speakerflow.assets.celery_definitions"
JOB = "ingest_job"
#: Groups per backfill run of the ingest assets (read by ``assets/common.py``; named here as
#: a string: benchmarks sit below the assets layer).
PARTITIONS_PER_RUN_ENV = "SPEAKERFLOW_BACKFILL_PARTITIONS_PER_RUN"
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


def write_groups(folder: Path, partitions: int, messages: int, seed: int = 11) -> list[str]:
    """``partitions`` JSONL files ``bf0000.jsonl`` ... of ``messages`` messages each (group id
    on every line); returns the group ids."""
    from speakerflow.benchmarks.scale import synthetic_stream

    folder.mkdir(parents=True, exist_ok=True)
    rows = synthetic_stream(
        partitions * messages, shape="one", seed=seed
    ).to_pylist()  # one stream, cut in groups
    groups = []
    for i in range(partitions):
        gid = f"bf{i:04d}"
        chunk = rows[i * messages : (i + 1) * messages]
        ids = {r["msg_id"] for r in chunk}
        with (folder / f"{gid}.jsonl").open("w", encoding="utf-8") as fh:
            for row in chunk:
                row = {
                    **row,
                    "group_id": gid,
                    "ts": row["ts"].isoformat().replace("+00:00", "Z"),
                    "reply_to": row["reply_to"] if row["reply_to"] in ids else None,
                }
                fh.write(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n")
        groups.append(gid)
    return groups


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))], 3)


def store_summary(home: Path, groups: list[str]) -> dict[str, dict[str, int]]:
    """Messages and derived records per group of ``home`` (read-only opens)."""
    from speakerflow.graphs import Home

    out = {}
    h = Home(home)
    stored = set(h.groups())
    for g in groups:
        if g not in stored:
            out[g] = {"messages": 0, "records": 0}
            continue
        with h.open(g) as store:
            out[g] = {"messages": store.messages().num_rows, "records": store.records().num_rows}
    return out


# -- the sequential CLI loop ---------------------------------------------------------------------
def run_cli(
    src: Path,
    home: Path,
    groups: list[str],
    log: Callable[[str], None],
    timeout_s: float = float("inf"),
) -> dict[str, Any]:
    env = {
        k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"
    }  # plain CLI: no Dagster instance
    per: list[float] = []
    failures = []
    timed_out = False
    start = time.perf_counter()
    for i, g in enumerate(groups):
        if time.perf_counter() - start > timeout_s:
            log(f"cli: timeout: {i}/{len(groups)} groups in {timeout_s:.0f}s")
            timed_out = True
            break
        t0 = time.perf_counter()
        proc = subprocess.run(
            [
                str(BIN / "speakerflow"),
                "ingest",
                str(src / f"{g}.jsonl"),
                "--format",
                "jsonl",
                "--writer",
                "rules",
                "--home",
                str(home),
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        per.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            failures.append({"group": g, "error": proc.stderr[-500:]})
        if (i + 1) % 10 == 0 or i + 1 == len(groups):
            log(f"cli: {i + 1}/{len(groups)} groups, {time.perf_counter() - start:.0f}s")
    wall = time.perf_counter() - start
    return {
        "wall_s": round(wall, 2),
        "runs": len(per),
        "partitions_done": len(per) - len(failures),
        "failed": len(failures),
        "timed_out": timed_out,
        "runs_per_minute": round(len(per) / wall * 60, 2),
        "partitions_per_minute": round((len(per) - len(failures)) / wall * 60, 2),
        "run_s_p50": _pct(per, 0.5),
        "run_s_p95": _pct(per, 0.95),
        "failures": failures[:5],
    }


# -- Dagster: instance, daemon, backfill ----------------------------------------------------------
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
    from dagster._core.storage.dagster_run import DagsterRunStatus, RunsFilter

    home, dh = work / "home", _dagster_home(work / "dagster_home", concurrency)
    inbox = home / "inbox"
    inbox.mkdir(parents=True)
    for g in groups:
        shutil.copy(src / f"{g}.jsonl", inbox / f"{g}.jsonl")
    location = CELERY_LOCATION if mode == "celery" else DEFAULT_LOCATION
    env = {
        **os.environ,
        "DAGSTER_HOME": str(dh),
        "SPEAKERFLOW_HOME": str(home),
        "PYTHONUNBUFFERED": "1",
    }
    if partitions_per_run is not None:
        env[PARTITIONS_PER_RUN_ENV] = str(partitions_per_run)
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
            log(f"{mode}: daemon up; launching the backfill of {len(groups)} partitions")
            start_wall = time.time()
            backfill_id = launch_backfill(location, groups, env, work)
            submitted = time.time() - start_wall
            done_states = {
                DagsterRunStatus.SUCCESS,
                DagsterRunStatus.FAILURE,
                DagsterRunStatus.CANCELED,
            }
            order = {g: i for i, g in enumerate(groups)}
            last = 0
            timed_out = False
            while True:
                runs = [
                    r
                    for r in instance.get_runs(RunsFilter(job_name=JOB))
                    if r.tags.get("dagster/backfill") == backfill_id
                ]
                finished = [r for r in runs if r.status in done_states]
                covered = {g for r in finished for g in run_partitions(r.tags, groups, order)}
                if len(covered) >= len(groups):
                    runs = finished
                    break
                if time.time() - start_wall > timeout_s:
                    # stop here: the report holds the runs that finished and the time they took
                    log(
                        f"{mode}: timeout: {len(covered)}/{len(groups)} partitions in "
                        f"{len(finished)} runs finished in {timeout_s:.0f}s"
                    )
                    runs, timed_out = finished, True
                    break
                if len(covered) >= last + 10:
                    last = len(covered) - len(covered) % 10
                    log(
                        f"{mode}: {len(covered)}/{len(groups)} partitions ({len(finished)} runs) "
                        f"finished, {time.time() - start_wall:.0f}s"
                    )
                time.sleep(1.0)
            stats = [instance.get_run_stats(r.run_id) for r in runs]
            ends = [s.end_time for s in stats if s.end_time]
            end_wall = max(ends) if ends else time.time()
            durations = [s.end_time - s.start_time for s in stats if s.end_time and s.start_time]
            if timed_out:
                end_wall = time.time()
            failed = [r for r in runs if r.status != DagsterRunStatus.SUCCESS]
            on_worker = 0
            if mode == "celery" and runs:
                engine = instance.all_logs(runs[0].run_id, of_type=dg.DagsterEventType.ENGINE_EVENT)
                on_worker = sum(
                    "in celery worker"
                    in ((e.dagster_event.message if e.dagster_event else None) or "")
                    for e in engine
                )
            partitions = {g for r in runs for g in run_partitions(r.tags, groups, order)}
            succeeded = sorted(
                g
                for r in runs
                if r.status == DagsterRunStatus.SUCCESS
                for g in run_partitions(r.tags, groups, order)
            )
            sizes = [len(run_partitions(r.tags, groups, order)) for r in runs]
            breakdown = step_breakdown(instance, [r.run_id for r in runs[:40]])
        wall = end_wall - start_wall
        out = {
            "wall_s": round(wall, 2),
            "runs": len(runs),
            "partitions_done": len(succeeded),
            "failed": len(failed),
            "runs_per_minute": round(len(runs) / wall * 60, 2),
            "partitions_per_minute": round(len(succeeded) / wall * 60, 2),
            "partitions_per_run": partitions_per_run,
            "groups_per_run_max": max(sizes, default=0),
            "submit_s": round(submitted, 2),
            "run_s_p50": _pct(durations, 0.5),
            "run_s_p95": _pct(durations, 0.95),
            "partitions_covered": len(partitions & set(groups)),
            "concurrency": concurrency,
            "timed_out": timed_out,
            "median_seconds_by_part": breakdown,
            "home": str(home),
            "_succeeded": succeeded,
        }
        if mode == "celery":
            out["celery_workers"] = celery_workers
            out["steps_on_celery_workers_first_run"] = on_worker
        return out
    finally:
        for p in reversed(procs):
            stop_group(p)


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
def run(
    partitions: int = 200,
    messages: int = 50,
    modes: tuple[str, ...] = MODES,
    concurrency: int = 2,
    celery_workers: int = 2,
    out: str | Path | None = None,
    workdir: str | Path | None = None,
    seed: int = 11,
    timeout_s: float = 7200,
    log: Callable[[str], None] = lambda _: None,
    partitions_per_run: int | None = None,
) -> dict[str, Any]:
    bad = [m for m in modes if m not in MODES]
    if partitions_per_run is not None and partitions_per_run < 1:
        raise ValueError(f"partitions_per_run must be >= 1, got {partitions_per_run}")
    if bad:
        raise ValueError(f"unknown mode(s) {bad}: choose from {', '.join(MODES)}")
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="sf-backfill-")
        workdir = tmp.name
    work = Path(workdir)
    saved_dh = os.environ.get("DAGSTER_HOME")
    try:
        src = work / "groups"
        groups = write_groups(src, partitions, messages, seed=seed)
        report: dict[str, Any] = {
            "partitions": partitions,
            "messages_per_group": messages,
            "modes": {},
            "cpus": os.cpu_count(),
            "load_avg_before": [round(x, 2) for x in os.getloadavg()],
            "command": f"speakerflow bench backfill --partitions {partitions} --messages "
            f"{messages} "
            f"--modes {','.join(modes)} --concurrency {concurrency} --celery-workers "
            f"{celery_workers}"
            + (f" --partitions-per-run {partitions_per_run}" if partitions_per_run else ""),
        }
        homes = {}
        for mode in modes:
            mwork = work / mode
            mwork.mkdir()
            load0 = os.getloadavg()[0]
            if mode == "cli":
                homes[mode] = mwork / "home"
                res = run_cli(src, homes[mode], groups, log, timeout_s)
            else:
                res = run_dagster(
                    mode,
                    src,
                    mwork,
                    groups,
                    concurrency,
                    celery_workers,
                    log,
                    timeout_s,
                    partitions_per_run,
                )
                homes[mode] = Path(res.pop("home"))
            res["load_avg_1m_before"] = round(load0, 2)
            res["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
            done = res.pop("_succeeded", None)  # Dagster: partitions whose run succeeded
            summary = store_summary(homes[mode], groups if done is None else done)
            res["groups_complete"] = sum(s["messages"] == messages for s in summary.values())
            res["records"] = sum(s["records"] for s in summary.values())
            res["_summary"] = summary
            report["modes"][mode] = res
            log(
                f"{mode}: {res['wall_s']}s wall, {res['runs_per_minute']} runs/min, "
                f"{res['partitions_per_minute']} partitions/min, {res['failed']} failed"
            )
            if out:  # after each mode, so a long run keeps what it measured
                _write(out, report)
        base = report["modes"].get("cli")
        for mode, res in report["modes"].items():
            if base is not None and mode != "cli":
                both = [
                    g
                    for g, v in res["_summary"].items()
                    if v["messages"] == messages
                    and base["_summary"].get(g, {}).get("messages") == messages
                ]
                res["compared_with_cli"] = len(both)
                res["same_records_as_cli"] = all(
                    res["_summary"][g] == base["_summary"][g] for g in both
                )
                res["speedup_vs_cli"] = (
                    round(res["partitions_per_minute"] / base["partitions_per_minute"], 3)
                    if base["partitions_per_minute"]
                    else None
                )  # groups per minute against the loop's
        for res in report["modes"].values():
            res.pop("_summary")
        report["complete"] = True
        if out:
            _write(out, report)
        return report
    finally:
        if saved_dh is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = saved_dh
        if tmp is not None:
            tmp.cleanup()


def _write(out: str | Path, report: dict[str, Any]) -> None:
    view = {
        **report,
        "modes": {
            m: {k: v for k, v in r.items() if k != "_summary"} for m, r in report["modes"].items()
        },
    }
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(view, indent=2) + "\n")


def summary_table(report: dict[str, Any]) -> str:
    """The report as a plain-text table (one line per mode)."""
    cols = (
        "mode",
        "runs",
        "failed",
        "wall_s",
        "runs/min",
        "groups/min",
        "run_s_p50",
        "run_s_p95",
        "complete",
        "vs_cli",
    )
    rows = [cols]
    for mode, r in report["modes"].items():
        rows.append(
            (
                mode,
                r["runs"],
                r["failed"],
                r["wall_s"],
                r["runs_per_minute"],
                r["partitions_per_minute"],
                r["run_s_p50"],
                r["run_s_p95"],
                f"{r['groups_complete']}/{report['partitions']}",
                f"{r['speedup_vs_cli']}x" if r.get("speedup_vs_cli") is not None else "-",
            )
        )
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(cols))]
    return "\n".join(
        "  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)) for row in rows
    )


def add_bench(bsub: argparse._SubParsersAction) -> None:
    """``speakerflow bench backfill`` (registered by ``speakerflow/cli/bench.py``)."""
    p = bsub.add_parser(
        "backfill",
        help="N group partitions: Dagster backfill (multiprocess, Celery) against a "
        "sequential CLI loop",
    )
    p.add_argument(
        "--partitions", type=int, default=200, help="groups (= partitions) to ingest (default 200)"
    )
    p.add_argument("--messages", type=int, default=50, help="messages per group (default 50)")
    p.add_argument(
        "--modes",
        default=",".join(MODES),
        help="comma-separated: cli, multiprocess, celery (default all)",
    )
    p.add_argument(
        "--concurrency", type=int, default=2, help="Dagster runs at a time (QueuedRunCoordinator)"
    )
    p.add_argument(
        "--celery-workers", type=int, default=2, help="Celery worker processes (one slot each)"
    )
    p.add_argument(
        "--workdir",
        default=None,
        help="keep the homes, instances and logs here (default: a temp folder)",
    )
    p.add_argument(
        "--partitions-per-run",
        type=int,
        default=None,
        help="groups per Dagster backfill run (the ingest assets' BackfillPolicy; default: the "
        "assets' own, 10); 1 = one run per group",
    )
    p.add_argument("--seed", type=int, default=11, help="seed of the synthetic groups")
    p.add_argument(
        "--timeout",
        type=float,
        default=7200,
        help="seconds a backfill may run; then the runs finished so far are reported (timed_out: "
        "true)",
    )
    p.add_argument("--out", default=None, help="write the report JSON here")
    p.add_argument(
        "--json", action="store_true", help="print the report as JSON instead of a table"
    )
    p.set_defaults(func=_run_cli)


def _run_cli(args: argparse.Namespace) -> int:
    report = run(
        args.partitions,
        args.messages,
        modes=tuple(m for m in args.modes.split(",") if m),
        concurrency=args.concurrency,
        celery_workers=args.celery_workers,
        out=args.out,
        workdir=args.workdir,
        seed=args.seed,
        timeout_s=args.timeout,
        log=lambda line: print(line, file=sys.stderr, flush=True),
        partitions_per_run=args.partitions_per_run,
    )
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(summary_table(report))
        if args.out:
            print(f"report: {args.out}")
    return 0

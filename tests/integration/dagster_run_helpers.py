"""Helpers of the Dagster run tests: launch ``ingest_job`` runs in their own processes,
read back store contents, check results and run windows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg

from speakerflow.graphs import Home
from speakerflow.settings import BUNDLED_SAMPLE

REPO = Path(__file__).resolve().parents[2]
NETWORK = REPO.parent / "shared" / "data" / "socialmem" / "training" / "social_grp_0d1e2f3a.json"


def dagster_home(path: Path) -> Path:
    """A DAGSTER_HOME with telemetry off."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return path


def fill_inbox(home: Path) -> list[str]:
    """The bundled team chat and a SocialMemBench network (or a second copy of the sample)."""
    inbox = home / "inbox"
    inbox.mkdir(parents=True)
    shutil.copy(BUNDLED_SAMPLE, inbox / "team.jsonl")
    if NETWORK.exists():
        (inbox / "socialmem").mkdir()
        shutil.copy(NETWORK, inbox / "socialmem" / NETWORK.name)
        return ["team", "grp_0d1e2f3a"]
    shutil.copy(BUNDLED_SAMPLE, inbox / "crew.jsonl")
    return ["team", "crew"]


#: One run of ingest_job for one group, in its own process (as a run launcher would start it).
RUN_SCRIPT = """
import json, sys
import dagster as dg
from speakerflow.assets import definitions
home, group, job_fn, extra = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
with dg.DagsterInstance.get() as instance:
    result = dg.execute_job(dg.reconstructable(getattr(definitions, job_fn)), instance=instance,
                            run_config={"resources": {"store": {"config": {"home": home}}}, **extra},
                            tags={"dagster/partition": group})
    failures = [e.message for e in result.all_events if e.is_failure]
    print(json.dumps({"run_id": result.run_id, "success": result.success, "failures": failures}))
"""  # noqa: E501


def _launch(home: Path, group: str, job_fn: str, extra: dict) -> subprocess.Popen:
    env = {**os.environ, "SPEAKERFLOW_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-c", RUN_SCRIPT, str(home), group, job_fn, json.dumps(extra)],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def launch_runs(
    home: Path, groups: list[str], job_fn: str = "ingest_job_def", extra: dict | None = None
) -> list[dict]:
    """Start one run of ``definitions.<job_fn>()`` per group at once, each in its own process;
    wait for all (bounded); return their summaries (group, run_id, success, failures)."""
    procs = [_launch(home, g, job_fn, extra or {}) for g in groups]
    out = []
    for group, proc in zip(groups, procs, strict=True):
        try:
            stdout, stderr = proc.communicate(timeout=360)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise AssertionError(f"run of {group!r} did not finish in 360 s") from None
        lines = [line for line in stdout.splitlines() if line.startswith("{")]
        assert proc.returncode == 0 and lines, f"{group}: rc {proc.returncode}\n{stderr[-3000:]}"
        out.append({"group": group, **json.loads(lines[-1])})
    return out


def store_state(home: Path, group: str) -> dict:
    with Home(home).open(group) as store:
        records = store.records()
        return {
            "messages": sorted(store.messages()["msg_id"].to_pylist()),
            "records": sorted(
                zip(
                    records["entry_id"].to_pylist(),
                    records["owner"].to_pylist(),
                    records["layer"].to_pylist(),
                    records["content"].to_pylist(),
                    [r or "" for r in records["supersedes"].to_pylist()],
                    strict=True,
                )
            ),
        }


def run_window(instance: dg.DagsterInstance, run_id: str) -> tuple[float, float]:
    stats = instance.get_run_stats(run_id)
    return stats.start_time, stats.end_time


def check_results(instance: dg.DagsterInstance, run_id: str) -> dict[str, bool]:
    out = {}
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
        data = record.dagster_event.event_specific_data
        out[data.check_name] = data.passed
    return out

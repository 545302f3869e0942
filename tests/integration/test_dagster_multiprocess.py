"""Two groups ingested at once by ``ingest_job`` on the multiprocess executor: no lock
errors, the runs overlap in time, the asset checks pass, and the stores hold exactly what
a sequential run produces. Then two runs of the *same* group at once: the second waits
for the group's writer lock and writes nothing twice.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from speakerflow.graphs import Home
from speakerflow.pipelines.jobs import ingest_job_def
from speakerflow.settings import BUNDLED_SAMPLE

REPO = Path(__file__).resolve().parents[2]
NETWORK = REPO.parent / "shared" / "data" / "socialmem" / "training" / "social_grp_0d1e2f3a.json"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]


def _inbox(home: Path) -> list[str]:
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
from speakerflow.pipelines.jobs import ingest_job_def
home, group = sys.argv[1], sys.argv[2]
with dg.DagsterInstance.get() as instance:
    result = dg.execute_job(dg.reconstructable(ingest_job_def), instance=instance,
                            run_config={"resources": {"store": {"config": {"home": home}}}},
                            tags={"dagster/partition": group})
    failures = [e.message for e in result.all_events if e.is_failure]
    print(json.dumps({"run_id": result.run_id, "success": result.success, "failures": failures}))
"""


def _launch(home: Path, group: str) -> subprocess.Popen:
    env = {**os.environ, "SPEAKERFLOW_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-c", RUN_SCRIPT, str(home), group], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _runs(home: Path, groups: list[str]) -> list[dict]:
    """Start one run per group at once, wait for all (bounded), return their summaries."""
    procs = [_launch(home, g) for g in groups]
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


def _store_state(home: Path, group: str) -> dict:
    with Home(home).open(group) as store:
        records = store.records()
        return {
            "messages": sorted(store.messages()["msg_id"].to_pylist()),
            "records": sorted(zip(records["entry_id"].to_pylist(), records["owner"].to_pylist(),
                                  records["layer"].to_pylist(), records["content"].to_pylist(),
                                  [r or "" for r in records["supersedes"].to_pylist()], strict=True)),
        }


def _window(instance: dg.DagsterInstance, run_id: str) -> tuple[float, float]:
    stats = instance.get_run_stats(run_id)
    return stats.start_time, stats.end_time


def _checks(instance: dg.DagsterInstance, run_id: str) -> dict[str, bool]:
    out = {}
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
        data = record.dagster_event.event_specific_data
        out[data.check_name] = data.passed
    return out


def test_two_groups_in_parallel_match_a_sequential_run(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    (tmp_path / "dh").mkdir()
    (tmp_path / "dh" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    parallel_home, sequential_home = tmp_path / "parallel", tmp_path / "sequential"
    groups = _inbox(parallel_home)
    _inbox(sequential_home)
    monkeypatch.setenv("SPEAKERFLOW_HOME", str(parallel_home))  # the Parquet IO manager's base

    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("groups", groups)
        results = _runs(parallel_home, groups)
        for result in results:
            assert result["success"], result
            assert not any("lock" in (m or "").lower() for m in result["failures"])
            run = instance.get_run_by_id(result["run_id"])
            assert run.tags["dagster/partition"] == result["group"]
            # every step ran in its own process: the multiprocess executor
            workers = instance.all_logs(result["run_id"], of_type=dg.DagsterEventType.STEP_WORKER_STARTED)
            assert len(workers) == 4
            checks = _checks(instance, result["run_id"])
            assert len(checks) == 5 and all(checks.values()), checks
        (a0, a1), (b0, b1) = (_window(instance, r["run_id"]) for r in results)
        assert a0 < b1 and b0 < a1, "the two groups' runs did not overlap in time"

        # the same partitions one after the other, in one process, in a second home
        job = ingest_job_def()
        for group in groups:
            result = job.execute_in_process(
                partition_key=group, instance=instance,
                run_config={"resources": {"store": {"config": {"home": str(sequential_home)}},
                                          "table_io": {"config": {"base_dir": str(sequential_home / "io")}}}})
            assert result.success

    for group in groups:
        par, seq = _store_state(parallel_home, group), _store_state(sequential_home, group)
        assert par["messages"] and par["records"], f"{group}: nothing ingested"
        assert par["messages"] == seq["messages"]
        only_par = sorted(set(par["records"]) - set(seq["records"]))
        only_seq = sorted(set(seq["records"]) - set(par["records"]))
        assert not only_par and not only_seq, f"{group}: parallel-only {only_par[:3]}, sequential-only {only_seq[:3]}"
    team = _store_state(parallel_home, "team")
    assert len(team["messages"]) == sum(1 for line in BUNDLED_SAMPLE.read_text().splitlines() if line.strip())
    assert any(owner == "GROUP" for _, owner, *_ in team["records"])
    assert any(sup for *_, sup in team["records"]), "the sample's changes of mind make update chains"


def test_same_group_twice_at_once_is_serialised(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    (tmp_path / "dh").mkdir()
    (tmp_path / "dh" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    home = tmp_path / "home"
    _inbox(home)
    monkeypatch.setenv("SPEAKERFLOW_HOME", str(home))
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("groups", ["team"])
    results = _runs(home, ["team", "team"])
    assert all(r["success"] for r in results), results
    state = _store_state(home, "team")
    assert len(state["messages"]) == len(set(state["messages"]))
    ids = [r[0] for r in state["records"]]
    assert len(ids) == len(set(ids)), "a record was written twice"

"""A CLI ingest during a Dagster run of the same group (real processes, on-disk store).

Both take the group's writer lock (graphs.store): the CLI ingest either waits for the
Dagster run and then lands its batch, or -- with a short wait -- fails with one clear
GroupBusyError line and writes nothing. Nothing of either batch is lost or doubled, even
when the Dagster run dies mid-batch (the next writable open rolls its batch forward).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dagster_run_helpers import REPO, RUN_SCRIPT, dagster_home

from speakerflow.graphs import Home
from speakerflow.graphs.audit import audit
from speakerflow.settings import BUNDLED_SAMPLE

pytestmark = pytest.mark.timeout(600)
CLI = "import sys; from speakerflow.cli import main; sys.exit(main())"


def _second_file(tmp: Path) -> tuple[Path, set[str]]:
    """The bundled chat again with other message ids and a day later: a second batch of group
    team."""
    rows = [json.loads(x) for x in BUNDLED_SAMPLE.read_text().splitlines() if x.strip()]
    for r in rows:
        r["msg_id"] = "cli-" + r["msg_id"]
        r["session_id"] = "cli-" + r["session_id"]
        r["ts"] = r["ts"].replace("2026-", "2027-") if isinstance(r.get("ts"), str) else r["ts"]
    path = tmp / "second.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, {r["msg_id"] for r in rows}


def _setup(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    home = tmp_path / "home"
    (home / "inbox").mkdir(parents=True)
    (home / "inbox" / "team.jsonl").write_text(BUNDLED_SAMPLE.read_text())
    env = {
        **os.environ,
        "SPEAKERFLOW_HOME": str(home),
        "DAGSTER_HOME": str(dagster_home(tmp_path / "dh")),
    }
    import dagster as dg

    os.environ["DAGSTER_HOME"] = env["DAGSTER_HOME"]
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("groups", ["team"])
    return home, env


def _dagster_run(home: Path, env: dict[str, str], **extra_env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", RUN_SCRIPT, str(home), "team", "ingest_job_def", "{}"],
        env={**env, **extra_env},
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )  # its own process group: the steps too


def _cli_ingest(
    home: Path, env: dict[str, str], path: Path, wait: str
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            CLI,
            "ingest",
            str(path),
            "--format",
            "jsonl",
            "--group",
            "team",
            "--home",
            str(home),
        ],
        env={**env, "SPEAKERFLOW_LOCK_WAIT": wait},
        capture_output=True,
        text=True,
        timeout=400,
    )


def _wait_for(path: Path, name: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and name in path.read_text().split():
            return
        assert proc.poll() is None, (
            f"the Dagster run ended before {name}: {proc.stderr.read()[-3000:]}"
        )
        time.sleep(0.2)
    raise AssertionError(f"the Dagster run never reached {name}")


def _state(home: Path) -> tuple[list[str], dict]:
    with Home(home).open("team", writable=True) as s:
        return s.messages()["msg_id"].to_pylist(), audit(s)


def test_cli_ingest_waits_for_the_dagster_run_then_lands(tmp_path):
    home, env = _setup(tmp_path)
    second, second_ids = _second_file(tmp_path)
    log = tmp_path / "steps.log"
    run = _dagster_run(home, env, SPEAKERFLOW_FAILPOINT_LOG=str(log))
    _wait_for(log, "messages.staged", run)  # the run holds the group now
    cli = _cli_ingest(home, env, second, wait="300")
    out, err = run.communicate(timeout=400)
    assert run.returncode == 0 and json.loads(out.splitlines()[-1])["success"], err[-3000:]
    assert cli.returncode == 0, cli.stderr[-3000:]
    ids, problems = _state(home)
    first_ids = {
        json.loads(x)["msg_id"] for x in BUNDLED_SAMPLE.read_text().splitlines() if x.strip()
    }
    assert (
        len(ids) == len(set(ids)) == len(first_ids) + len(second_ids)
    )  # nothing lost, nothing doubled
    assert set(ids) == first_ids | second_ids
    assert (problems["duplicated"], problems["orphaned"], problems["mismatched"]) == (0, 0, 0), (
        problems
    )


def test_cli_ingest_fails_clearly_while_the_run_holds_the_group_and_nothing_is_lost(tmp_path):
    home, env = _setup(tmp_path)
    second, second_ids = _second_file(tmp_path)
    run = _dagster_run(
        home, env, SPEAKERFLOW_FAILPOINT="messages.indexed", SPEAKERFLOW_FAILPOINT_ACTION="pause"
    )
    end = time.monotonic() + 300
    line = ""
    while time.monotonic() < end and "paused at" not in line:
        line = run.stderr.readline()
        assert line or run.poll() is None, "the Dagster run ended before the pause"
    assert "paused at messages.indexed" in line
    try:
        busy = _cli_ingest(home, env, second, wait="2")
        assert busy.returncode != 0
        assert "being written by another process" in busy.stderr and "waited 2 s" in busy.stderr, (
            busy.stderr
        )
        assert len([x for x in busy.stderr.splitlines() if x.strip()]) <= 3, (
            busy.stderr
        )  # a clear message
    finally:
        os.killpg(run.pid, signal.SIGKILL)  # the run (and its step process) dies mid-batch
        run.communicate(timeout=60)
    with Home(home).open("team") as reader:  # the CLI wrote nothing; readers see no half batch
        assert not set(reader.messages()["msg_id"].to_pylist()) & second_ids
    again = _cli_ingest(home, env, second, wait="30")
    assert again.returncode == 0, again.stderr[-3000:]
    ids, problems = _state(home)
    first_ids = {
        json.loads(x)["msg_id"] for x in BUNDLED_SAMPLE.read_text().splitlines() if x.strip()
    }
    assert set(ids) == first_ids | second_ids and len(ids) == len(
        set(ids)
    )  # the run's batch rolled forward
    assert (problems["duplicated"], problems["orphaned"], problems["mismatched"]) == (0, 0, 0), (
        problems
    )

"""Crash consistency: a writer SIGKILLed at every named step boundary of ingest + Writer is
completed or rolled back on the next open, and then agrees with a clean run."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from speakerflow.graphs import Home
from speakerflow.graphs.audit import audit
from speakerflow.settings import BUNDLED_SAMPLE

CLI = "import sys; from speakerflow.cli import main; sys.exit(main())"
STEPS = [
    "messages.staged",
    "messages.manifest",
    "messages.indexed",
    "messages.renamed",
    "messages.roster",
    "records.manifest",
    "records.indexed",
    "records.committed",
    "records.watermark",
]


def _ingest(home, failpoint=None):
    env = {**os.environ, "SPEAKERFLOW_HOME": str(home)}
    env.pop("SPEAKERFLOW_FAILPOINT", None)
    if failpoint:
        env["SPEAKERFLOW_FAILPOINT"] = failpoint
    return subprocess.run(
        [
            sys.executable,
            "-c",
            CLI,
            "ingest",
            str(BUNDLED_SAMPLE),
            "--format",
            "jsonl",
            "--group",
            "team",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _state(home):
    with Home(home).open("team", writable=True) as s:
        a = audit(s)
        recs = sorted(
            (r["entry_id"], r["content"], r["superseded_by"]) for r in s.records().to_pylist()
        )
        return a, sorted(s.messages()["msg_id"].to_pylist()), recs, s.roster()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    home = tmp_path_factory.mktemp("ref")
    assert _ingest(home).returncode == 0
    return _state(home)


@pytest.mark.parametrize("step", STEPS)
def test_kill_at_step_recovers_to_the_clean_state(tmp_path, reference, step):
    home = tmp_path / "home"
    run = _ingest(home, step)
    assert run.returncode == -9, run.stderr[-2000:]  # SIGKILL
    with Home(home).open("team", writable=True) as s:
        assert s.recovered is not None or step.endswith(("staged", "done"))
        a = audit(s)
    assert (a["duplicated"], a["orphaned"], a["mismatched"], a["pending_batch"]) == (
        0,
        0,
        0,
        False,
    ), a
    assert _ingest(home).returncode == 0  # finish the interrupted work
    a, msgs, recs, roster = _state(home)
    ref_a, ref_msgs, ref_recs, ref_roster = reference
    assert (a["duplicated"], a["orphaned"], a["mismatched"]) == (0, 0, 0), a
    assert (msgs, recs, roster) == (ref_msgs, ref_recs, ref_roster)


def test_reader_hides_a_pending_batch(tmp_path):
    home = tmp_path / "home"
    assert _ingest(home, "messages.renamed").returncode == -9
    with Home(home).open("team") as reader:  # read-only: no recovery, the batch stays hidden
        assert reader.pending_batch() is not None
        assert reader.messages().num_rows == 0
        assert reader.search("Vienna", 5) == []
    with Home(home).open("team", writable=True) as s:
        assert s.recovered["action"] == "rolled forward"
    with Home(home).open("team") as reader:
        assert reader.messages().num_rows == 32 and reader.search("Vienna", 5)


def test_reader_hides_records_of_an_unfinished_batch(tmp_path):
    home = tmp_path / "home"
    assert (
        _ingest(home, "records.committed").returncode == -9
    )  # in Kuzu, index and watermark not yet done
    with Home(home).open("team") as reader:
        assert reader.pending_batch()["kind"] == "records"
        assert reader.records().num_rows == 0
    with Home(home).open("team", writable=True) as s:
        assert s.recovered["action"] == "rolled forward" and s.records().num_rows > 0


def _hold_lock(root, ready, release):
    from speakerflow.graphs import Home

    with Home(root).open("team", writable=True):
        ready.set()
        release.wait(120)


def test_second_writer_waits_then_fails_clearly_or_gets_the_lock(tmp_path):
    import multiprocessing as mp

    from speakerflow.graphs import GroupBusyError

    ctx = mp.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(str(tmp_path), ready, release))
    holder.start()
    assert ready.wait(120)
    with pytest.raises(GroupBusyError, match=r"waited 0.3 s"):
        Home(tmp_path).open("team", writable=True, wait_s=0.3)
    release.set()  # the holder closes; a waiting writer then gets the lock
    with Home(tmp_path).open("team", writable=True, wait_s=120) as s:
        assert s.writable
    holder.join(60)

"""README's "Use the Dagster UI" section, word for word, in a fresh clone of the repository.

The two bash blocks of the section are taken from the clone's README and run as written,
with two changes a test needs: ``dagster dev`` gets ``-p <free port>`` (3000 may be taken)
and the clone's ``.venv`` is a link to the venv running the tests (a fresh ``make`` is
minutes of installs). Then: the CLI-ingested group ``team`` and the inbox group ``crew``
are partitions of the instance at ``$DAGSTER_HOME`` and of the UI (GraphQL, what the asset
page reads), the sensor's ``ingest_job`` run for ``crew`` succeeds, and Ctrl-C (SIGINT)
stops ``dagster dev``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def readme_blocks(readme: str) -> list[list[str]]:
    """The bash blocks of the section "## Use the Dagster UI", as lists of lines."""
    section = readme.split("## Use the Dagster UI", 1)[1].split("\n## ", 1)[0]
    return [block.strip().splitlines() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


def _graphql(port: int, query: str) -> dict:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def _ui_partitions(port: int) -> list[str]:
    data = _graphql(
        port,
        '{ assetNodeOrError(assetKey: {path: ["derived_memory"]}) '
        "{ ... on AssetNode { partitionKeys } } }",
    )
    return (data.get("data", {}).get("assetNodeOrError") or {}).get("partitionKeys") or []


def _stop_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGINT, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_readme_blocks_are_found():
    blocks = readme_blocks((REPO / "README.md").read_text())
    assert len(blocks) == 2
    assert any("DAGSTER_HOME=" in line for line in blocks[0]) and any(
        "dagster dev" in line for line in blocks[0]
    )
    assert any("Ctrl-C" in line for line in blocks[0])  # how to stop it
    assert any("inbox/" in line for line in blocks[1])


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
def test_readme_dagster_section_in_a_fresh_clone(tmp_path):
    clone = tmp_path / "speakerflow"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=120)
    (clone / ".venv").symlink_to(Path(sys.prefix))  # the venv running the tests
    first, second = readme_blocks((clone / "README.md").read_text())
    port = _free_port()
    script = []
    for line in first:
        if "dagster dev" in line:
            command = line.split("#", 1)[0].strip()
            line = f"exec {command} -p {port}"
        script.append(line)
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "SPEAKERFLOW_HOME")}
    log = (tmp_path / "dev.log").open("w")
    dev = subprocess.Popen(
        ["bash", "-ec", "\n".join(script)],
        cwd=clone,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        # as in a terminal, Ctrl-C reaches a process whose SIGINT is not ignored: a test run
        # started in the background of a non-interactive shell inherits SIGINT ignored, and
        # dagster dev (Python keeps an ignored SIGINT ignored) then never stops on it
        preexec_fn=_default_sigint,
    )
    try:
        deadline = time.monotonic() + 420
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5).close()
                break
            except OSError:
                assert dev.poll() is None, (tmp_path / "dev.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "dagster dev did not answer"
                time.sleep(2)
        assert (clone / ".speakerflow" / "inbox").is_dir()  # the ingest made it: the cp below works

        proc = subprocess.run(
            ["bash", "-ec", "\n".join(second)],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        assert (clone / ".speakerflow" / "inbox" / "crew.jsonl").exists()

        import dagster as dg
        from dagster._core.storage.dagster_run import DagsterRunStatus, RunsFilter

        old = os.environ.get("DAGSTER_HOME")
        os.environ["DAGSTER_HOME"] = str(clone / ".dagster")
        try:
            deadline = time.monotonic() + 480
            with dg.DagsterInstance.get() as instance:
                while True:
                    runs = instance.get_runs(RunsFilter(tags={"dagster/partition": "crew"}))
                    done = [
                        r
                        for r in runs
                        if r.status in (DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE)
                    ]
                    if done:
                        break
                    assert time.monotonic() < deadline, "the sensor's run for crew did not finish"
                    time.sleep(3)
                assert done[0].status == DagsterRunStatus.SUCCESS, done[0].run_id
                assert done[0].job_name == "ingest_job"
                assert {"team", "crew"} <= set(instance.get_dynamic_partitions("groups"))
        finally:
            if old is None:
                os.environ.pop("DAGSTER_HOME", None)
            else:
                os.environ["DAGSTER_HOME"] = old
        assert {"team", "crew"} <= set(_ui_partitions(port))  # what the asset page lists

        # "stop it with Ctrl-C"
        os.killpg(dev.pid, signal.SIGINT)
        dev.wait(timeout=90)
    finally:
        _stop_group(dev)
        log.close()

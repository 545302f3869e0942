"""The Dagster UI in a real browser: start ``dagster dev`` on 127.0.0.1, open the asset
graph in headless Debian chromium (driven by playwright-core), materialise an asset from
its page, take screenshots and check the asset names on the page; the group ingested with
the CLI (``DAGSTER_HOME`` set) is listed on ``derived_memory``'s Partitions tab.

Needs chromium, node and ``scripts/browser/node_modules`` (``scripts/install-browser.sh``,
which ``.ci/run`` calls); skipped where they are absent. Set ``SPEAKERFLOW_UI_SHOTS=DIR``
to keep the screenshots.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from speakerflow.benchmarks.backfill_dagster import free_port

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "scripts" / "browser" / "ui_check.mjs"
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
GRAPH_NAMES = [
    "raw_messages",
    "verbatim_track",
    "writer_actions",
    "derived_memory",
    "entity_graph",
    "wiki_pages",
]

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(420)]


def _skip_reason() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"no chromium at {CHROMIUM} (run scripts/install-browser.sh)"
    if not shutil.which("node"):
        return "no node (run scripts/install-browser.sh)"
    if not (DRIVER.parent / "node_modules" / "playwright-core").is_dir():
        return "playwright-core not installed (run scripts/install-browser.sh)"
    return None


def _stop(proc: subprocess.Popen) -> None:
    """Stop ``dagster dev`` and its children by process group (it ignores a plain SIGTERM)."""
    for sig, wait in ((signal.SIGINT, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            if sig is signal.SIGKILL:
                return
        except subprocess.TimeoutExpired:
            continue
    # SIGINT ended the leader; make sure no child of the group is left behind
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture
def dagster_ui(tmp_path, monkeypatch, ingest_sample):
    """``dagster dev`` on a free port over a home holding one group ("team") ingested with
    the CLI while ``DAGSTER_HOME`` was set (so it is a partition before the UI starts)."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)

    home = tmp_path / "home"
    dagster_home = tmp_path / "dagster_home"
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))
    assert ingest_sample(str(home)) == 0
    port = free_port()
    env = {
        **os.environ,
        "DAGSTER_HOME": str(dagster_home),
        "SPEAKERFLOW_HOME": str(home),
        "DAGSTER_DISABLE_TELEMETRY": "1",
    }
    log = (tmp_path / "dagster-dev.log").open("w")
    dagster = Path(sys.executable).parent / "dagster"
    proc = subprocess.Popen(
        [str(dagster), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/server_info", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail(
                    "dagster dev did not answer on "
                    f"{url}:\n{(tmp_path / 'dagster-dev.log').read_text()[-3000:]}"
                )
            time.sleep(0.5)
        yield {"url": url, "dagster_home": dagster_home, "home": home}
    finally:
        _stop(proc)
        log.close()


def test_asset_graph_and_materialise_from_ui(dagster_ui, tmp_path, monkeypatch):
    shots = tmp_path / "shots"
    cmd = [
        "node",
        str(DRIVER),
        "--url",
        dagster_ui["url"],
        "--out",
        str(shots),
        "--graph-asset",
        "derived_memory",
        "--materialize",
        "group_catalog",
        "--expect",
        ",".join(GRAPH_NAMES),
        "--timeout-ms",
        "120000",
        "--partitions-asset",
        "derived_memory",
        "--expect-partitions",
        "team",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=360, cwd=REPO)
    assert proc.stdout.strip(), f"driver printed nothing; stderr:\n{proc.stderr[-2000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    if os.environ.get("SPEAKERFLOW_UI_SHOTS"):
        keep = Path(os.environ["SPEAKERFLOW_UI_SHOTS"])
        keep.mkdir(parents=True, exist_ok=True)
        for png in shots.glob("*.png"):
            shutil.copy(png, keep / png.name)

    # the asset graph showed every asset of the group chain, by name
    assert report["graph_names_found"] == GRAPH_NAMES, (
        report.get("error") or report.get("graph_text", "")[:1000]
    )
    for name in GRAPH_NAMES:
        assert name in report["graph_text"]
    # the click in the UI launched a run that materialised group_catalog
    assert proc.returncode == 0 and report["materialized"], report
    assert (
        "group_catalog" in report["asset_text"] and "Latest materialization" in report["asset_text"]
    )
    # the group the CLI ingested is a partition on the asset page
    assert report["partitions_found"] == ["team"], (
        report.get("error") or report.get("partitions_text", "")[:1000]
    )
    for png in ("asset-graph.png", "materialized.png", "partitions.png"):
        data = (shots / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000

    # the run really happened in this instance, and saw the group ingested before the UI started
    import dagster as dg

    monkeypatch.setenv("DAGSTER_HOME", str(dagster_ui["dagster_home"]))
    with dg.DagsterInstance.get() as instance:
        event = instance.get_latest_materialization_event(dg.AssetKey("group_catalog"))
        assert event is not None and event.run_id == report["run_id"]
        meta = event.asset_materialization.metadata
        assert meta["groups"].value == 1 and meta["messages"].value > 0

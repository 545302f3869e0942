"""Shared fixtures: temp store homes and the path to ../shared/data (skip when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("SPEAKERFLOW_SHARED_DATA", REPO.parent / "shared" / "data"))


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

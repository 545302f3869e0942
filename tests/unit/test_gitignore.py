"""Generated files and temp folders (README/docs commands run from the repository root,
``dagster dev``, tests, benchmarks) are ignored by git; the tracked root files are not."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GENERATED = [
    "locomo.json",
    "report.json",
    "report_frontier.png",
    "report_holdout.json",
    "r.png",
    "runs/sft/model.bin",
    "wiki/index.md",
    ".speakerflow/groups/x",
    ".tmp_dagster_home_ab12/history/runs.db",
    "dagster_home/x",
    "out/x.json",
    "build/import-tree/x",
    "ops/__pycache__/x.pyc",
    "worker.log",
]


@pytest.mark.skipif(
    shutil.which("git") is None or not (REPO / ".git").exists(), reason="not a git checkout"
)
def test_generated_files_are_ignored():
    proc = subprocess.run(
        ["git", "check-ignore", "--no-index", *GENERATED], cwd=REPO, capture_output=True, text=True
    )
    assert sorted(proc.stdout.split()) == sorted(GENERATED)
    tracked = subprocess.run(
        [
            "git",
            "check-ignore",
            "--no-index",
            "README.md",
            "workspace.yaml",
            "pyproject.toml",
            "docs/results/scale/report.json",
            "tests/data/answers",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert tracked.stdout.strip() == ""

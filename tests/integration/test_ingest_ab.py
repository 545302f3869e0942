"""``python -m speakerflow.benchmarks.scale ingest-ab``: the ingest path of an earlier git
revision beside today's, in one process (small size; no timing thresholds)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from speakerflow.benchmarks.scale_ingest_ab import INGEST_AB_REV, ingest_ab

ROOT = Path(__file__).resolve().parents[2]


def _has_rev(rev: str) -> bool:
    try:
        subprocess.run(
            ["git", "cat-file", "-e", f"{rev}:graphs/store.py"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


@pytest.mark.skipif(not _has_rev(INGEST_AB_REV), reason="needs the git history of the repo")
def test_ingest_ab_runs_the_old_and_the_new_store_side_by_side(tmp_path):
    out = ingest_ab(2_000, batch=500, rounds=1, workdir=tmp_path)
    assert out["rev"] == INGEST_AB_REV and out["messages"] == 2_000
    for side in ("before", "after"):
        assert len(out[f"{side}_messages_per_s"]) == 1 and out[f"{side}_messages_per_s"][0] > 0
        assert out[f"{side}_cpu_us_per_message"][0] > 0
        assert out[f"{side}_bytes_per_message"] > 0
    # the old store has no per-step profile; today's names its steps
    assert "before_profile_s" not in out
    prof = out["after_profile_s"]
    assert prof["total"] > 0 and prof["index"] > 0 and prof["kuzu_copy"] > 0

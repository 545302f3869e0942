"""A small fault benchmark: writer processes SIGKILLed at named steps and random times recover
to the clean run's state (real subprocesses, the bundled sample, ingest + Writer + entity path)."""

from __future__ import annotations

import json

from speakerflow.benchmarks.faults import run
from speakerflow.cli import main
from speakerflow.settings import BUNDLED_SAMPLE


def test_five_kills_recover_without_loss(tmp_path):
    report = run(
        kills=5,
        source=BUNDLED_SAMPLE,
        fmt="jsonl",
        workdir=tmp_path / "w",
        out=tmp_path / "r.json",
        progress=False,
    )
    assert report["named_step_kills"] == 3
    assert report["kills"] >= 3
    assert {
        k: report[k] for k in ("lost", "duplicated", "orphaned", "mismatched")
    } == dict.fromkeys(("lost", "duplicated", "orphaned", "mismatched"), 0), report["per_kill"]
    assert report["recovered"] == report["kills"]
    assert json.loads((tmp_path / "r.json").read_text())["kills"] == report["kills"]


def test_bench_faults_is_a_cli_command(capsys):
    import pytest

    with pytest.raises(SystemExit):
        main(["bench", "faults", "--help"])
    assert "--kills" in capsys.readouterr().out

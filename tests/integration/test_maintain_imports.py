"""``speakerflow maintain`` (and the other store commands) in a fresh process import what
the command needs and no more: its own CLI module only, no torch, transformers, Dagster or
web stack, no pandas (what a cold start of them costs is imports: docs/serving.md,
"maintain on a small group, follow-up")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import speakerflow
from speakerflow.cli import build_parser, main
from speakerflow.settings import BUNDLED_SAMPLE

SAMPLE = Path(speakerflow.__file__).parent / "data" / "sample_events.jsonl"

#: runs the CLI as the ``speakerflow`` script does, then writes the imported modules
PROBE = """
import json, sys
from speakerflow.cli import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as fh:
    json.dump({"code": code, "modules": sorted(sys.modules)}, fh)
"""

#: packages a maintenance tick never needs (the Writer's and the server's stacks)
NOT_NEEDED = ("torch", "transformers", "dagster", "fastapi", "uvicorn", "starlette", "mcp")


def _fresh(args: list[str], tmp_path: Path) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "modules.json"
    env = {k: v for k, v in os.environ.items() if k != "SPEAKERFLOW_HOME"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads(out.read_text())


def test_maintain_in_a_fresh_process_imports_no_model_or_server_stack(tmp_path: Path, capsys):
    home = ["--home", str(tmp_path / "home")]
    ingest = ["ingest", str(SAMPLE), "--format", "events", "--writer", "none"]
    assert main([*ingest, "--embedder", "none", *home]) == 0
    capsys.readouterr()
    args = ["maintain", "--group", "desk", "--now", "2026-05-14T09:00:00Z", "--json", *home]
    proc, seen = _fresh(args, tmp_path)
    report = json.loads(proc.stdout)["desk"]
    # stderr says what is new and what the wait was (the reader's MiniLM, loaded once here)
    assert "maintain desk: 8 new row(s) ..." in proc.stderr
    assert "(MiniLM loaded for the knowledge reader)" in proc.stderr
    assert report["entity_path"]["events"] == 8 and report["entity_path"]["facts"] > 0
    assert report["tick"]["probes_run"][0] == "stale_sweep"
    modules = set(seen["modules"])
    assert not {m for m in modules if m.split(".")[0] in NOT_NEEDED}
    # neither pyarrow's conversions nor Kuzu's COPY of the new facts imported pandas/polars
    assert not {m.split(".")[0] for m in modules} & {"pandas", "polars"}
    assert {m for m in modules if m.startswith("speakerflow.cli")} == {
        "speakerflow.cli",
        "speakerflow.cli.common",
        "speakerflow.cli.maintain",
    }
    # a second run finds nothing new: the reader's MiniLM is not loaded either
    proc, seen = _fresh(args, tmp_path)
    assert json.loads(proc.stdout)["desk"]["entity_path"]["events"] == 0
    assert "maintain desk: 0 new row(s)" in proc.stderr and "MiniLM" not in proc.stderr
    assert not {m.split(".")[0] for m in seen["modules"]} & {"onnxruntime", "pandas", "polars"}


@pytest.mark.parametrize(
    "command",
    [["ask", "team", "Where will the offsite be?", "--embedder", "hashing"], ["stats", "--json"]],
    ids=["ask", "stats"],
)
def test_store_commands_in_a_fresh_process_import_no_pandas(tmp_path: Path, capsys, command):
    home = ["--home", str(tmp_path / "home")]
    assert (
        main(["ingest", str(BUNDLED_SAMPLE), "--group", "team", "--embedder", "hashing", *home])
        == 0
    )
    capsys.readouterr()
    proc, seen = _fresh([*command, *home], tmp_path)
    assert proc.stdout.strip()
    tops = {m.split(".")[0] for m in seen["modules"]}
    assert not tops & {"pandas", "polars", *NOT_NEEDED}, tops & {"pandas", "polars", *NOT_NEEDED}
    assert {m for m in seen["modules"] if m.startswith("speakerflow.cli.")} == {
        "speakerflow.cli.common",
        f"speakerflow.cli.{command[0]}",
    }


def test_the_parser_of_one_command_and_of_all():
    one = build_parser("maintain")._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    every = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert list(one) == ["maintain"]
    assert {"maintain", "ingest", "ask", "serve", "mcp"} <= set(every)
    # no module of that name (``mcp`` is registered by serve.py) or none: every command
    assert set(build_parser("mcp")._subparsers._group_actions[0].choices) == set(every)  # type: ignore[union-attr]
    assert set(build_parser("common")._subparsers._group_actions[0].choices) == set(every)  # type: ignore[union-attr]


def test_skipping_pyarrow_pandas_probe_keeps_its_pandas_functions(tmp_path: Path):
    code = """
import sys
import pyarrow as pa
from speakerflow.cli.common import skip_pandas_probe
skip_pandas_probe()
t = pa.table({"a": ["x", "y"]})
assert "pandas" not in sys.modules, "the probe imported pandas"
df = t.to_pandas()  # pyarrow imports pandas when a pandas function needs it
import pandas as pd
assert pa.Table.from_pandas(df)["a"].to_pylist() == ["x", "y"]
assert pa.types.is_dictionary(pa.array(pd.Categorical(["a", "b"])).type)
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr

"""The top-level folders install as speakerflow.* and nothing else lands in site-packages."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAPPED = ("schemas", "ops", "graphs", "assets", "pipelines", "training", "benchmarks")


def test_installed_namespace_from_elsewhere(tmp_path):
    code = (
        "import importlib.util as u, speakerflow.ops, speakerflow.schemas, speakerflow.graphs;"
        f"print([m for m in {MAPPED!r} if u.find_spec(m) is not None])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_wheel_holds_only_speakerflow(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    [wheel] = tmp_path.glob("speakerflow-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops <= {
        "speakerflow",
        f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info",
    }
    for sub in MAPPED:
        assert any(n.startswith(f"speakerflow/{sub}/__init__.py") for n in names), sub
    assert "speakerflow/data/sample_team.jsonl" in names

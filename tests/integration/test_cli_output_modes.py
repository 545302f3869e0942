"""Every command prints human text by default and JSON with ``--json`` (servers excepted),
and output files go next to ``--out``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from speakerflow.cli import build_parser, main
from speakerflow.settings import BUNDLED_SAMPLE

REPO = Path(__file__).resolve().parents[2]
LOCOMO = REPO.parent / "shared" / "data" / "locomo" / "locomo10.json"

pytestmark = pytest.mark.timeout(300)
SERVERS = {"speakerflow serve", "speakerflow mcp"}  # long-running processes, no report to print


def _leaves(parser: argparse.ArgumentParser, path: str = "speakerflow"):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for action in subs:
        for name, sub in action.choices.items():
            yield from _leaves(sub, f"{path} {name}")


def test_every_command_has_json():
    missing = [
        cmd
        for cmd, p in _leaves(build_parser())
        if cmd not in SERVERS and not any("--json" in a.option_strings for a in p._actions)
    ]
    assert not missing, f"commands without --json: {missing}"


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except json.JSONDecodeError:
        return False


@pytest.mark.parametrize(
    "argv",
    [
        ["maintain", "--now", "2026-05-14T09:00:00Z"],
        ["stats"],
        ["memory", "team"],
        ["search", "team", "Porto"],
    ],
)
def test_text_by_default_json_with_flag(tmp_path, capsys, argv):
    home = ["--home", str(tmp_path / "home")]
    assert (
        main(
            ["ingest", str(BUNDLED_SAMPLE), "--format", "jsonl", "--group", "team", "--json", *home]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["ingested"] > 0
    assert main([*argv, *home]) == 0
    text = capsys.readouterr().out
    assert text.strip() and not _is_json(text), text[:300]
    assert main([*argv, "--json", *home]) == 0
    assert _is_json(capsys.readouterr().out)


def test_wiki_json_lists_the_pages(tmp_path, capsys, ingest_sample):
    home = ["--home", str(tmp_path / "home")]
    assert ingest_sample(home[1]) == 0
    capsys.readouterr()
    assert main(["wiki", "team", "--out", str(tmp_path / "wiki"), "--json", *home]) == 0
    pages = json.loads(capsys.readouterr().out)["pages"]
    assert pages and all(str(tmp_path / "wiki") in p for p in pages)


def test_wiki_defaults_to_the_homes_wiki_folder(tmp_path, capsys, ingest_sample, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may land in the working folder
    home = tmp_path / "home"
    assert ingest_sample(str(home)) == 0
    capsys.readouterr()
    assert main(["wiki", "team", "--home", str(home)]) == 0
    assert f"under {home / 'wiki' / 'team'}" in capsys.readouterr().out
    assert (home / "wiki" / "team" / "index.md").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


def test_eval_outputs_go_next_to_out(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may land in the working folder
    qa = tmp_path / "data" / "locomo10.json"
    if not LOCOMO.exists():
        pytest.skip("LoCoMo not available")
    qa.parent.mkdir()
    qa.write_text(json.dumps(json.loads(LOCOMO.read_text())[:1]))
    out = tmp_path / "reports" / "r.json"
    assert (
        main(
            [
                "eval",
                str(qa),
                "--format",
                "locomo",
                "--system",
                "bm25",
                "--limit",
                "5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    header = next(line for line in text.splitlines() if line.startswith("system "))
    assert "recall@10" in header and "token_f1" in header  # the summary table
    assert sorted(p.name for p in out.parent.iterdir()) == ["r.json", "r.md", "r.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "reports"]


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "team", "Porto", "--speaker", "Zed"],
        ["memory", "team", "--owner", "Zed"],
        ["forget", "team", "--speaker", "Zed", "--dry-run"],
    ],
)
def test_unknown_speaker_lists_the_roster(tmp_path, capsys, argv, ingest_sample):
    home = ["--home", str(tmp_path / "home")]
    assert ingest_sample(home[1]) == 0
    capsys.readouterr()
    assert main([*argv, *home]) == 2
    err = capsys.readouterr().err
    assert "Zed" in err and all(name in err for name in ("Ana", "Ben", "Chloe", "Dev")), err

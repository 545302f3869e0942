"""The hostile input corpus: >= 500 malformed files over every format, each refused with one
clear error (file, line/record/turn, field) and the store byte-for-byte unchanged."""

from __future__ import annotations

import contextlib
import io

from speakerflow.benchmarks.hostile import check, clear, generate, tree_hash
from speakerflow.cli import main


def test_hostile_corpus_is_refused_clearly_and_changes_nothing(tmp_path):
    cases = generate(tmp_path / "corpus")
    assert len(cases) >= 500
    assert {c.fmt for c in cases} == {"jsonl", "events", "locomo", "socialmem"}
    report = check(cases, tmp_path / "home")
    assert report["accepted"] == []
    assert report["unclear"] == []
    assert report["clear_errors"] == len(cases)
    assert report["store_unchanged"]


def test_hostile_files_through_the_cli_leave_the_home_unchanged(tmp_path):
    cases = generate(tmp_path / "corpus")
    home = tmp_path / "home"
    seed = tmp_path / "seed.jsonl"
    seed.write_text(
        '{"msg_id": "h0", "ts": "2026-03-02T09:00:00Z", "speaker": "Ana", "text": "seed"}\n'
    )
    with contextlib.redirect_stdout(io.StringIO()):
        assert (
            main(["ingest", str(seed), "--format", "jsonl", "--group", "g1", "--home", str(home)])
            == 0
        )
    before = tree_hash(home)
    one_per_category = {}
    for c in cases:
        one_per_category.setdefault((c.fmt, c.category.split("=")[0]), c)
    for c in one_per_category.values():
        err = io.StringIO()
        args = ["ingest", str(c.path), "--format", c.fmt, "--home", str(home)] + (
            ["--group", c.group] if c.group else []
        )
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            assert main(args) == 2, c
        msg = err.getvalue().strip().removeprefix("speakerflow: error: ")
        assert msg.count("\n") == 0 and clear(msg, c) is None, (c.category, msg)
    assert tree_hash(home) == before

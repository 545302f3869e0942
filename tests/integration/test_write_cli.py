"""`speakerflow ingest --writer` and `speakerflow memory` on the bundled sample (real stores)."""

import json

import pytest

from speakerflow.cli import main
from speakerflow.settings import BUNDLED_SAMPLE

pytestmark = pytest.mark.timeout(120)
FIELDS = {
    "entry_id",
    "layer",
    "owner",
    "source",
    "utype",
    "content",
    "from_ids",
    "supersedes",
    "superseded_by",
    "valid_at",
    "invalid_at",
}


def _ingest(*extra):
    return main(
        ["ingest", str(BUNDLED_SAMPLE), "--format", "jsonl", "--group", "sample-team", *extra]
    )


def _json(capsys, *argv):
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_memory_history_shows_the_sample_chains(home, capsys):
    assert _ingest() == 0
    assert "writer rules:" in capsys.readouterr().out
    assert main(["memory", "sample-team", "--owner", "Dev", "--history"]) == 0
    out = capsys.readouterr().out
    munich = out.index("Munich")
    assert "(until 2026-04-10 10:30)" in out[munich - 80 : munich]  # old state with its end date
    assert out.index("Vienna") > munich and "<- [s3-t00]" in out and "I live in Vienna now" in out
    assert main(["memory", "sample-team", "--owner", "GROUP", "--history"]) == 0
    out = capsys.readouterr().out
    assert out.index("600") < out.index("700") and "<- [s3-t06]" in out


def test_memory_json_fields_filters_and_errors(home, capsys):
    assert _ingest() == 0
    heads = _json(capsys, "memory", "sample-team", "--json")
    assert (
        heads
        and all(FIELDS <= set(r) for r in heads)
        and all(r["superseded_by"] is None for r in heads)
    )
    full = _json(capsys, "memory", "sample-team", "--json", "--history")
    assert len(full) > len(heads)
    old = [r for r in full if r["superseded_by"]]
    assert old and all(r["invalid_at"] for r in old) and all(r["sources"] for r in full)
    core = _json(
        capsys, "memory", "sample-team", "--json", "--layer", "per_speaker_core", "--owner", "Chloe"
    )
    assert core and {(r["layer"], r["owner"]) for r in core} == {("per_speaker_core", "Chloe")}
    assert main(["memory", "sample-team", "--owner", "Zed"]) == 2
    assert "not in the roster" in capsys.readouterr().err


def test_writer_none_then_rules_and_idempotent_ingest(home, capsys):
    assert _ingest("--writer", "none") == 0
    assert _json(capsys, "stats", "--json")["records"] == 0
    assert _ingest() == 0  # messages already stored; the writer still catches up on them
    first = _json(capsys, "stats", "--json")["records"]
    assert first > 20
    assert _ingest() == 0
    assert _json(capsys, "stats", "--json")["records"] == first


def test_a_failed_batch_writes_nothing_and_a_rerun_completes(home, monkeypatch):
    from speakerflow.graphs.records import written_ids
    from speakerflow.ops.loaders import load
    from speakerflow.pipelines.write_path import write_group

    [(gid, table)] = load(BUNDLED_SAMPLE, "jsonl", group="sample-team")
    with home.open(gid, writable=True) as store:
        store.append_messages(table)
        index = store.index

        def broken(docs):
            raise OSError("disk full")

        with monkeypatch.context() as m:
            m.setattr(index, "add", broken)
            with pytest.raises(OSError, match="disk full"):
                write_group(store, "rules", progress=False)
        assert store.records().num_rows == 0 and not written_ids(
            store
        )  # Kuzu rolled back, no watermark
        assert store.graph.count("Record") == 0
        report = write_group(store, "rules", progress=False)
        assert report.accepted == store.records().num_rows > 20
        assert store.graph.count("Record") == report.accepted

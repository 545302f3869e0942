"""``--format auto``: a file's format is told from its structure (the keys of its first
record), never from what its messages say. Written before the detector."""

import json
import os
from pathlib import Path

import pytest

from speakerflow.ops.loaders import LoadError, WrongFormatError, detect_format, load
from speakerflow.settings import BUNDLED_SAMPLE

DATA = Path(__file__).resolve().parents[1].parent / "speakerflow" / "data"
SHARED = Path(
    os.environ.get(
        "SPEAKERFLOW_SHARED_DATA", Path(__file__).resolve().parents[2].parent / "shared" / "data"
    )
)
LOCOMO_TURN = {"speaker": "Ana", "dia_id": "D1:1", "text": "I moved to Lisbon."}
LOCOMO = [
    {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [LOCOMO_TURN],
        },
        "qa": [],
    }
]
NETWORK = {
    "schema": "socialmembench-real-v4-source/1",
    "speakers": ["Ana", "Ben"],
    "sessions": [
        {
            "session_id": "n_s01",
            "ts": "2025-10-06",
            "turns": [
                {
                    "turn": "n_s01_t000",
                    "speaker": "Ana",
                    "speaker_id": "p1",
                    "content": "Drinks on Thursday?",
                    "ts": "2025-10-06T12:08:00",
                    "reply_to": "",
                }
            ],
        }
    ],
    "qa_pairs": [],
    "meta": {"network_id": "n1"},
}
TRAJECTORY = {
    "schema": "writer-trajectory/1",
    "teacher": "t",
    "window_size": 25,
    "network_id": "n1",
}


def test_the_bundled_files():
    assert detect_format(BUNDLED_SAMPLE) == "jsonl"
    assert detect_format(DATA / "sample_events.jsonl") == "events"


@pytest.mark.parametrize("indent", [None, 2])
def test_json_documents_pretty_or_not(tmp_path, indent):
    (tmp_path / "locomo.json").write_text(json.dumps(LOCOMO, indent=indent))
    (tmp_path / "net.json").write_text(json.dumps(NETWORK, indent=indent))
    assert detect_format(tmp_path / "locomo.json") == "locomo"
    assert detect_format(tmp_path / "net.json") == "socialmem"
    [(gid, table)] = load(tmp_path / "net.json", "auto")
    assert gid == "n1" and table.num_rows == 1


def test_a_trajectory_is_not_messages(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps(TRAJECTORY))
    with pytest.raises(WrongFormatError):
        detect_format(tmp_path / "t.json")


def test_a_folder_takes_the_format_of_its_files(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(NETWORK))
    (tmp_path / "t.json").write_text(json.dumps(TRAJECTORY))  # skipped, as the loader does
    assert detect_format(tmp_path) == "socialmem"
    (tmp_path / "m.jsonl").write_text(Path(BUNDLED_SAMPLE).read_text())
    with pytest.raises(LoadError, match="several formats.*--format"):
        detect_format(tmp_path)


@pytest.mark.parametrize(
    "content",
    ["", "   \n\n", "not json at all\n", '{"a": 1}\n', "[1, 2, 3]", '{"unclosed": '],
)
def test_unknown_or_broken_input_asks_for_format(tmp_path, content):
    path = tmp_path / "x.json"
    path.write_text(content)
    with pytest.raises(LoadError, match="--format"):
        detect_format(path)


def test_missing_path(tmp_path):
    with pytest.raises(LoadError, match="no such file"):
        detect_format(tmp_path / "nope.jsonl")


@pytest.mark.skipif(not (SHARED / "locomo").is_dir(), reason="../shared/data not present")
def test_the_shared_benchmarks():
    assert detect_format(SHARED / "locomo" / "locomo10.json") == "locomo"
    assert detect_format(SHARED / "socialmem" / "training") == "socialmem"


def test_cli_ingest_without_format(tmp_path, monkeypatch, capsys):
    from speakerflow.cli import main

    (tmp_path / "net.json").write_text(json.dumps(NETWORK))
    monkeypatch.setenv("SPEAKERFLOW_HOME", str(tmp_path / "home"))
    assert main(["ingest", str(tmp_path / "net.json"), "--embedder", "none"]) == 0
    out = capsys.readouterr().out
    assert "format socialmem (detected)" in out
    assert "ingested 1 new message(s) into 1 group(s)" in out

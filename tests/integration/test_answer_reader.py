"""The answer reader on the real SmolLM2-135M: the shipped adapter loads over the PyPI base and
answers in a few words from evidence lines; ``speakerflow train reader`` trains an adapter
over the real base; ``speakerflow ask --reader --json`` answers with the short reply and keeps
the extractive line as its quote, citing the same messages.

Conversations and questions written for this test. Skipped, with the reason, only when the
model package is not installed."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from speakerflow.cli import main
from speakerflow.ops.query.answer_reader import (
    READER_NAME,
    SHIPPED_READER,
    evidence_line,
    shared_reader,
)

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]

DAY = datetime(2026, 2, 9, 18, 0, tzinfo=UTC)
LINES = [
    evidence_line("Marit", DAY, "The ferry back from the island was cancelled: too much wind."),
    evidence_line("Oskar", DAY, "I've been taking cello lessons every Thursday since March."),
    evidence_line("Marit", DAY, "See you all at the harbour on Sunday."),
]


def test_the_shipped_reader_answers_in_a_few_words(smollm2: Path) -> None:
    assert (SHIPPED_READER / "adapter_config.json").is_file()
    reader = shared_reader(READER_NAME)
    assert reader is not None
    answers = reader.read_batch(
        [
            ("Which instrument is Oskar learning?", LINES),
            ("Why was the ferry cancelled?", LINES),
        ]
    )
    assert "cello" in answers[0].lower() and len(answers[0].split()) <= 8
    assert "wind" in answers[1].lower()


def _answer_set(root: Path) -> Path:
    conv = root / "conversations"
    conv.mkdir(parents=True)
    msgs = [
        ("k1", "Ines", "Who can bring the projector to the workshop?"),
        ("k2", "Tariq", "I'll bring mine, it's the small one with the HDMI cable."),
        ("k3", "Ines", "Great, and the workshop starts at 9:30 in room B."),
    ]
    with (conv / "workshop.jsonl").open("w") as f:
        for i, (mid, who, text) in enumerate(msgs):
            row = {"msg_id": mid, "group_id": "workshop", "session_id": "s1", "speaker": who}
            f.write(json.dumps({**row, "ts": f"2026-03-02T09:0{i}:00Z", "text": text}) + "\n")
    questions = [
        {"id": "t1", "data": "workshop", "type": "fact", "question": "Who brings the projector?",
         "expect": [["Tariq"]], "forbid": [], "gold": ["k2"]},
        {"id": "t2", "data": "workshop", "type": "fact", "question": "Which room is it in?",
         "expect": [["room B"]], "forbid": [], "gold": ["k3"]},
    ]  # fmt: skip
    (root / "questions.json").write_text(json.dumps({"about": "test", "questions": questions}))
    return root


def test_train_reader_cli_trains_an_adapter_over_the_real_base(
    smollm2: Path, tmp_path: Path, capsys
) -> None:
    data = _answer_set(tmp_path / "set")
    out = tmp_path / "reader"
    argv = ["train", "reader", str(data), "--base", str(smollm2), "--out", str(out)]
    code = main([*argv, "--steps", "1", "--lora-r", "4", "--lora-layers", "1", "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["steps"] == 1 and report["sources"]["set"]["pairs"] == 2
    assert (out / "adapter_model.safetensors").is_file()
    saved = json.loads((out / "reader_report.json").read_text())
    assert saved["sources"]["set"]["train_groups"] == ["workshop"]
    # a held-out group is never trained on; naming an unknown one is an error
    assert main([*argv, "--heldout", "workshop", "--steps", "1"]) == 2
    assert main([*argv, "--heldout", "nosuchgroup", "--steps", "1"]) == 2


def test_ask_reader_answers_short_and_quotes_the_line(
    smollm2: Path, home, ingest_sample, capsys
) -> None:
    assert ingest_sample(home.root) == 0
    capsys.readouterr()
    question = "Which city did the team pick for the offsite?"
    argv = ["ask", "team", question, "--json", "--embedder", "hashing", "--home", str(home.root)]
    assert main(argv) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*argv, "--reader"]) == 0
    read = json.loads(capsys.readouterr().out)
    assert read["quote"] == plain["answer"]
    assert read["answer"] and read["answer"] != plain["answer"]
    assert len(read["answer"].split()) < len(plain["answer"].split())
    assert read["cited"] == plain["cited"]

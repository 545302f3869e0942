"""The learned answer choice (``AnswerConfig(picker="learned")``): features, fitting, loading
and the picker on hand-made evidence. Sentences written for this test."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from speakerflow.ops.query.answer import answer_line
from speakerflow.ops.query.answer_config import AnswerConfig
from speakerflow.ops.query.answer_intent import Intent
from speakerflow.ops.query.answer_learned import FEATURES, TOP, choose, features, load_weights
from speakerflow.ops.query.answer_units import TextMemo, Unit
from speakerflow.ops.query.project import project_rules
from speakerflow.schemas import EvidenceItem
from speakerflow.training.picker import fit, top_is_gold

T = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
ROSTER = ["Ines", "Oskar", "Bea"]


def _units(n):
    return [
        (
            1.0 - 0.01 * i,
            Unit(f"Sentence number {i} about the shed.", f"m{i}", "Ines", T + timedelta(days=i), i),
        )
        for i in range(n)
    ]


def test_features_one_row_per_candidate_up_to_top():
    ranked = _units(TOP + 3)
    rows = features(ranked, Intent(qtype="what", focus="current"), TextMemo())
    assert len(rows) == TOP and all(len(r) == len(FEATURES) for r in rows)
    # where a sentence stands in time among the candidates, crossed with the "now" focus
    at = FEATURES.index("current_x_time")
    assert rows[0][at] == 0.0 and rows[TOP - 1][at] == 1.0


def test_fit_learns_a_signal_and_choose_follows_it():
    # synthetic questions: the gold sentence is always the latest of the candidates
    records = []
    for q in range(30):
        ranked = _units(6)
        ranked = ranked[q % 6 :] + ranked[: q % 6]  # the latest is at a varying rank
        rows = features(ranked, Intent(qtype="what", focus="current"), TextMemo())
        latest = max(range(len(ranked)), key=lambda i: ranked[i][1].ts)
        records.append(
            {"set": "s", "rows": rows, "labels": [float(i == latest) for i in range(len(rows))]}
        )
    weights = fit(records)
    assert top_is_gold(records, weights) == 1.0
    assert top_is_gold(records, None) < 0.5  # the first-ranked one is rarely the latest
    ranked = _units(5)[::-1]
    chosen = choose(ranked, Intent(qtype="what", focus="current"), TextMemo(), weights)
    assert chosen.msg_id == "m4"


def test_fit_refuses_records_without_a_gold_candidate():
    with pytest.raises(ValueError, match="no question"):
        fit([{"set": "s", "rows": [[0.0] * len(FEATURES)] * 2, "labels": [0.0, 0.0]}])


def test_weights_with_other_features_are_refused(tmp_path):
    bad = tmp_path / "w.json"
    bad.write_text(json.dumps({"features": ["x"], "mean": [0], "scale": [1], "coef": [1]}))
    with pytest.raises(ValueError, match="features"):
        load_weights(str(bad))
    assert load_weights(str(tmp_path / "missing.json")) is None


def test_learned_picker_answers_and_falls_back_without_weights(tmp_path):
    # two statements on the matter, the later one the current state
    evidence = [
        EvidenceItem(
            rank=0,
            kind="excerpt",
            text="The shed key lives under the blue pot for now.",
            msg_ids=["m0"],
            speaker="Oskar",
            ts=T,
        ),
        EvidenceItem(
            rank=1,
            kind="excerpt",
            text="I moved the shed key into the green lockbox by the gate.",
            msg_ids=["m1"],
            speaker="Oskar",
            ts=T + timedelta(days=6),
        ),
    ]
    projection = project_rules("Where is the shed key kept these days?", ROSTER)
    shipped = answer_line(projection, evidence, AnswerConfig(picker="learned"), roster=ROSTER)
    assert "green lockbox" in shipped.text
    missing = AnswerConfig(picker="learned", picker_weights=str(tmp_path / "none.json"))
    scored = answer_line(projection, evidence, AnswerConfig(picker="scored"), roster=ROSTER)
    assert answer_line(projection, evidence, missing, roster=ROSTER).text == scored.text


def _tiny_set(root, name, lines, questions):
    conv = root / name / "conversations"
    conv.mkdir(parents=True)
    with open(conv / "chat.jsonl", "w") as f:
        for i, (speaker, text) in enumerate(lines):
            row = {
                "msg_id": f"{name}-m{i}",
                "group_id": "chat",
                "session_id": "s1",
                "ts": (T + timedelta(hours=i)).isoformat(),
                "speaker": speaker,
                "text": text,
            }
            f.write(json.dumps(row) + "\n")
    qs = [
        {
            "id": f"{name}-{i}",
            "data": "chat",
            "type": "fact",
            "question": q,
            "expect": [[e]],
            "gold": [f"{name}-m{g}"],
        }
        for i, (q, e, g) in enumerate(questions)
    ]
    (root / name / "questions.json").write_text(json.dumps({"questions": qs}))
    return str(root / name)


def test_train_picker_cli_collects_fits_and_writes_weights(tmp_path, capsys):
    from speakerflow.cli import main

    one = _tiny_set(
        tmp_path,
        "a",
        [
            ("Ines", "The allotment gate code is 4412."),
            ("Bea", "Thanks Ines!"),
            ("Oskar", "The water butt by plot 9 leaks again."),
            ("Bea", "I'll patch the butt on Sunday."),
        ],
        [
            ("What is the code for the allotment gate?", "4412", 0),
            ("Which water butt is leaking?", "plot 9", 2),
        ],
    )
    two = _tiny_set(
        tmp_path,
        "b",
        [
            ("Oskar", "Our seed swap is in the village hall."),
            ("Ines", "Great, I'll bring squash seeds."),
            ("Bea", "Compost delivery got cancelled by the farm."),
            ("Oskar", "Annoying, we'll reorder."),
        ],
        [
            ("Where is the seed swap happening?", "village hall", 0),
            ("What happened to the compost delivery?", "cancelled", 2),
        ],
    )
    out = tmp_path / "w.json"
    assert main(["train", "picker", one, two, "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    weights = json.loads(out.read_text())
    assert weights["features"] == list(FEATURES) and weights["trained_on"] == ["a", "b"]
    assert report["questions"] == weights["questions"] >= 1
    assert main(["train", "picker", str(tmp_path / "nothing"), "--out", str(out)]) != 0

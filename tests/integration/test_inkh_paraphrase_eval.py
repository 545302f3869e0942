"""The reader on the frozen paraphrase set (tests/data/inkh_paraphrase, issue 11).

The reader was tuned on the *_dev and *_dev2 files only; the *_test files are scored here and
in the report. Issue 11's bars are extraction recall >= 0.85 at precision >= 0.9 and request
intent/needs >= 0.85; all four are reached on the test split (P 0.906, R 0.863, intent 0.875,
needs recall 0.938 when this test was updated) and asserted as the bars: see docs/harness.md.
"""

from speakerflow.benchmarks.harness.paraphrase_eval import DATA, run
from speakerflow.cli import main

FLOOR = {
    "precision": 0.90,
    "recall": 0.85,
    "intent_accuracy": 0.85,
    "needs_recall": 0.85,
}  # the bars (met)


def test_paraphrase_scores_on_the_test_split_hold_the_measured_floors():
    assert (DATA / "statements_test.jsonl").exists()
    rep = run(splits=("test",))["test"]
    st, rq = rep["statements"], rep["requests"]
    assert st["statements"] == 255 and rq["requests"] == 64
    assert st["precision"] >= FLOOR["precision"], st
    assert st["recall"] >= FLOOR["recall"], st
    assert rq["intent_accuracy"] >= FLOOR["intent_accuracy"], rq
    assert rq["needs_recall"] >= FLOOR["needs_recall"], rq


def test_cli_reports_dev_and_test_side_by_side(capsys, tmp_path):
    out = tmp_path / "para.json"
    assert main(["bench", "paraphrase", "--split", "dev", "--out", str(out), "--json"]) == 0
    text = capsys.readouterr().out
    assert '"dev"' in text and out.exists() and '"precision"' in out.read_text()

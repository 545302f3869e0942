"""Judge metrics (hand-computed), model-judge parsing, LoCoMo evidence normalisation, report
summaries."""

import pytest

from speakerflow.benchmarks.evaluate import markdown_summary, summarise
from speakerflow.benchmarks.qa_data import normalise_locomo_evidence
from speakerflow.ops.backends.base import ScriptedChat
from speakerflow.ops.query.judge import evidence_recall, llm_judge, rubric_score, token_f1


def test_token_f1_matches_the_paper_definition():
    # sets {the, cat, sat} vs {the, cat}: p = 2/3, r = 1, f = 0.8
    assert token_f1("The cat sat.", "the cat") == pytest.approx(0.8)
    # trailing period and surrounding spaces dropped; case ignored
    assert token_f1("  Porto. ", "porto") == 1.0
    # duplicates collapse into sets: {a, b} vs {a, c}: p = r = 1/2 -> 0.5
    assert token_f1("a a b", "a c c") == pytest.approx(0.5)
    # only the trailing period goes; an inner "7." stays a different token from "7"
    assert token_f1("on 7. May", "7 May") == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))
    # punctuation is not split off: "lisbon," != "lisbon"
    assert token_f1("lisbon, porto", "lisbon") == 0.0
    assert token_f1("", "x") == 0.0 and token_f1("x", "") == 0.0 and token_f1("a", "b") == 0.0
    # repeated whitespace collapses
    assert token_f1("7   May\n2023", "7 May 2023") == 1.0


def test_evidence_recall_counts_distinct_ids_in_order():
    cited = ["a", "b", "a", "c", "d"]
    assert evidence_recall(cited, ["c"], 2) == 0.0  # first two distinct: a, b
    assert evidence_recall(cited, ["c"], 3) == 1.0  # a, b, c
    assert evidence_recall(cited, ["a", "d"], 3) == 0.5
    assert evidence_recall(cited, [], 3) == 0.0


def test_llm_judge_and_rubric_parse_and_validate():
    j = llm_judge(ScriptedChat(["Both say Porto.\nFinal: Correct"]), "q", "Porto", "Porto", "q1")
    assert (j.metric, j.value) == ("llm_judge", 1.0)
    assert (
        llm_judge(ScriptedChat(["Final: Correct? no.\nFinal: Incorrect"]), "q", "g", "a").value
        == 0.0
    )
    with pytest.raises(ValueError, match="Final"):
        llm_judge(ScriptedChat(["looks fine"]), "q", "g", "a")
    assert (
        rubric_score(
            ScriptedChat(['{"score": 0.7, "rationale": "minor gap"}']), "q", "g", "a"
        ).value
        == 0.7
    )
    with pytest.raises(ValueError, match="outside"):
        rubric_score(ScriptedChat(['{"score": 7}']), "q", "g", "a")
    with pytest.raises(ValueError, match="score"):
        rubric_score(ScriptedChat(["great answer"]), "q", "g", "a")


def test_locomo_evidence_normalisation():
    assert normalise_locomo_evidence(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert normalise_locomo_evidence(["D9:1 D4:4 D4:6"]) == ["D9:1", "D4:4", "D4:6"]
    assert normalise_locomo_evidence(["D:11:26", "D30:05", "D", "D1:3", "D1:3"]) == [
        "D11:26",
        "D30:5",
        "D1:3",
    ]


def test_summary_by_category_and_markdown():
    rows = [
        {
            "category": "a",
            "recall": {"5": 1.0, "10": 1.0},
            "token_f1": 0.5,
            "latency_ms": 2.0,
            "context_tokens": 10,
        },
        {
            "category": "b",
            "recall": {"5": 0.0, "10": 0.5},
            "token_f1": 0.0,
            "latency_ms": 4.0,
            "context_tokens": 30,
        },
    ]
    rep = summarise(rows, (5, 10))
    assert rep["evidence_recall"] == {"5": 0.5, "10": 0.75}
    assert rep["by_category"]["b"] == {
        "questions": 1,
        "evidence_recall": {"5": 0.0, "10": 0.5},
        "token_f1": 0.0,
    }
    assert rep["latency_ms"]["p50"] == 3.0 and rep["context_tokens"]["mean"] == 20.0
    md = markdown_summary(
        [{**rep, "system": "bm25"}, {**rep, "system": "speakerflow", "ablate": "s2"}]
    )
    assert "| speakerflow -s2 | 2 | 0.500 | 0.750 |" in md and "a (1)" in md


def test_judge_operator_emits_one_row_per_metric():
    import pyarrow as pa

    from speakerflow.ops.core.base import Context
    from speakerflow.ops.query.judge import Judge

    table = pa.table(
        {
            "question_id": ["q1"],
            "question": ["Where?"],
            "answer": ["Porto."],
            "gold": ["porto"],
            "cited_ids": [["m2", "m1"]],
            "gold_ids": [["m1"]],
        }
    )
    op = Judge(budgets=(1, 2), llm=True)
    out = op(table, Context(backends={"judge": ScriptedChat(["no verdict here"])}))
    got = {r["metric"]: r["value"] for r in out.to_pylist()}
    assert got == {"token_f1": 1.0, "recall@1": 0.0, "recall@2": 1.0}
    assert op.stats.rejects == 1  # an unusable judge reply is counted, never scored

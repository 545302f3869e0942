"""The eval report's per-group and dev/test split blocks (no data set needed)."""

import pytest

from speakerflow.benchmarks.evaluate import markdown_summary, summarise
from speakerflow.benchmarks.qa_data import LOCOMO_SPLITS, QAData, QAItem, parse_groups


def _row(group, category, r10):
    return {
        "group": group,
        "category": category,
        "recall": {"5": r10 / 2, "10": r10},
        "token_f1": 0.1,
        "latency_ms": 5.0,
        "context_tokens": 10,
    }


def test_by_group_and_splits():
    rows = [
        _row("conv-26", "multi-hop", 1.0),
        _row("conv-26", "single-hop", 0.0),
        _row("conv-44", "temporal", 0.5),
    ]
    rep = summarise(rows, (5, 10), LOCOMO_SPLITS)
    assert rep["by_group"] == {
        "conv-26": {"questions": 2, "evidence_recall": {"5": 0.25, "10": 0.5}},
        "conv-44": {"questions": 1, "evidence_recall": {"5": 0.25, "10": 0.5}},
    }
    assert rep["splits"]["dev"]["groups"] == ["conv-26"] and rep["splits"]["dev"]["questions"] == 2
    assert rep["splits"]["dev"]["by_category"]["multi-hop"]["evidence_recall"]["10"] == 1.0
    assert rep["splits"]["test"]["evidence_recall"]["10"] == 0.5
    assert summarise(rows[:2], (5, 10), LOCOMO_SPLITS)["splits"].keys() == {
        "dev"
    }  # absent halves are left out
    assert summarise(rows, (5, 10))["splits"] == {}
    md = markdown_summary([{**rep, "system": "x", "ablate": None}])
    assert "dev half (conv-26; 2 questions)" in md and "test half" in md
    assert "| system | conv-26 (2) | conv-44 (1) |" in md and "| x | 0.500 | 0.500 |" in md
    assert "both dev data" in md


def test_groups_filter():
    assert parse_groups("dev") == list(LOCOMO_SPLITS["dev"])
    assert parse_groups(["conv-44", " conv-44", "test"]) == list(LOCOMO_SPLITS["test"])
    assert set(LOCOMO_SPLITS["dev"]).isdisjoint(LOCOMO_SPLITS["test"])
    qa = QAData(
        "locomo",
        [("conv-26", None), ("conv-44", None)],
        [
            QAItem("a", "conv-26", "q", "a", "c", ("D1:1",)),
            QAItem("b", "conv-44", "q", "a", "c", ("D1:1",)),
        ],
    )
    only = qa.only("conv-44")
    assert [g for g, _ in only.groups] == ["conv-44"] and [q.qid for q in only.questions] == ["b"]
    with pytest.raises(ValueError, match="unknown group"):
        qa.only("conv-99")

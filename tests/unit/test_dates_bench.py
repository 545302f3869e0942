"""benchmarks/dates: the scorer on a two-item set written here (the frozen set itself is a
benchmark, not a test)."""

import json
from datetime import date

import pytest

from speakerflow.benchmarks.dates import by_temporal, load_items, score


def _set(tmp_path, items):
    (tmp_path / "expressions.jsonl").write_text("\n".join(json.dumps(i) for i in items) + "\n")
    return tmp_path


ITEMS = [
    {
        "id": "x1",
        "text": "I fixed the bike yesterday, all good now",
        "expr": "yesterday",
        "message_time": "2025-03-10T12:00:00Z",
        "expected": "2025-03-09",
        "kind": "relative_day",
    },
    {
        "id": "x2",
        "text": "we meet on 2 April 2025 then",
        "expr": "2 April 2025",
        "message_time": "2025-03-10T12:00:00Z",
        "expected": "2025-04-03",  # deliberately not the day said: scored wrong
        "kind": "explicit",
    },
]


def test_score_counts_exact_days_by_kind(tmp_path):
    items = load_items(_set(tmp_path, ITEMS))
    report = score(items, by_temporal)
    assert report["by_kind"] == {"explicit": 0.0, "relative_day": 1.0}
    assert report["accuracy"] == 0.5 and report["wrong"] == ["x2"]


def test_within_span_counts_a_day_inside_a_longer_span(tmp_path):
    items = load_items(_set(tmp_path, ITEMS[:1]))
    report = score(items, lambda text, expr, sent: (date(2025, 3, 3), date(2025, 3, 9)))
    assert report["accuracy"] == 0.0 and report["within_span"] == 1.0


def test_load_items_names_a_missing_field(tmp_path):
    bad = dict(ITEMS[0])
    del bad["expected"]
    with pytest.raises(ValueError, match=r"expressions.jsonl:1: missing \['expected'\]"):
        load_items(_set(tmp_path, [bad]))
    with pytest.raises(ValueError, match="not found"):
        load_items(tmp_path / "nothing")

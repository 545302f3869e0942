"""The frozen date-expression set dates_v1: any edit to its files fails (see its README)."""

import json
from collections import Counter
from datetime import date, datetime
from pathlib import Path

from frozen import assert_files_unchanged

ROOT = Path(__file__).resolve().parents[1] / "data" / "dates_v1"
KINDS = set(
    "explicit relative_day relative_week weekday_future weekday_past relative_month_year"
    " ordinal_in_month".split()
)
SHA256 = {
    "expressions.jsonl": "bb405038228d6072c8aac862f8f82df596e1c4922e41b8f69c819dd53922956c",
    "README.md": "e1528ebfd1ad655e462d970b2df56e991c692be66273e2310056ced12c35c180",
}


def _rows():
    text = (ROOT / "expressions.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_files_unchanged():
    assert_files_unchanged(ROOT, SHA256)


def test_rows():
    rows = _rows()
    assert len(rows) >= 150
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert set(r) == {"id", "text", "expr", "message_time", "expected", "kind", "tense"}, r
        assert r["text"].count(r["expr"]) == 1, r["id"]
        assert r["kind"] in KINDS and r["tense"] in {"past", "future", "none"}, r["id"]
        assert r["message_time"].endswith("Z"), r["id"]
        sent = datetime.fromisoformat(r["message_time"][:-1])
        assert 2023 <= sent.year <= 2027, r["id"]
        date.fromisoformat(r["expected"])
    kinds = Counter(r["kind"] for r in rows)
    assert kinds.keys() == KINDS
    assert kinds["weekday_future"] + kinds["weekday_past"] >= 30

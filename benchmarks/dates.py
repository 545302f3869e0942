"""Date resolvers side by side on the frozen date expressions (tests/data/dates_v1).

Each item is a chat message holding one date expression, the time it was sent and the day
the expression means (the set's README has the rules). Scored, per kind of expression:

* ``temporal``: :func:`speakerflow.ops.text.temporal.resolve` over the whole message with
  the message time as its reference; the answer is the single day of the span that overlaps
  the expression. ``accuracy`` counts the expected day exactly (a span of more than one
  day is wrong there); ``within_span`` counts it inside the span (``last week`` read as the
  calendar week that holds the day meant).
* ``dateparser-search``: ``dateparser.search.search_dates`` over the whole message with the
  message time as ``RELATIVE_BASE`` (the same task: find the expression, then resolve it);
  the answer is the date of the hit that overlaps the expression.
* ``dateparser-parse``: ``dateparser.parse`` of the expression alone, cut out of the message
  for it (an easier task: the expression is given, the sentence's tense is not).

``dateparser`` is optional (``pip install dateparser``); without it only ``temporal`` runs.

``python -m speakerflow.benchmarks.dates [tests/data/dates_v1] [--json]``
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Any

from speakerflow.ops.text.temporal import resolve

DEFAULT_SET = Path(__file__).resolve().parents[1] / "tests" / "data" / "dates_v1"

#: A resolver: (message text, expression, message time) -> the first and last day it reads
#: (the same day for a single date), or None.
Resolver = Callable[[str, str, datetime], tuple[date, date] | None]


def load_items(folder: Path) -> list[dict[str, Any]]:
    """The set's items; ``ValueError`` names the first line that lacks a field."""
    path = folder / "expressions.jsonl"
    if not path.is_file():
        raise ValueError(f"{path} not found (a dates set holds expressions.jsonl)")
    items = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        item = json.loads(line)
        missing = {"id", "text", "expr", "message_time", "expected", "kind"} - item.keys()
        if missing:
            raise ValueError(f"{path}:{n}: missing {sorted(missing)}")
        items.append(item)
    return items


def _sent(item: dict[str, Any]) -> datetime:
    """The message time as a naive UTC datetime (what both resolvers take as a base)."""
    return datetime.fromisoformat(item["message_time"].replace("Z", "+00:00")).replace(tzinfo=None)


def _overlaps(start: int, end: int, text: str, expr: str) -> bool:
    at = text.index(expr)
    return start < at + len(expr) and at < end


def by_temporal(text: str, expr: str, sent: datetime) -> tuple[date, date] | None:
    for span in resolve(text, sent):
        if _overlaps(span.offset, span.offset + len(span.text), text, expr):
            return span.start, span.end
    return None


def _dateparser() -> Any:
    try:
        import dateparser
        import dateparser.search
    except ImportError:
        return None
    return dateparser


def by_dateparser_search(text: str, expr: str, sent: datetime) -> tuple[date, date] | None:
    dp = _dateparser()
    hits = dp.search.search_dates(text, languages=["en"], settings={"RELATIVE_BASE": sent}) or []
    start = 0
    for said, when in hits:
        at = text.find(said, start)
        if at < 0:
            continue
        start = at + len(said)
        if _overlaps(at, at + len(said), text, expr):
            return when.date(), when.date()
    return None


def by_dateparser_parse(text: str, expr: str, sent: datetime) -> tuple[date, date] | None:
    when = _dateparser().parse(expr, languages=["en"], settings={"RELATIVE_BASE": sent})
    return (when.date(), when.date()) if when else None


def score(items: list[dict[str, Any]], resolver: Resolver) -> dict[str, Any]:
    """Accuracy (the expected day exactly) overall and by kind, ``within_span`` (the expected
    day inside the span read); ``wrong`` lists the ids not read exactly."""
    right: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    within = 0
    wrong = []
    for item in items:
        got = resolver(item["text"], item["expr"], _sent(item))
        expected = date.fromisoformat(item["expected"])
        total[item["kind"]] += 1
        within += got is not None and got[0] <= expected <= got[1]
        if got == (expected, expected):
            right[item["kind"]] += 1
        else:
            wrong.append(item["id"])
    return {
        "accuracy": round(sum(right.values()) / max(1, len(items)), 3),
        "within_span": round(within / max(1, len(items)), 3),
        "by_kind": {k: round(right[k] / total[k], 3) for k in sorted(total)},
        "items": len(items),
        "wrong": wrong,
    }


def run(folder: Path = DEFAULT_SET) -> dict[str, Any]:
    items = load_items(folder)
    resolvers: dict[str, Resolver] = {"temporal": by_temporal}
    if _dateparser() is not None:
        resolvers["dateparser-search"] = by_dateparser_search
        resolvers["dateparser-parse"] = by_dateparser_parse
    else:
        print("dateparser is not installed: only temporal is scored", file=sys.stderr)
    kinds: dict[str, int] = defaultdict(int)
    for item in items:
        kinds[item["kind"]] += 1
    return {
        "benchmark": "dates",
        "set": folder.name,
        "kinds": dict(sorted(kinds.items())),
        "resolvers": {name: score(items, fn) for name, fn in resolvers.items()},
    }


def format_report(report: dict[str, Any]) -> str:
    names = list(report["resolvers"])
    lines = [f"{'kind':<22}{'n':>4}" + "".join(f"{n:>20}" for n in names)]
    for kind, n in report["kinds"].items():
        cells = "".join(f"{report['resolvers'][r]['by_kind'][kind]:>20.3f}" for r in names)
        lines.append(f"{kind:<22}{n:>4}{cells}")
    total = sum(report["kinds"].values())
    cells = "".join(f"{report['resolvers'][r]['accuracy']:>20.3f}" for r in names)
    lines.append(f"{'all':<22}{total:>4}{cells}")
    cells = "".join(f"{report['resolvers'][r]['within_span']:>20.3f}" for r in names)
    lines.append(f"{'all, within the span':<22}{total:>4}{cells}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m speakerflow.benchmarks.dates", description=__doc__)
    p.add_argument("folder", nargs="?", type=Path, default=DEFAULT_SET)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    args = p.parse_args(argv)
    try:
        report = run(args.folder)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

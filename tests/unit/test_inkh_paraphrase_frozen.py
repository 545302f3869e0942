"""The frozen InKH paraphrase set (tests/data/inkh_paraphrase): unchanged and well-formed.

The set was written by hand, before the knowledge reader was changed, by someone who did not
read the reader, its lexicon or the benchmark generator. No line may be edited once the reader
is tuned: each file's sha256 is pinned in the folder's README and checked here, so an edit
fails CI. The dev files may be used for tuning; the test files only for reporting.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "inkh_paraphrase"
STATEMENT_FILES = ("statements_dev.jsonl", "statements_test.jsonl")
REQUEST_FILES = ("requests_dev.jsonl", "requests_test.jsonl")
ALL_FILES = STATEMENT_FILES + REQUEST_FILES

TICKERS = {"BTC", "ETH", "SOL", "XRP", "DOGE", "ADA", "AVAX", "LINK", "DOT", "LTC", "BNB", "MATIC"}
RISKS = {
    "risk:slippage",
    "risk:liquidation",
    "risk:depeg",
    "risk:exchangeoutage",
    "risk:fundingspike",
    "risk:smartcontractexploit",
    "risk:counterparty",
    "risk:regulatory",
    "risk:oraclefailure",
}
STRATEGIES = {
    "strategy:gridbot",
    "strategy:fundingarbitrage",
    "strategy:momentumbreakout",
    "strategy:meanreversion",
    "strategy:basistrade",
    "strategy:marketmaking",
    "strategy:dca",
    "strategy:trendfollowing",
    "strategy:scalping",
}
TRADER_ROSTER = {"priya", "omar", "lena", "marco", "dana"}
RISK_OFFICERS = {"sam"}
PEOPLE = TRADER_ROSTER | RISK_OFFICERS

PERCENT = "percent"
# relation -> (subject kind, value kind); a set of strings is an enum, a set of ids an entity
# relation
RELATIONS: dict[str, tuple[str, object]] = {
    "fee": ("asset", PERCENT),
    "regime": ("asset", {"bullish", "bearish", "ranging", "volatile"}),
    "liquidity": ("asset", {"deep", "thin"}),
    "exposed_to": ("asset", RISKS),
    "win_rate": ("trader", PERCENT),
    "max_drawdown": ("trader", PERCENT),
    "status": ("trader", {"active", "paused"}),
    "uses_strategy": ("trader", STRATEGIES),
    "risk_preference": ("person", {"conservative", "moderate", "aggressive"}),
    "max_position": ("person", PERCENT),
}
ENTITY_RELATIONS = {"exposed_to", "uses_strategy"}
OPS = {"set", "end", "correct"}
VOICES = {
    "trader": {"user_turn"},
    "risk_officer": {"user_turn"},
    "tool": {"tool_observation", "risk_signal", "portfolio_change"},
    "newswire": {"market_update"},
    "desk": {"market_update"},
}
INTENTS = {
    "market_analysis",
    "portfolio_review",
    "copy_trading_evaluation",
    "trade_preparation",
    "other",
}
STATEMENT_KEYS = {
    "id",
    "voice",
    "source_type",
    "source",
    "trust_tier",
    "ts",
    "content",
    "gold",
    "hedged",
}
STATEMENT_OPTIONAL = {"addressee", "context"}
REQUEST_KEYS = {"id", "user", "content", "intent", "needs", "entities"}

MIN_LINES = {
    "statements_dev.jsonl": 80,
    "statements_test.jsonl": 220,
    "requests_dev.jsonl": 20,
    "requests_test.jsonl": 60,
}
# minimum share of statements per category, in each statement file
MIN_SHARE = {
    "no_fact": 0.25,
    "multi_fact": 0.12,
    "ending": 0.08,
    "correction": 0.04,
    "attribution": 0.08,
    "hedged": 0.08,
}


def load(name: str) -> list[dict]:
    with (DATA / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def readme_hashes() -> dict[str, str]:
    text = (DATA / "README.md").read_text(encoding="utf-8")
    return dict(re.findall(r"`?([a-z_]+\.jsonl)`?\s*\|\s*\d+\s*\|\s*`?([0-9a-f]{64})`?", text))


def kind_of(entity: str) -> str:
    return entity.split(":", 1)[0]


def valid_entity(entity: str) -> bool:
    kind, _, name = entity.partition(":")
    if kind == "asset":
        return name in TICKERS
    if kind == "trader":
        return re.fullmatch(r"[a-z0-9]+", name) is not None
    if kind == "person":
        return name in PEOPLE
    if kind == "risk":
        return entity in RISKS
    if kind == "strategy":
        return entity in STRATEGIES
    return False


def valid_percent(value: object) -> bool:
    if not isinstance(value, str) or not re.fullmatch(r"\d+(\.\d+)?%", value):
        return False
    number = float(value[:-1])
    return 0 < number <= 100 and f"{number:g}%" == value


def valid_value(relation: str, value: object) -> bool:
    kind = RELATIONS[relation][1]
    if kind == PERCENT:
        return valid_percent(value)
    return value in kind  # type: ignore[operator]


def categories(row: dict) -> set[str]:
    gold = row["gold"]
    cats = set()
    if not gold:
        cats.add("no_fact")
    if len(gold) >= 2:
        cats.add("multi_fact")
    if any(g["op"] == "end" for g in gold):
        cats.add("ending")
    if any(g["op"] == "correct" for g in gold):
        cats.add("correction")
    if row["source_type"] == "user_turn" and any(
        kind_of(g["subject"]) == "person" and g["subject"] != f"person:{row['source']}"
        for g in gold
    ):
        cats.add("attribution")
    if row["hedged"]:
        cats.add("hedged")
    return cats


@pytest.mark.parametrize("name", ALL_FILES)
def test_file_matches_the_sha256_pinned_in_the_readme(name):
    pinned = readme_hashes()
    assert name in pinned, f"README.md pins no sha256 for {name}"
    digest = hashlib.sha256((DATA / name).read_bytes()).hexdigest()
    assert digest == pinned[name], f"{name} changed after it was frozen (sha256 {digest})"


def test_readme_states_the_freeze_rule_and_line_counts():
    text = (DATA / "README.md").read_text(encoding="utf-8")
    assert "frozen" in text.lower() and "2026-12-01" in text
    for name in ALL_FILES:
        count = len(load(name))
        assert re.search(rf"{re.escape(name)}`?\s*\|\s*{count}\s*\|", text), (
            f"README line count for {name}"
        )


@pytest.mark.parametrize("name", ALL_FILES)
def test_minimum_line_counts(name):
    assert len(load(name)) >= MIN_LINES[name]


def test_ids_unique_and_contents_disjoint_across_dev_and_test():
    for files, prefix in ((STATEMENT_FILES, "s"), (REQUEST_FILES, "r")):
        ids: list[str] = []
        contents: dict[str, set[str]] = {}
        for name in files:
            split = name.split("_")[1].split(".")[0]
            rows = load(name)
            for row in rows:
                assert re.fullmatch(rf"{prefix}-{split}-\d{{3}}", row["id"]), row["id"]
            ids += [row["id"] for row in rows]
            contents[split] = {" ".join(row["content"].lower().split()) for row in rows}
        assert len(ids) == len(set(ids)), "duplicate ids"
        assert not contents["dev"] & contents["test"], "a line is in both dev and test"


@pytest.mark.parametrize("name", STATEMENT_FILES)
def test_statement_lines_are_well_formed(name):
    last_ts = None
    for row in load(name):
        rid = row["id"]
        keys = set(row)
        assert STATEMENT_KEYS <= keys <= STATEMENT_KEYS | STATEMENT_OPTIONAL, rid
        assert row["voice"] in VOICES and row["source_type"] in VOICES[row["voice"]], rid
        if row["voice"] == "trader":
            assert row["source"] in TRADER_ROSTER, rid
        elif row["voice"] == "risk_officer":
            assert row["source"] in RISK_OFFICERS, rid
        else:
            assert row["source"] not in PEOPLE and re.fullmatch(r"[a-z_]+", row["source"]), rid
        assert row["trust_tier"] in (1, 2, 3), rid
        assert isinstance(row["hedged"], bool), rid
        assert row["hedged"] == (row["trust_tier"] == 3), f"{rid}: hedged <=> tier 3"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", row["ts"]), rid
        ts = datetime.fromisoformat(row["ts"].replace("Z", "+00:00"))
        assert last_ts is None or ts > last_ts, f"{rid}: timestamps increase"
        last_ts = ts
        assert isinstance(row["content"], str) and row["content"].strip(), rid
        assert not re.search(r"\d\s*bps\b", row["content"], re.I), f"{rid}: percents only"
        context = row.get("context", [])
        assert isinstance(context, list), rid
        for item in context:
            assert set(item) == {"source", "content"} and item["content"].strip(), rid
        subjects = set()
        for fact in row["gold"]:
            assert set(fact) == {"subject", "relation", "value", "op"}, rid
            relation, subject, op, value = (
                fact["relation"],
                fact["subject"],
                fact["op"],
                fact["value"],
            )
            assert relation in RELATIONS, f"{rid}: unknown relation {relation}"
            assert op in OPS, rid
            assert valid_entity(subject) and kind_of(subject) == RELATIONS[relation][0], (
                f"{rid}: {subject}"
            )
            if kind_of(subject) == "person":
                assert subject.split(":", 1)[1] in TRADER_ROSTER, (
                    f"{rid}: private facts belong to users"
                )
            if op == "end" and relation not in ENTITY_RELATIONS:
                assert value is None, f"{rid}: ending a single-valued slot carries no value"
            else:
                assert valid_value(relation, value), f"{rid}: {relation}={value!r}"
            if op == "correct":
                assert any(item["source"] == row["source"] for item in context), (
                    f"{rid}: a correction needs the corrected line by the same source in context"
                )
            subjects.add(subject)
        if "addressee" in row:
            assert row["addressee"] in TRADER_ROSTER, rid
            assert f"person:{row['addressee']}" in subjects, f"{rid}: the addressee's fact"
        facts = [(f["subject"], f["relation"], f["value"], f["op"]) for f in row["gold"]]
        assert len(facts) == len(set(facts)), f"{rid}: duplicate gold fact"


@pytest.mark.parametrize("name", STATEMENT_FILES)
def test_statement_category_shares(name):
    rows = load(name)
    counts = dict.fromkeys(MIN_SHARE, 0)
    for row in rows:
        for cat in categories(row):
            counts[cat] += 1
    for cat, share in MIN_SHARE.items():
        assert counts[cat] >= share * len(rows), f"{name}: {cat} {counts[cat]}/{len(rows)}"
    voices = {row["voice"] for row in rows}
    assert voices == set(VOICES), f"{name}: every voice is represented"


@pytest.mark.parametrize("name", REQUEST_FILES)
def test_request_lines_are_well_formed(name):
    rows = load(name)
    for row in rows:
        rid = row["id"]
        assert set(row) == REQUEST_KEYS, rid
        assert row["user"] in TRADER_ROSTER, rid
        assert isinstance(row["content"], str) and row["content"].strip(), rid
        assert row["intent"] in INTENTS, rid
        assert all(valid_entity(e) for e in row["entities"]), rid
        assert len(row["entities"]) == len(set(row["entities"])), rid
        needs = [(n["subject"], n["relation"]) for n in row["needs"]]
        assert len(needs) == len(set(needs)), f"{rid}: duplicate need"
        for need in row["needs"]:
            assert set(need) == {"subject", "relation"}, rid
            subject, relation = need["subject"], need["relation"]
            assert relation in RELATIONS, rid
            if subject == "self":
                assert RELATIONS[relation][0] == "person", rid
            else:
                assert valid_entity(subject) and kind_of(subject) == RELATIONS[relation][0], rid
                assert subject in row["entities"], f"{rid}: a needed entity is named"
    if name == "requests_test.jsonl":
        assert {row["intent"] for row in rows} == INTENTS

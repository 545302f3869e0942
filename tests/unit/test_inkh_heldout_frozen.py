"""The held-out InKH set (tests/data/inkh_heldout) is frozen: hashes, line schema, templates."""

import hashlib
import json
import re
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "inkh_heldout"
SHA256 = {
    "harness_phrasings.json": "95d7466fa4b807f4b62c63560464dd3dd1569b4f001dd5e337784cf6b959ebf5",
    "statements_test3.jsonl": "3bdbf0745a2ff2f2b4e6e8ac6c0e4e6fcd2c5c46c11101d147cdf9e1200943b9",
    "requests_test3.jsonl": "39d219be89d7792045580f2dbe4b9d6ec05d81f04acc69633d2cd62ac9e3dd6c",
}
ROSTER = {"priya", "omar", "lena", "marco", "dana", "sam"}
SOURCES = {  # source -> (voice, source_type)
    **{n: ("trader", "user_turn") for n in ROSTER - {"sam"}},
    "sam": ("risk_officer", "user_turn"),
    "exchange_api": ("tool", "tool_observation"),
    "copy_stats": ("tool", "tool_observation"),
    "risk_engine": ("tool", "risk_signal"),
    "portfolio_service": ("tool", "portfolio_change"),
    "market_desk": ("desk", "market_update"),
    "newswire": ("newswire", "market_update"),
}
CATEGORY = {
    "regime": {"bullish", "bearish", "ranging", "volatile"},
    "liquidity": {"deep", "thin"},
    "status": {"active", "paused"},
    "risk_preference": {"conservative", "moderate", "aggressive"},
}
PERCENT = {"fee", "win_rate", "max_drawdown", "max_position"}
MULTI = {"exposed_to": "risk", "uses_strategy": "strategy"}
SUBJECT = {
    **dict.fromkeys(("fee", "regime", "liquidity", "exposed_to"), "asset"),
    **dict.fromkeys(("win_rate", "max_drawdown", "status", "uses_strategy"), "trader"),
    **dict.fromkeys(("risk_preference", "max_position"), "person"),
}
ENTITY = re.compile(r"(asset:[A-Z]+|trader:[a-z0-9]+|person:[a-z]+|risk:[a-z]+|strategy:[a-z]+)")
INTENTS = {
    "market_analysis",
    "portfolio_review",
    "copy_trading_evaluation",
    "trade_preparation",
    "other",
}


def _lines(name):
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("name", sorted(SHA256))
def test_file_is_frozen(name):
    assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == SHA256[name]


def _check_fact(f):
    assert set(f) == {"subject", "relation", "value", "op"}
    rel, value, op = f["relation"], f["value"], f["op"]
    assert f["subject"].split(":")[0] == SUBJECT[rel] and ENTITY.fullmatch(f["subject"])
    assert op in {"set", "end", "correct"}
    if rel in MULTI:
        assert value.split(":")[0] == MULTI[rel] and ENTITY.fullmatch(value)
    elif op == "end":
        assert value is None
    elif rel in PERCENT:
        assert value == f"{float(value[:-1]):g}%"
    else:
        assert value in CATEGORY[rel]


def test_statements_schema():
    lines = _lines("statements_test3.jsonl")
    assert [s["id"] for s in lines] == [f"s-test3-{i:03d}" for i in range(1, len(lines) + 1)]
    required = {
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
    for s in lines:
        assert required <= set(s) <= required | {"addressee", "context"}, s["id"]
        assert SOURCES[s["source"]] == (s["voice"], s["source_type"]), s["id"]
        assert s["trust_tier"] in (1, 2, 3) and s["hedged"] is (s["trust_tier"] == 3), s["id"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", s["ts"]), s["id"]
        assert isinstance(s["content"], str) and s["content"].strip(), s["id"]
        assert s.get("addressee", "priya") in ROSTER, s["id"]
        for c in s.get("context", []):
            assert set(c) == {"source", "content"} and c["source"] in SOURCES, s["id"]
        for f in s["gold"]:
            _check_fact(f)
            assert f["op"] != "correct" or s.get("context"), s["id"]
    assert [s["ts"] for s in lines] == sorted({s["ts"] for s in lines})


def test_requests_schema():
    lines = _lines("requests_test3.jsonl")
    assert [r["id"] for r in lines] == [f"r-test3-{i:03d}" for i in range(1, len(lines) + 1)]
    for r in lines:
        assert set(r) == {"id", "user", "content", "intent", "needs", "entities"}, r["id"]
        assert r["user"] in ROSTER and r["intent"] in INTENTS and r["content"].strip(), r["id"]
        for n in r["needs"]:
            assert set(n) == {"subject", "relation"}, r["id"]
            kind = SUBJECT[n["relation"]]
            if n["subject"] == "self":
                assert kind == "person", r["id"]
            else:
                assert ENTITY.fullmatch(n["subject"]), r["id"]
                assert n["subject"].split(":")[0] == kind != "person", r["id"]
        assert all(ENTITY.fullmatch(e) for e in r["entities"]), r["id"]


def test_templates_placeholders():
    templates = json.loads((DATA / "harness_phrasings.json").read_text("utf-8"))["templates"]
    assert set(templates) == PERCENT | set(CATEGORY)
    for rel, texts in templates.items():
        assert len(texts) == 6 and len(set(texts)) == 6, rel
        want = {"asset": ["a"], "trader": ["t"], "person": []}[SUBJECT[rel]]
        want.append("v" if rel in PERCENT else "w")
        for text in texts:
            assert sorted(re.findall(r"\{(\w*)\}", text)) == sorted(want), text

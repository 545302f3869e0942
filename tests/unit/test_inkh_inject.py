"""Passive-injection internals: utility arithmetic, neighbourhood pool limits, compress/TopB."""

from datetime import UTC, datetime, timedelta

import pytest

from speakerflow.graphs.facts import FactGraph, FactItem
from speakerflow.ops.inject import UtilityConfig, UtilityScorer, compress, count_tokens

T = datetime(2026, 3, 1, tzinfo=UTC)


def item(i, subject="asset:BTC", rel="fee", obj="value:0.1%", **kw):
    return FactItem(f"f{i}", "g", subject, rel, obj, f"{subject} {rel}", [f"m{i}"], T, T, T, **kw)


def test_score_is_the_weighted_sum_of_its_terms():
    u = UtilityScorer(UtilityConfig())
    k = item(1, confidence=0.35, maturity="verified", regime_tag="bullish", trust_tier=2)
    now = T + timedelta(days=60)
    terms = u.terms(k, {"asset:BTC"}, set(), "trade_preparation", now, "bearish")
    # hand-computed: rel (intent profile) .5, struct 1, mat .7, fresh 2^-(60/120), regime e^-.5,
    # trust .7, noise .5
    assert terms == pytest.approx(
        {
            "rel": 0.5,
            "struct": 1.0,
            "mat": 0.7,
            "fresh": 2**-0.5,
            "state": 0.60653066,
            "trust": 0.7,
            "noise": 0.5,
        }
    )
    c = u.config
    expected = (
        c.rel * 0.5
        + c.struct
        + c.mat * 0.7
        + c.fresh * 2**-0.5
        + c.regime * 0.60653066
        + c.trust * 0.7
        - c.noise * 0.5
    )
    assert u.score(k, {"asset:BTC"}, set(), "trade_preparation", now, "bearish") == pytest.approx(
        expected
    )


def test_neighbourhood_hops_limit_and_hub_fanout():
    fg = FactGraph(None, "g")
    fg.add(item(0, "asset:BTC", "exposed_to", "risk:hub"))
    for i in range(1, 100):
        fg.add(item(i, f"asset:X{i}", "exposed_to", "risk:hub"))
    one = fg.neighbourhood(["asset:BTC"], hops=1)
    assert [k.edge_id for k in one] == ["f0"]
    two = fg.neighbourhood(["asset:BTC"], hops=2, fanout=10)
    assert len(two) == 11  # f0 + the hub's 10 newest facts
    assert len(fg.neighbourhood(["risk:hub"], hops=1, limit=30)) == 30


def test_compress_merges_same_value_and_counts_tokens():
    a, b = item(1), item(2)
    lines = compress([(0.9, a), (0.8, b), (0.7, item(3, obj="value:0.2%"))], {})
    assert (
        len(lines) == 2
        and lines[0].evidence_ids == ["m1", "m2"]
        and lines[0].edge_ids == ["f1", "f2"]
    )
    assert lines[0].tokens == count_tokens(lines[0].text)
    assert count_tokens("BTC fee: 0.12% [verified]") == 10

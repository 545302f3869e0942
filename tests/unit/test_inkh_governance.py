"""Governance by action risk and user overlay, end to end through passive injection."""

from datetime import UTC, datetime, timedelta

import pytest

from speakerflow.graphs.facts import FactGraph
from speakerflow.ops.inject import InjectConfig, PassiveInjector
from speakerflow.ops.knowledge.canonicalize import Canonicalizer
from speakerflow.ops.knowledge.extract_knowledge import Candidate
from speakerflow.ops.knowledge.governance import Governance, GovernanceConfig
from speakerflow.ops.knowledge.invalidate import upsert_facts

T = datetime(2026, 3, 1, tzinfo=UTC)


def test_allow_formula():
    g = Governance()
    assert g.allow(0.31, "candidate", "shared", "low", None)
    assert not g.allow(0.29, "proven", "shared", "low", None)  # c_eff < epsilon
    assert not g.allow(0.9, "candidate", "shared", "high", None)  # maturity < theta(high)
    assert g.allow(0.9, "verified", "shared", "high", None)
    assert not g.allow(0.9, "deprecated", "shared", "low", None)
    assert g.allow(0.9, "proven", "user:ana", "high", "ana")
    assert not g.allow(0.9, "proven", "user:ana", "low", "ben")  # outside ben's overlay
    assert not g.allow(0.9, "proven", "user:ana", "low", None)
    with pytest.raises(ValueError):
        Governance(
            GovernanceConfig(theta={"low": "verified", "medium": "candidate", "high": "proven"})
        )


def _graph():
    fg = FactGraph(None, "g")
    c = Canonicalizer()
    c.resolve_surface("BTC", "asset")
    for who in ("ana", "ben"):
        c.resolve_surface(who, "person")
    cands = [
        Candidate(
            "asset:BTC", "fee", "0.1%", "fee", ("m1",), 0.9, "shared", T, 1
        ),  # verified (tier 1)
        Candidate(
            "asset:BTC", "liquidity", "thin", "liq", ("m2",), 0.75, "shared", T, 2
        ),  # candidate (tier 2)
        Candidate(
            "person:ana", "risk_preference", "aggressive", "p", ("m3",), 0.9, "user:ana", T, 1
        ),
        Candidate(
            "person:ben", "risk_preference", "conservative", "p", ("m4",), 0.9, "user:ben", T, 1
        ),
    ]
    upsert_facts(fg, cands, T)
    return PassiveInjector(fg, c, config=InjectConfig(record_use=False))


def _said(wc):
    return {ln.text.split(" [")[0] for ln in wc.lines if ln.kind == "knowledge"}


def test_risk_raises_the_maturity_bar():
    inj = _graph()
    now = T + timedelta(hours=1)
    low = _said(inj.inject("Market analysis of BTC: liquidity and fees and trend?", now))
    high = _said(inj.inject("Place a long order on BTC with 5x leverage: liquidity and fees?", now))
    assert "BTC liquidity: thin" in low and "BTC liquidity: thin" not in high
    assert "BTC fee: 0.1%" in high


def test_user_never_receives_another_users_private_items():
    inj = _graph()
    now = T + timedelta(hours=1)
    for user, own, other in (
        ("ana", "aggressive", "conservative"),
        ("ben", "conservative", "aggressive"),
    ):
        ctx = inj.inject(
            "Prepare an order to buy BTC, check my risk tolerance and ana and ben risk tolerance",
            now,
            user,
        )
        text = ctx.text()
        assert f"risk preference: {own}" in text and f"risk preference: {other}" not in text
    anon = inj.inject("ana and ben risk tolerance?", now, None).text()
    assert "risk preference" not in anon


def test_budget_respected_and_lines_cite_evidence():
    inj = _graph()
    for budget in (30, 60, 600):
        inj.config = InjectConfig(budget=budget, record_use=False)
        wc = inj.inject(
            "Prepare an order to buy BTC: fees, liquidity and my risk tolerance?", T, "ana"
        )
        assert wc.tokens <= budget
        assert all(ln.evidence_ids for ln in wc.lines if ln.kind == "knowledge")

"""Maintenance: the probe mix, merge checks queued for review, recompute of maturity."""

import random
from collections import Counter
from datetime import UTC, datetime

from speakerflow.graphs.facts import FactGraph, FactItem
from speakerflow.ops.knowledge.maintenance import PROBES, recompute, sample_probe

T = datetime(2026, 3, 1, tzinfo=UTC)


def test_probe_mix_follows_the_paper():
    rng = random.Random(7)
    counts = Counter(sample_probe(rng) for _ in range(20_000))
    for probe, weight in PROBES.items():
        assert abs(counts[probe] / 20_000 - weight / 100) < 0.015, probe


def test_recompute_applies_psi_to_every_fact():
    fg = FactGraph(None, "g")
    a = FactItem(
        "a",
        "g",
        "asset:BTC",
        "fee",
        "value:0.1%",
        "d",
        ["m1"],
        T,
        T,
        T,
        maturity="verified",
        reuse_count=6,
        validations=3,
        utility=0.7,
    )
    b = FactItem(
        "b", "g", "asset:BTC", "regime", "value:bullish", "d", ["m2"], T, T, T, maturity="candidate"
    )
    fg.add(a), fg.add(b)
    assert recompute(fg, T) == 1 and a.maturity == "proven" and b.maturity == "candidate"


def test_link_discovery_suggests_co_mentioned_unlinked_entities():
    from speakerflow.ops.knowledge.maintenance import discover_links
    from speakerflow.schemas import Entity

    fg = FactGraph(None, "g")
    fg.put_entities(
        [
            Entity(entity_id=e, group_id="g", name=e, etype=e.split(":")[0])
            for e in ("asset:BTC", "asset:ETH", "risk:depeg")
        ]
    )
    for i, m in enumerate(("m1", "m2")):  # BTC and ETH facts from the same two events, never linked
        fg.add(FactItem(f"b{i}", "g", "asset:BTC", "fee", "value:0.1%", "d", [m], T, T, T))
        fg.add(FactItem(f"e{i}", "g", "asset:ETH", "fee", "value:0.1%", "d", [m], T, T, T))
    fg.add(FactItem("x", "g", "asset:ETH", "exposed_to", "risk:depeg", "d", ["m1"], T, T, T))
    assert discover_links(fg) == [
        {"kind": "link", "entities": ["asset:BTC", "asset:ETH"], "co_mentions": 2}
    ]

"""Slot-scoped write-time invalidation: only the same slot is touched; old items are kept."""

from datetime import UTC, datetime, timedelta

from speakerflow.graphs.facts import FactGraph
from speakerflow.ops.knowledge.extract_knowledge import Candidate
from speakerflow.ops.knowledge.invalidate import UpsertConfig, upsert_facts

T = datetime(2026, 3, 1, tzinfo=UTC)


def cand(subject, rel, value, mid, hours, conf=0.9, scope="shared", tier=1):
    return Candidate(
        subject,
        rel,
        value,
        f"{subject} {rel} {value}",
        (mid,),
        conf,
        scope,
        T + timedelta(hours=hours),
        tier,
    )


def test_contradiction_invalidates_only_the_same_slot():
    fg = FactGraph(None, "g")
    upsert_facts(
        fg,
        [
            cand("asset:BTC", "fee", "0.1%", "m1", 0),
            cand("asset:BTC", "regime", "bullish", "m2", 0),
            cand("asset:ETH", "fee", "0.1%", "m3", 0),
            cand("asset:BTC", "exposed_to", "risk:slippage", "m4", 0),
            cand("person:ana", "risk_preference", "aggressive", "m5", 0, scope="user:ana"),
        ],
        T,
    )
    res = upsert_facts(fg, [cand("asset:BTC", "fee", "0.12%", "m6", 5)], T + timedelta(hours=5))
    assert res.invalidated == 1 and res.added == 1
    invalid = [k for k in fg.items.values() if k.invalid_at is not None]
    assert [(k.subject_id, k.relation, k.value) for k in invalid] == [("asset:BTC", "fee", "0.1%")]
    old = invalid[0]
    assert old.invalid_at == T + timedelta(hours=5) and old.maturity == "deprecated"
    assert fg.items[old.superseded_by].value == "0.12%"
    # unrelated facts (other relation, other subject with the same relation, entity-valued, person)
    # stay valid
    assert len([k for k in fg.items.values() if k.invalid_at is None]) == 5


def test_entity_valued_relations_do_not_contradict_each_other():
    fg = FactGraph(None, "g")
    upsert_facts(fg, [cand("asset:BTC", "exposed_to", "risk:slippage", "m1", 0)], T)
    res = upsert_facts(fg, [cand("asset:BTC", "exposed_to", "risk:liquidation", "m2", 1)], T)
    assert res.invalidated == 0 and all(k.invalid_at is None for k in fg.items.values())


def test_same_value_validates_instead_of_duplicating():
    fg = FactGraph(None, "g")
    upsert_facts(fg, [cand("asset:BTC", "fee", "0.1%", "m1", 0, conf=0.75, tier=2)], T)
    assert next(iter(fg.items.values())).maturity == "candidate"
    res = upsert_facts(fg, [cand("asset:BTC", "fee", "0.1%", "m2", 2)], T)
    (k,) = fg.items.values()
    assert (
        res.validated == 1
        and k.evidence_ids == ["m1", "m2"]
        and k.validations == 1
        and k.maturity == "verified"
    )


def test_hearsay_below_delta_and_noinv_keep_old_valid():
    fg = FactGraph(None, "g")
    upsert_facts(fg, [cand("asset:BTC", "fee", "0.1%", "m1", 0)], T)
    assert upsert_facts(fg, [cand("asset:BTC", "fee", "0%", "m2", 1, conf=0.3)], T).invalidated == 0
    fg2 = FactGraph(None, "g")
    upsert_facts(
        fg2, [cand("asset:BTC", "fee", "0.1%", "m1", 0)], T, UpsertConfig(invalidation=False)
    )
    r = upsert_facts(
        fg2, [cand("asset:BTC", "fee", "0.2%", "m2", 1)], T, UpsertConfig(invalidation=False)
    )
    assert (
        r.invalidated == 0 and r.kept_conflicts == 1 and len(fg2.current(("asset:BTC", "fee"))) == 2
    )


def test_fresh_evidence_revives_a_stale_deprecated_fact_but_not_an_invalidated_one():
    fg = FactGraph(None, "g")
    upsert_facts(fg, [cand("asset:BTC", "fee", "0.1%", "m1", 0)], T)
    (k,) = fg.items.values()
    k.maturity = "deprecated"  # as the staleness sweep leaves it
    upsert_facts(fg, [cand("asset:BTC", "fee", "0.1%", "m2", 1)], T)
    assert k.maturity == "verified" and k.invalid_at is None

"""Decay, effective confidence and maturity on hand-computed cases of the paper's formulas."""

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from speakerflow.ops.knowledge.decay import decay, effective_confidence, next_maturity

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Item:
    confidence: float
    relation: str
    valid_at: datetime
    last_validated: datetime | None = None
    regime_tag: str | None = None
    invalid_at: datetime | None = None


def test_decay_hand_computed():
    # lambda = ln2/10 per day, 5 days -> exp(-0.3466) = 0.7071; regime mismatch gamma 0.5 -> *
    # exp(-0.5)
    assert decay(T0 + timedelta(days=5), T0, 10.0) == pytest.approx(math.sqrt(0.5), rel=1e-9)
    assert decay(T0 + timedelta(days=5), T0, 10.0, "bullish", "bearish", 0.5) == pytest.approx(
        0.70710678 * 0.60653066, rel=1e-7
    )
    assert decay(T0, T0, 10.0, "bullish", None) == 1.0  # unknown current regime: no distance


def test_effective_confidence_type_rate_and_invalidation():
    # regime half-life 10 days; fee 120 days: same age, different decay
    reg = Item(0.8, "regime", T0)
    fee = Item(0.8, "fee", T0)
    now = T0 + timedelta(days=10)
    assert effective_confidence(reg, now) == pytest.approx(0.4)
    assert effective_confidence(fee, now) == pytest.approx(0.8 * 2 ** (-10 / 120))
    assert effective_confidence(Item(0.8, "fee", T0, last_validated=now), now) == pytest.approx(0.8)
    assert effective_confidence(Item(0.8, "fee", T0, invalid_at=now), now) == 0.0
    assert effective_confidence(Item(0.8, "fee", T0, invalid_at=now + timedelta(days=1)), now) > 0


def test_maturity_transitions():
    assert next_maturity("candidate", 0, 0, 0.0) == "candidate"
    assert next_maturity("candidate", 0, 1, 0.0) == "verified"  # validation evidence
    assert next_maturity("candidate", 3, 0, 0.5) == "verified"  # reuse with utility
    assert next_maturity("candidate", 3, 0, 0.4) == "candidate"
    assert next_maturity("verified", 5, 3, 0.5) == "proven"
    assert next_maturity("verified", 4, 3, 0.9) == "verified"
    assert next_maturity("proven", 5, 3, 0.1) == "deprecated"  # judged useless
    assert next_maturity("verified", 0, 0, 0.0, invalidated=True) == "deprecated"
    assert next_maturity("proven", 9, 9, 1.0, human="reject") == "deprecated"
    assert next_maturity("deprecated", 9, 9, 1.0) == "deprecated"
    assert next_maturity("deprecated", 0, 0, 0.0, human="approve") == "verified"
    assert next_maturity("verified", 0, 0, 0.0, human="approve") == "proven"

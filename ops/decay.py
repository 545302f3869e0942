"""Decay, effective confidence and maturity transitions (the paper's d_t, c_eff and Psi).

* decay ``d_t(k) = exp(-lambda_type * days(t - t_l)) * exp(-gamma * dist(regime(k), regime_now))``
  with ``lambda_type = ln 2 / half_life_days`` of the item's relation type (see
  :data:`speakerflow.ops.lexicon.RELATIONS`), ``t_l`` the last-validated time (else valid-at)
  and ``dist`` 0 when the regimes agree or either is unknown, else 1.
* effective confidence ``c_eff = c * d_t * 1[not invalidated at t]``.
* maturity ``Psi(mu, reuse nu, validations upsilon, utility q, human h)``: see :func:`next_maturity`.

>>> from datetime import datetime, timedelta, UTC
>>> t0 = datetime(2026, 1, 1, tzinfo=UTC)
>>> round(decay(t0 + timedelta(days=30), t0, half_life_days=30.0), 3)   # one half-life
0.5
>>> round(decay(t0, t0, 30.0, "bullish", "bearish", gamma=0.5), 4)       # regime mismatch
0.6065
"""
from __future__ import annotations

import math
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from speakerflow.graphs.maturity import (  # moved to graphs (the fact graph replays it); re-exported
    DEFAULT_MATURITY as DEFAULT_MATURITY,
)
from speakerflow.graphs.maturity import MaturityConfig as MaturityConfig
from speakerflow.graphs.maturity import next_maturity as next_maturity

from .lexicon import RELATION_BY_NAME

MATURITY_RANK = {"deprecated": 0, "candidate": 1, "verified": 2, "proven": 3}
DAY = 86400.0


class DecayConfig(BaseModel):
    """``gamma``: regime-distance weight; ``default_half_life_days`` for unknown relation types."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    gamma: float = 0.5
    default_half_life_days: float = 30.0


DEFAULT_DECAY = DecayConfig()


def half_life(relation: str, cfg: DecayConfig | None = None) -> float:
    rel = RELATION_BY_NAME.get(relation)
    return rel.half_life_days if rel else (cfg or DEFAULT_DECAY).default_half_life_days


def regime_distance(item_regime: str | None, current: str | None) -> float:
    """0 if the regimes agree or either is unknown, else 1."""
    return 0.0 if not item_regime or not current or item_regime == current else 1.0


def decay(now: datetime, last_validated: datetime, half_life_days: float, item_regime: str | None = None,
          current_regime: str | None = None, gamma: float = 0.5) -> float:
    """``exp(-ln2/half_life * days) * exp(-gamma * dist)``; 1.0 for a just-validated item in its regime."""
    days = max(0.0, (now - last_validated).total_seconds() / DAY)
    lam = math.log(2) / half_life_days
    return math.exp(-lam * days) * math.exp(-gamma * regime_distance(item_regime, current_regime))


_LAMBDA: dict[tuple[str, float], float] = {}


def time_decay(item, now: datetime, cfg: DecayConfig | None = None) -> float:
    """The time part of d_t: ``exp(-ln2/half_life(type) * days since last validation)``."""
    cfg = cfg or DEFAULT_DECAY
    key = (item.relation, cfg.default_half_life_days)
    lam = _LAMBDA.get(key)
    if lam is None:
        lam = _LAMBDA[key] = math.log(2) / half_life(item.relation, cfg)
    days = (now - (item.last_validated or item.valid_at)).total_seconds() / DAY
    return math.exp(-lam * days) if days > 0 else 1.0


def effective_confidence(item, now: datetime, current_regime: str | None = None,
                         cfg: DecayConfig | None = None, fresh: float | None = None) -> float:
    """``c * d_t * 1[valid at now]`` for an item with ``confidence``, ``relation``, ``valid_at``,
    ``last_validated``, ``regime_tag`` and ``invalid_at`` attributes; ``fresh`` reuses an
    already computed :func:`time_decay`."""
    cfg = cfg or DEFAULT_DECAY
    if item.invalid_at is not None and item.invalid_at <= now:
        return 0.0
    if fresh is None:
        fresh = time_decay(item, now, cfg)
    dist = regime_distance(item.regime_tag, current_regime)
    return item.confidence * fresh * (math.exp(-cfg.gamma * dist) if dist else 1.0)

"""Decay, effective confidence and maturity transitions (the paper's d_t, c_eff and Psi).

* decay ``d_t(k) = exp(-lambda_type * days(t - t_l)) * exp(-gamma * dist(regime(k), regime_now))``
  with ``lambda_type = ln 2 / half_life_days`` of the item's relation type (the domain
  pack's ``half_life_days``), ``t_l`` the last-validated time (else valid-at)
  and ``dist`` 0 when the regimes agree or either is unknown, else 1.
* effective confidence ``c_eff = c * d_t * 1[not invalidated at t]``.
* maturity ``Psi(mu, reuse nu, validations upsilon, utility q, human h)``: see
  :func:`next_maturity`.

>>> from datetime import datetime, timedelta, UTC
>>> t0 = datetime(2026, 1, 1, tzinfo=UTC)
>>> round(decay(t0 + timedelta(days=30), t0, half_life_days=30.0), 3)   # one half-life
0.5
>>> round(decay(t0, t0, 30.0, "up", "flat", gamma=0.5), 4)           # another state now
0.6065
"""

from __future__ import annotations

import math
from datetime import datetime
from types import SimpleNamespace

import pyarrow as pa
from pydantic import BaseModel, ConfigDict

# moved to graphs (the fact graph replays it); re-exported
from speakerflow.graphs.maturity import (
    DEFAULT_MATURITY as DEFAULT_MATURITY,
)
from speakerflow.graphs.maturity import MaturityConfig as MaturityConfig
from speakerflow.graphs.maturity import next_maturity as next_maturity
from speakerflow.ops.core.base import Context, Operator, OperatorConfig, put_columns
from speakerflow.ops.core.registry import register
from speakerflow.ops.knowledge.group_state import knowledge_of, now_of
from speakerflow.ops.knowledge.lexicon import Lexicon, lexicon_for

MATURITY_RANK = {"deprecated": 0, "candidate": 1, "verified": 2, "proven": 3}
DAY = 86400.0


class DecayConfig(BaseModel):
    """``gamma``: regime-distance weight; ``default_half_life_days`` for unknown relation types."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    gamma: float = 0.5
    default_half_life_days: float = 30.0


DEFAULT_DECAY = DecayConfig()


def half_life(relation: str, cfg: DecayConfig | None = None, lex: Lexicon | None = None) -> float:
    """The half-life in days of ``relation`` in the pack (``cfg``'s default for an unknown one)."""
    default = (cfg or DEFAULT_DECAY).default_half_life_days
    return (lex or lexicon_for()).half_life(relation, default)


def regime_distance(item_regime: str | None, current: str | None) -> float:
    """0 if the regimes agree or either is unknown, else 1."""
    return 0.0 if not item_regime or not current or item_regime == current else 1.0


def decay(
    now: datetime,
    last_validated: datetime,
    half_life_days: float,
    item_regime: str | None = None,
    current_regime: str | None = None,
    gamma: float = 0.5,
) -> float:
    """``exp(-ln2/half_life * days) * exp(-gamma * dist)``; 1.0 for a just-validated item in its
    regime."""
    days = max(0.0, (now - last_validated).total_seconds() / DAY)
    lam = math.log(2) / half_life_days
    return math.exp(-lam * days) * math.exp(-gamma * regime_distance(item_regime, current_regime))


_LAMBDA: dict[tuple[str, str, float], float] = {}


def time_decay(
    item, now: datetime, cfg: DecayConfig | None = None, lex: Lexicon | None = None
) -> float:
    """The time part of d_t: ``exp(-ln2/half_life(type) * days since last validation)``."""
    cfg = cfg or DEFAULT_DECAY
    lex = lex or lexicon_for()
    key = (lex.digest, item.relation, cfg.default_half_life_days)
    lam = _LAMBDA.get(key)
    if lam is None:
        lam = _LAMBDA[key] = math.log(2) / half_life(item.relation, cfg, lex)
    days = (now - (item.last_validated or item.valid_at)).total_seconds() / DAY
    return math.exp(-lam * days) if days > 0 else 1.0


def effective_confidence(
    item,
    now: datetime,
    current_regime: str | None = None,
    cfg: DecayConfig | None = None,
    fresh: float | None = None,
    lex: Lexicon | None = None,
) -> float:
    """``c * d_t * 1[valid at now]`` for an item with ``confidence``, ``relation``, ``valid_at``,
    ``last_validated``, ``regime_tag`` and ``invalid_at`` attributes; ``fresh`` reuses an
    already computed :func:`time_decay`; ``lex``: the pack of the item's relation."""
    cfg = cfg or DEFAULT_DECAY
    if item.invalid_at is not None and item.invalid_at <= now:
        return 0.0
    if fresh is None:
        fresh = time_decay(item, now, cfg, lex)
    dist = regime_distance(item.regime_tag, current_regime)
    return item.confidence * fresh * (math.exp(-cfg.gamma * dist) if dist else 1.0)


#: The fact columns :class:`Decay` reads.
FACT_COLUMNS = (
    "edge_id",
    "subject_id",
    "relation",
    "confidence",
    "valid_at",
    "last_validated",
    "regime_tag",
    "invalid_at",
    "maturity",
    "reuse_count",
    "validations",
    "utility",
)


class DecayOpConfig(OperatorConfig):
    """``gamma`` and ``default_half_life_days`` as in :class:`DecayConfig`; ``at``: the time the
    decay is taken at (default ``ctx.clock()``, else now); ``apply``: write the recomputed
    maturity of changed facts to the group's graph (default: report only)."""

    gamma: float = 0.5
    default_half_life_days: float = 30.0
    at: datetime | None = None
    apply: bool = False


@register
class Decay(Operator):
    """Facts -> the same rows plus ``decay`` (d_t), ``effective_confidence`` (c_eff) and
    ``maturity`` after one step of Psi.

    d_t and c_eff are taken at ``config.at`` (else ``ctx.clock()``, else now); the current
    regime of a fact's subject comes from the group's graph
    (:func:`~speakerflow.ops.knowledge.group_state.knowledge_of`). With ``apply`` the facts whose
    maturity moved are written back (stat ``maturity_changes`` counts them either way).
    """

    name = "decay"
    consumes = FACT_COLUMNS
    produces = pa.schema(
        [
            ("edge_id", pa.string()),
            ("decay", pa.float64()),
            ("effective_confidence", pa.float64()),
            ("maturity", pa.string()),
        ]
    )
    passthrough = True
    Config = DecayOpConfig
    config: DecayOpConfig

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        cfg = self.config
        dcfg = DecayConfig(gamma=cfg.gamma, default_half_life_days=cfg.default_half_life_days)
        now = cfg.at or now_of(ctx)
        fg, canon, _ = knowledge_of(ctx)
        lex = canon.lexicon
        regimes: dict[str, str | None] = {}
        decays, ceffs, mats = [], [], []
        changed = 0
        for r in table.select(list(FACT_COLUMNS)).to_pylist():
            item = SimpleNamespace(**r)
            if item.subject_id not in regimes:
                regimes[item.subject_id] = fg.regime(item.subject_id, now, lex.state_relation)
            reg = regimes[item.subject_id]
            fresh = time_decay(item, now, dcfg, lex)
            dist = regime_distance(item.regime_tag, reg)
            decays.append(fresh * (math.exp(-dcfg.gamma * dist) if dist else 1.0))
            ceffs.append(effective_confidence(item, now, reg, dcfg, fresh=fresh))
            mu = next_maturity(
                item.maturity,
                item.reuse_count or 0,
                item.validations or 0,
                item.utility or 0.0,
                invalidated=item.invalid_at is not None and item.invalid_at <= now,
            )
            mats.append(mu)
            if mu != item.maturity:
                changed += 1
                if cfg.apply and item.edge_id in fg.items:
                    fg.items[item.edge_id].maturity = mu
                    fg.items[item.edge_id].updated_at = now
                    fg.touch(item.edge_id)
        self.stats.bump("maturity_changes", changed)
        if cfg.apply and changed:
            fg.flush()
        return put_columns(
            table, {"decay": decays, "effective_confidence": ceffs, "maturity": mats}, self.produces
        )

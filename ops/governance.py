"""Governance: may knowledge item k influence an action of a given risk for user u?

``Allow(a, k) = 1[c_eff(k) >= epsilon  and  mu(k) >= theta(risk(a))  and  scope(k) in O(u)]``

``theta`` is monotone in action risk (default low -> candidate, medium -> candidate,
high -> verified). The overlay ``O(u)`` of user ``u`` is the shared scopes plus
``user:<u>``; an anonymous request sees shared scopes only, so a user never receives
another user's private items.

>>> g = Governance()
>>> g.overlay("ana") == frozenset({"shared", "group", "user:ana"})
True
>>> g.allow(0.8, "candidate", "shared", "high", "ana"), g.allow(0.8, "verified", "user:ben", "low", "ana")
(False, False)
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from .decay import MATURITY_RANK

SHARED_SCOPES = frozenset({"shared", "group"})


class GovernanceConfig(BaseModel):
    """``epsilon``: minimum effective confidence; ``theta``: minimum maturity per risk class."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    epsilon: float = 0.3
    theta: dict[str, str] = {"low": "candidate", "medium": "candidate", "high": "verified"}


class Governance:
    """Evaluate Allow(action, item); counts refusals by reason in :attr:`refused`."""

    def __init__(self, config: GovernanceConfig | None = None):
        self.config = config or GovernanceConfig()
        ranks = [MATURITY_RANK[self.config.theta[r]] for r in ("low", "medium", "high")]
        if ranks != sorted(ranks):
            raise ValueError(f"theta must not fall as risk rises (low <= medium <= high); got {self.config.theta}")
        self.refused: dict[str, int] = {"confidence": 0, "maturity": 0, "scope": 0}
        self._overlays: dict[str | None, frozenset[str]] = {}

    def overlay(self, user: str | None) -> frozenset[str]:
        """Scopes user ``user`` may read (None: shared scopes only)."""
        o = self._overlays.get(user)
        if o is None:
            o = self._overlays[user] = SHARED_SCOPES | {f"user:{user}"} if user else SHARED_SCOPES
        return o

    def min_rank(self, risk: str) -> int:
        try:
            return MATURITY_RANK[self.config.theta[risk]]
        except KeyError:
            raise ValueError(f"risk class {risk!r} unknown; use one of {sorted(self.config.theta)}") from None

    def allow(self, c_eff: float, maturity: str, scope: str, risk: str, user: str | None) -> bool:
        """True if an item with these properties may inform an action of class ``risk`` for ``user``."""
        if scope not in self.overlay(user):
            self.refused["scope"] += 1
            return False
        if MATURITY_RANK[maturity] < self.min_rank(risk):
            self.refused["maturity"] += 1
            return False
        if c_eff < self.config.epsilon:
            self.refused["confidence"] += 1
            return False
        return True

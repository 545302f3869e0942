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
"""  # noqa: E501

from __future__ import annotations

import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from speakerflow.ops.core.base import Context, Operator, OperatorConfig, put_columns
from speakerflow.ops.core.registry import register
from speakerflow.ops.knowledge.decay import MATURITY_RANK

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
            raise ValueError(
                "theta must not fall as risk rises (low <= medium <= high); got "
                f"{self.config.theta}"
            )
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
            raise ValueError(
                f"risk class {risk!r} unknown; use one of {sorted(self.config.theta)}"
            ) from None

    def allow(self, c_eff: float, maturity: str, scope: str, risk: str, user: str | None) -> bool:
        """True if an item with these properties may inform an action of class ``risk`` for
        ``user``."""
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


class GovernConfig(OperatorConfig):
    """``epsilon`` and ``theta`` as in :class:`GovernanceConfig`; ``risk`` and ``user``: the
    action's risk class and the asker when the table has no ``risk`` / ``user`` column;
    ``drop``: keep only the allowed rows (default: mark them)."""

    epsilon: float = 0.3
    theta: dict[str, str] = {"low": "candidate", "medium": "candidate", "high": "verified"}
    risk: str = "low"
    user: str | None = None
    drop: bool = False


@register
class Govern(Operator):
    """Facts with ``effective_confidence`` (``Decay``'s output) -> the same rows plus ``allowed``
    (the Allow predicate) and ``refused`` (``scope`` / ``maturity`` / ``confidence``, null when
    allowed).

    A row's risk class is its ``risk`` column (``Detect`` writes one) else ``config.risk``; its
    asker the ``user`` column else ``config.user``. Stats count refusals by reason.
    """

    name = "govern"
    consumes = ("effective_confidence", "maturity", "scope")
    produces = pa.schema([("allowed", pa.bool_()), ("refused", pa.string())])
    passthrough = True
    Config = GovernConfig
    config: GovernConfig

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        cfg = self.config
        gov = Governance(GovernanceConfig(epsilon=cfg.epsilon, theta=cfg.theta))
        n = table.num_rows
        risks = table["risk"].to_pylist() if "risk" in table.column_names else [cfg.risk] * n
        users = table["user"].to_pylist() if "user" in table.column_names else [cfg.user] * n
        allowed, refused = [], []
        for c_eff, mu, scope, risk, user in zip(
            table["effective_confidence"].to_pylist(),
            table["maturity"].to_pylist(),
            table["scope"].to_pylist(),
            risks,
            users,
            strict=True,
        ):
            before = dict(gov.refused)
            ok = gov.allow(c_eff, mu, scope or "shared", risk or cfg.risk, user)
            allowed.append(ok)
            refused.append(
                None if ok else next(k for k, v in gov.refused.items() if v != before[k])
            )
        for reason, count in gov.refused.items():
            self.stats.bump(f"refused_{reason}", count)
        out = put_columns(table, {"allowed": allowed, "refused": refused}, self.produces)
        if cfg.drop:
            out = out.filter(pa.array(allowed, pa.bool_()))
        return out

"""Maturity transitions of facts (the paper's Psi): candidate -> verified -> proven, or deprecated.

It sits in ``graphs`` because the fact graph itself replays maturity for as-of views
(:class:`speakerflow.graphs.facts.FactGraph`); :mod:`speakerflow.ops.knowledge.decay` re-exports it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class MaturityConfig(BaseModel):
    """Thresholds of :func:`next_maturity` (counts are integers, utility is 0-1)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    verify_validations: int = 1
    verify_reuse: int = 3
    proven_validations: int = 3
    proven_reuse: int = 5
    useful: float = 0.5
    useless: float = 0.2
    judge_after_reuse: int = 5


DEFAULT_MATURITY = MaturityConfig()


def next_maturity(
    mu: str,
    reuse: int,
    validations: int,
    utility: float,
    human: str | None = None,
    invalidated: bool = False,
    cfg: MaturityConfig | None = None,
) -> str:
    """One step of Psi.

    * a human ``"reject"`` or an invalidation -> ``deprecated``; a human ``"approve"`` moves
      one level up (deprecated/candidate -> verified, verified -> proven);
    * judged useless (``reuse >= judge_after_reuse`` and ``utility < useless``) -> deprecated;
    * candidate -> verified with ``validations >= verify_validations`` or
      (``reuse >= verify_reuse`` and ``utility >= useful``);
    * verified -> proven with ``validations >= proven_validations``, ``reuse >= proven_reuse``
      and ``utility >= useful``;
    * otherwise unchanged (a deprecated item stays deprecated without human approval).

    >>> next_maturity("candidate", reuse=0, validations=1, utility=0.0)
    'verified'
    >>> next_maturity("verified", reuse=5, validations=3, utility=0.6)
    'proven'
    >>> next_maturity("proven", reuse=9, validations=3, utility=0.1)
    'deprecated'
    """
    cfg = cfg or DEFAULT_MATURITY
    if human == "reject" or invalidated:
        return "deprecated"
    if human == "approve":
        return "proven" if mu in ("verified", "proven") else "verified"
    if mu == "deprecated":
        return mu
    if reuse >= cfg.judge_after_reuse and utility < cfg.useless:
        return "deprecated"
    if mu == "candidate" and (
        validations >= cfg.verify_validations
        or (reuse >= cfg.verify_reuse and utility >= cfg.useful)
    ):
        mu = "verified"
    if (
        mu == "verified"
        and validations >= cfg.proven_validations
        and reuse >= cfg.proven_reuse
        and utility >= cfg.useful
    ):
        mu = "proven"
    return mu

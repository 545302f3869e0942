"""Rewards of speaker-conditioned GRPO (SpeakerMem-R1 section 4, appendix E, Eqs. 7-9, 17-22).

Per writing position ``t`` of trajectory ``g``::

    r_{g,t} = 0.20 R_valid + 0.45 R_mem + P_struct + 0.35 * 0.95^(T-1-t) * R_QA

* ``R_valid`` = 0.25 json + 0.35 schema + 0.25 duplicates + 0.15 stop (all zero when the
  output attempted no action), from an :class:`ActionReport`.
* ``P_struct`` = -(0.25 invalid-JSON + 0.15 invalid-action + 0.10 too-many + 0.10 cut-off).
* ``R_mem`` = 0.80 Phi_SL(M_t, M*_t) + 0.20 R_chain (SpeakerLevenshtein and the chain F).
* ``R_QA`` = QA(System 1 + System 2) - QA(System 1 only) on the final state, through the
  frozen query path, supplied by a :class:`QAGain` callable (zero when none is given).

Not in the paper: ``w_new * R_new`` (``w_new`` 0 by default, so the paper's return is
unchanged), the :func:`window_credit` of the records written at this position against the
ones the teacher wrote there. Phi_SL compares whole states, so where a window adds one or two
records to many, a sample that writes a near miss and one that writes nothing score alike and
GRPO's group has no spread; ``R_new`` is dense over exactly those records.

SpeakerLevenshtein itself lives in :mod:`speakerflow.training.speaker_levenshtein` and is
re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from .action_report import ActionReport, report_actions
from .speaker_levenshtein import (
    StateScore,
    coords_agree,
    score_chains,
    score_states,
    soft_match,
)
from .state import WriterState

__all__ = [
    "RewardConfig",
    "DEFAULT_REWARD",
    "QAGain",
    "StepReward",
    "validity_reward",
    "structural_penalty",
    "memory_reward",
    "window_credit",
    "step_reward",
    "returns",
    "score_states",
    "score_chains",
    "soft_match",
    "report_actions",
]


class RewardConfig(BaseModel):
    """All weights of the return (defaults: the paper's appendix E)."""

    model_config = ConfigDict(frozen=True)

    w_valid: float = 0.20
    w_mem: float = 0.45
    w_qa: float = 0.35
    gamma: float = 0.95
    w_json: float = 0.25
    w_schema: float = 0.35
    w_dup: float = 0.25
    w_stop: float = 0.15
    eta_json: float = 0.25
    eta_act: float = 0.15
    eta_count: float = 0.10
    eta_len: float = 0.10
    w_sl: float = 0.80
    w_chain: float = 0.20
    w_new: float = 0.0


#: The paper's weights (a frozen config, safe to share as a default argument).
DEFAULT_REWARD = RewardConfig()


class QAGain(Protocol):
    """Terminal QA gain of a finished trajectory: accuracy with System 1 + System 2 minus
    System 1 only, same System 1 evidence, frozen query/answer path; in [-1, 1]."""

    def __call__(self, network_id: str, state: WriterState) -> float: ...


def validity_reward(rep: ActionReport, cfg: RewardConfig = DEFAULT_REWARD) -> float:
    """R_valid in [0, 1] (Eq. 19)."""
    n = rep.attempted
    if not rep.json_valid or n == 0:
        return 0.0
    schema = min(1.0, rep.schema_valid / n)
    dup = min(1.0, rep.unique_keys / n)
    return cfg.w_json + cfg.w_schema * schema + cfg.w_dup * dup + cfg.w_stop * float(rep.stop_ok)


def structural_penalty(rep: ActionReport, cfg: RewardConfig = DEFAULT_REWARD) -> float:
    """P_struct in [-0.60, 0] (Eq. 21)."""
    invalid_act = rep.json_valid and rep.schema_valid < rep.attempted
    return -(
        cfg.eta_json * (not rep.json_valid)
        + cfg.eta_act * invalid_act
        + cfg.eta_count * rep.too_many
        + cfg.eta_len * rep.length_cut
    )


def memory_reward(
    state: WriterState, ref: WriterState, cfg: RewardConfig = DEFAULT_REWARD
) -> tuple[float, StateScore, float]:
    """R_mem = w_sl Phi_SL + w_chain R_chain (Eq. 18) of ``state`` against ``ref``.

    Returns ``(R_mem, state score, chain F)``; heads are compared for the state term and
    all UPDATE edges so far for the chain term.
    """
    sl = score_states(state.heads(), ref.heads())
    chain = score_chains(state.edge_records(), ref.edge_records()).f
    return cfg.w_sl * sl.phi + cfg.w_chain * chain, sl, chain


def _credit(pred: dict[str, Any], ref: dict[str, Any]) -> float:
    """Ungated, speaker-conditioned match of two records: none across owners; the content's
    soft match, halved in steps of a quarter for a different source or layer."""
    if not coords_agree(pred, ref, ("owner",)):
        return 0.0
    scale = 0.5 + 0.25 * coords_agree(pred, ref, ("source",))
    scale += 0.25 * coords_agree(pred, ref, ("layer",))
    return scale * soft_match(str(pred.get("content", "")), str(ref.get("content", "")))


def window_credit(before: WriterState, after: WriterState, ref_after: WriterState) -> float:
    """R_new in [0, 1]: the records ``after`` holds that ``before`` did not (this position's
    writes) against the ones ``ref_after`` holds that ``before`` did not (the teacher's).

    The F of a soft precision (each written record's best credit) and recall (each teacher
    record's best credit), credits by :func:`_credit`; 1 when neither side wrote, 0 when only
    one did.
    """
    pred = [r for k, r in after.entries.items() if k not in before.entries]
    ref = [r for k, r in ref_after.entries.items() if k not in before.entries]
    if not pred or not ref:
        return float(not pred and not ref)
    grid = [[_credit(p, r) for r in ref] for p in pred]
    precision = sum(max(row) for row in grid) / len(pred)
    recall = sum(max(col) for col in zip(*grid, strict=True)) / len(ref)
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


@dataclass
class StepReward:
    """The local part of r_{g,t} (everything except the terminal QA term) and its pieces."""

    valid: float
    penalty: float
    mem: float
    phi: float
    chain: float
    cfg: RewardConfig
    new: float = 0.0

    @property
    def local(self) -> float:
        return (
            self.cfg.w_valid * self.valid
            + self.cfg.w_mem * self.mem
            + self.cfg.w_new * self.new
            + self.penalty
        )


def step_reward(
    text: str,
    state: WriterState,
    ref_after: WriterState,
    *,
    n_messages: int,
    position: int,
    length_cut: bool = False,
    cfg: RewardConfig = DEFAULT_REWARD,
    segment: Any = None,
) -> tuple[StepReward, ActionReport]:
    """Score one Writer reply and apply the writes the store would make to ``state`` in place.

    ``ref_after`` is the reference state after this position (M*_t); ``segment`` (the
    writing position's :class:`~speakerflow.ops.write.interfaces.Segment`) lets the contract
    check cited ``from_ids`` and resolve aliases, as the store does.
    """
    rep = report_actions(
        text,
        state,
        n_messages=n_messages,
        length_cut=length_cut,
        segment=segment,
        position=position,
    )
    before = WriterState(dict(state.entries), roster=state.roster)  # its ids are what counts
    state.apply(rep.valid_actions, position=position, ids=rep.created_ids)
    mem, sl, chain = memory_reward(state, ref_after, cfg)
    new = window_credit(before, state, ref_after)
    return StepReward(
        validity_reward(rep, cfg), structural_penalty(rep, cfg), mem, sl.phi, chain, cfg, new
    ), rep


def returns(
    local: Sequence[float], qa_gain: float, cfg: RewardConfig = DEFAULT_REWARD
) -> list[float]:
    """r_{g,t} for t = 0..T-1 (Eq. 9): the local rewards plus ``w_qa gamma^(T-1-t) R_QA``."""
    T = len(local)
    return [r + cfg.w_qa * cfg.gamma ** (T - 1 - t) * qa_gain for t, r in enumerate(local)]

"""The arithmetic of speaker-conditioned GRPO (SpeakerMem-R1 appendix E, Eqs. 23-27).

* :func:`position_advantages`: group-relative advantages computed *per writing position*
  over the G trajectories of one network; positions whose reward spread is below
  ``min_sigma`` get advantage 0 (no signal), the rest are clipped to +-``clip``.
* :func:`k3_kl`: the k3 estimator ``exp(d) - d - 1`` with ``d = logp_ref - logp``.
* :func:`clipped_loss`: the negated clipped surrogate with the KL penalty, averaged over
  tokens within each completion and then over completions (samples with zero advantage
  are dropped before this is called).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def position_advantages(
    rewards: Sequence[Sequence[float]], *, min_sigma: float = 0.02, clip: float = 3.0
) -> np.ndarray:
    """Advantages ``A[g, t]`` from returns ``rewards[g][t]`` (G trajectories x T positions).

    Trajectories of one network share their positions (one per writing segment), so the
    array is rectangular. ``sigma`` is the population standard deviation over g (Eq. 23).

    >>> position_advantages([[1.0, 0.5], [0.0, 0.5]]).tolist()
    [[1.0, 0.0], [-1.0, 0.0]]
    """
    r = np.asarray(rewards, dtype=float)
    if r.ndim != 2:
        raise ValueError(f"rewards must be G x T, got shape {r.shape}")
    mu = r.mean(axis=0, keepdims=True)
    sigma = r.std(axis=0, keepdims=True)
    safe = np.where(sigma < min_sigma, 1.0, sigma)
    adv = np.clip((r - mu) / safe, -clip, clip)
    return np.where(sigma < min_sigma, 0.0, adv)


def k3_kl(logp, logp_ref):
    """Per-token k3 KL estimate ``exp(d) - d - 1``, ``d = logp_ref - logp`` (>= 0)."""
    import torch

    d = logp_ref - logp
    return torch.exp(d) - d - 1.0


def clipped_loss(
    logp, logp_old, logp_ref, advantages, mask, *, eps: float = 0.20, beta: float = 0.10
):
    """Negated GRPO objective (Eq. 26) for a batch of completions.

    Parameters
    ----------
    logp, logp_old, logp_ref : (B, L) per-token log-probabilities of the completion tokens
        under the current, the sampling-time and the frozen reference (SFT) policy.
    advantages : (B,) one advantage per completion (its writing position's A[g, t]).
    mask : (B, L) 1.0 on completion tokens, 0.0 on padding.

    Returns
    -------
    (loss, mean_kl) : the scalar loss to minimise and the mean per-token k3 KL (detached).
    """
    import torch

    ratio = torch.exp(logp - logp_old)
    adv = advantages.unsqueeze(1)
    surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - eps, 1 + eps) * adv)
    kl = k3_kl(logp, logp_ref)
    per_token = surrogate - beta * kl
    n_tok = mask.sum(dim=1).clamp(min=1.0)
    per_sample = (per_token * mask).sum(dim=1) / n_tok
    mean_kl = ((kl * mask).sum(dim=1) / n_tok).mean()
    return -per_sample.mean(), mean_kl.detach()

"""Speaker-conditioned GRPO for the Writer: a small custom loop (not TRL's GRPOTrainer).

Why custom: TRL's ``GRPOTrainer`` normalises rewards over the completions of *one
prompt*. Here the G = 8 trajectories of a network write position after position, each
from its own state, so the prompts at one position differ while the paper normalises
advantages *per writing position* across the group (Eqs. 23-24), with a delayed terminal
QA term (Eq. 9). The loop reuses TRL's ``selective_log_softmax`` for token log-probs and
keeps everything else to a few lines (:mod:`.grpo_math`).

One update step = one rollout round over one network (networks are visited in turn):

1. sample G trajectories (:func:`speakerflow.training.rollout.rollout_network`);
2. returns r[g][t] -> position-wise advantages (skip sigma < 0.02, clip +-3);
3. log-probs of every sample under the sampling policy (old) and the frozen SFT
   reference, once;
4. ``epochs`` (2) passes: clipped-ratio loss (eps 0.20) with the k3 KL (beta 0.10),
   averaged over tokens then samples with a non-zero advantage; AdamW at lr 1e-6 with
   gradient-norm cap 1.0; a pass whose mean KL exceeds 0.02 is not applied.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .data import Network
from .grpo_math import clipped_loss, position_advantages
from .reward import QAGain
from .rollout import Sample, rollout_network
from .sft import device_and_dtype


class GRPOSettings(BaseModel):
    """Hyper-parameters (defaults: SpeakerMem-R1 appendix E)."""

    model_config = ConfigDict(frozen=True)

    steps: int = Field(default=30, ge=1, description="rollout rounds = policy updates")
    group_size: int = Field(default=8, ge=2, description="G trajectories per network")
    epochs: int = Field(default=2, ge=1, description="passes over each round's samples")
    lr: float = Field(default=1e-6, gt=0)
    eps: float = Field(default=0.20, gt=0, description="ratio clip")
    beta: float = Field(default=0.10, ge=0, description="k3 KL coefficient")
    kl_skip: float = Field(default=0.02, gt=0, description="skip a pass when mean KL exceeds this")
    min_sigma: float = Field(
        default=0.02, ge=0, description="positions below this spread get A = 0"
    )
    adv_clip: float = Field(default=3.0, gt=0)
    temperature: float = Field(default=0.8, ge=0)
    top_p: float = Field(default=0.95, gt=0, le=1)
    max_new_tokens: int = Field(default=2048, ge=1)
    max_grad_norm: float = 1.0
    positions: int | None = Field(
        default=None, ge=1, description="cap writing positions per network"
    )
    seed: int = 0
    bf16: bool | None = None


def completion_logprobs(model: Any, sample: Sample, device: str) -> Any:
    """Per-token log-probs (1, L) of ``sample``'s completion given its prompt."""
    import torch
    from trl.trainer.utils import selective_log_softmax

    ids = torch.tensor([sample.prompt_ids + sample.completion_ids], device=device)
    p, n = len(sample.prompt_ids), len(sample.completion_ids)
    # only the last n + 1 positions need logits (a 150k vocabulary over a long prompt is GBs)
    logits = model(input_ids=ids, logits_to_keep=n + 1).logits[:, :-1, :].float()
    return selective_log_softmax(logits, ids[:, p:])


def policy_update(
    policy: Any,
    optim: Any,
    chosen: Sequence[tuple[Sample, float]],
    old: Sequence[Any],
    ref_lp: Sequence[Any],
    s: GRPOSettings,
    device: str,
) -> dict[str, Any]:
    """``s.epochs`` passes of the clipped, KL-regularised loss over ``chosen`` (sample,
    advantage) pairs; ``old``/``ref_lp`` are their completion log-probs under the sampling
    and reference policies. A pass whose mean k3 KL exceeds ``s.kl_skip`` is not applied.

    Returns ``{"kl": [mean KL per pass], "applied": n, "skipped_kl": n}``.
    """
    import torch

    out: dict[str, Any] = {"kl": [], "applied": 0, "skipped_kl": 0}
    policy.train()
    for _ in range(s.epochs if chosen else 0):
        optim.zero_grad(set_to_none=True)
        kls = []
        for (smp, a), lp_old, lp_ref in zip(chosen, old, ref_lp, strict=True):
            lp = completion_logprobs(policy, smp, device)
            loss, kl = clipped_loss(
                lp,
                lp_old,
                lp_ref,
                torch.tensor([a], device=device),
                torch.ones_like(lp),
                eps=s.eps,
                beta=s.beta,
            )
            (loss / len(chosen)).backward()
            kls.append(float(kl))
        mean_kl = sum(kls) / len(kls)
        out["kl"].append(round(mean_kl, 6))
        if mean_kl > s.kl_skip:
            out["skipped_kl"] += 1
            optim.zero_grad(set_to_none=True)
            continue
        torch.nn.utils.clip_grad_norm_(policy.parameters(), s.max_grad_norm)
        optim.step()
        out["applied"] += 1
    policy.eval()
    return out


def reference_logprobs(
    policy: Any, ref: Any, chosen: Sequence[tuple[Sample, float]], device: str
) -> tuple[list[Any], list[Any]]:
    """Completion log-probs of ``chosen`` under the sampling policy and the reference."""
    import torch

    with torch.no_grad():
        old = [completion_logprobs(policy, smp, device) for smp, _ in chosen]
        ref_lp = [completion_logprobs(ref, smp, device) for smp, _ in chosen]
    return old, ref_lp


def load_models(model_dir: str | Path, ref_dir: str | Path | None, s: GRPOSettings):
    """``(tokenizer, policy, frozen reference, AdamW, device, dtype)`` for a GRPO run."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device, dtype = device_and_dtype(s.bf16)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    policy: Any = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype)
    policy = policy.to(device).eval()
    ref: Any = AutoModelForCausalLM.from_pretrained(ref_dir or model_dir, dtype=dtype)
    ref = ref.to(device).eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    return tokenizer, policy, ref, torch.optim.AdamW(policy.parameters(), lr=s.lr), device, dtype


def _step_record(step: int, network: str, roll: Any, adv: Any, advantaged: int) -> dict[str, Any]:
    """One GRPO step's line of the report, before its policy update's figures."""
    return {
        "step": step,
        "network": network,
        "mean_return": round(float(sum(map(sum, roll.returns)) / adv.size), 6),
        "valid_json": sum(
            x.report.json_valid for row in roll.samples for x in row if x.report is not None
        ),
        "samples": int(adv.size),
        "advantaged": advantaged,
        "positions_skipped": int((abs(adv).sum(axis=0) == 0).sum()),
        "qa_gain": [round(x, 6) for x in roll.qa_gain],
    }


def train_grpo(
    model_dir: str | Path,
    networks: Sequence[Network],
    out_dir: str | Path,
    settings: GRPOSettings | None = None,
    *,
    ref_dir: str | Path | None = None,
    qa_gain: QAGain | None = None,
) -> dict[str, Any]:
    """Run GRPO from ``model_dir`` (the SFT policy) and save the policy in ``out_dir``.

    ``networks`` need teacher transitions (the reference states); ``ref_dir`` is the
    frozen reference policy (default: ``model_dir``); ``qa_gain`` the terminal QA hook.

    Returns
    -------
    dict
        per-step records (network, mean return, advantaged samples, positions skipped for
        low spread, mean KL per pass, passes applied/skipped), totals and ``seconds``.
    """
    import torch

    s = settings or GRPOSettings()
    nets = [n for n in networks if n.has_teacher and n.segments]
    if not nets:
        raise ValueError(
            "GRPO needs networks with teacher transitions (reference states); none given"
        )
    torch.manual_seed(s.seed)
    tokenizer, policy, ref, optim, device, dtype = load_models(model_dir, ref_dir, s)
    refs = {n.network_id: n.reference_states() for n in nets}
    steps: list[dict[str, Any]] = []
    start = time.perf_counter()
    for step in range(s.steps):
        net = nets[step % len(nets)]
        roll = rollout_network(
            policy,
            tokenizer,
            net,
            refs[net.network_id],
            group_size=s.group_size,
            positions=s.positions,
            temperature=s.temperature,
            top_p=s.top_p,
            max_new_tokens=s.max_new_tokens,
            qa_gain=qa_gain,
        )
        adv = position_advantages(roll.returns, min_sigma=s.min_sigma, clip=s.adv_clip)
        chosen = [
            (smp, float(adv[smp.g, smp.t]))
            for row in roll.samples
            for smp in row
            if adv[smp.g, smp.t] != 0.0 and smp.completion_ids
        ]
        old, ref_lp = reference_logprobs(policy, ref, chosen, device)
        record = _step_record(step, net.network_id, roll, adv, len(chosen))
        record.update(policy_update(policy, optim, chosen, old, ref_lp, s, device))
        steps.append(record)
    out = Path(out_dir)
    policy.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return {
        "steps": steps,
        "updates_applied": sum(r["applied"] for r in steps),
        "device": device,
        "dtype": str(dtype).removeprefix("torch."),
        "settings": s.model_dump(),
        "seconds": round(time.perf_counter() - start, 3),
        "out_dir": str(out),
    }

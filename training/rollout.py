"""On-policy rollouts of the Writer for speaker-conditioned GRPO.

G trajectories write the same network independently: at writing position t each
trajectory's prompt shows *its own* current heads, so the G prompts differ and are
sampled as one left-padded batch (temperature 0.8, top-p 0.95 by default). Each reply
is scored with :func:`speakerflow.training.reward.step_reward` against the reference
state M*_t and its novel, valid actions are applied to that trajectory's state.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from speakerflow.ops.write.writer.prompt import build_writer_messages

from .action_report import ActionReport
from .data import Network
from .reward import DEFAULT_REWARD, QAGain, RewardConfig, StepReward, returns, step_reward
from .state import WriterState


@dataclass
class Sample:
    """One reply at one writing position of one trajectory (token ids without padding)."""

    g: int
    t: int
    prompt_ids: list[int]
    completion_ids: list[int]
    text: str
    length_cut: bool
    reward: StepReward | None = None
    report: ActionReport | None = None


@dataclass
class NetworkRollout:
    """G x T samples of one network, the final states and the returns r[g][t]."""

    network_id: str
    samples: list[list[Sample]]
    states: list[WriterState]
    qa_gain: list[float] = field(default_factory=list)
    returns: list[list[float]] = field(default_factory=list)


def generate_batch(
    model: Any,
    tokenizer: Any,
    chats: list[list[dict]],
    *,
    temperature: float,
    top_p: float,
    max_new_tokens: int,
) -> list[tuple[list[int], list[int], str, bool]]:
    """Sample one completion per chat; returns ``(prompt_ids, completion_ids, text, cut)``
    where ``completion_ids`` end at (and include) the first end-of-sequence token and
    ``cut`` is True when none was produced within ``max_new_tokens``."""
    import torch

    prompts = [
        tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=True) for c in chats
    ]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=model.device)
    mask = torch.tensor(
        [[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=model.device
    )
    with torch.no_grad():
        out = model.generate(
            input_ids=ids,
            attention_mask=mask,
            do_sample=temperature > 0,
            temperature=temperature if temperature > 0 else None,
            top_p=top_p if temperature > 0 else None,
            max_new_tokens=max_new_tokens,
            pad_token_id=pad,
            eos_token_id=tokenizer.eos_token_id,
        )
    results = []
    for prompt, row in zip(prompts, out[:, width:].tolist(), strict=True):
        cut = tokenizer.eos_token_id not in row
        completion = row if cut else row[: row.index(tokenizer.eos_token_id) + 1]
        text = tokenizer.decode(completion, skip_special_tokens=True)
        results.append((prompt, completion, text, cut))
    return results


def rollout_network(
    model: Any,
    tokenizer: Any,
    net: Network,
    references: list[WriterState],
    *,
    group_size: int = 8,
    positions: int | None = None,
    temperature: float = 0.8,
    top_p: float = 0.95,
    max_new_tokens: int = 2048,
    qa_gain: QAGain | None = None,
    cfg: RewardConfig = DEFAULT_REWARD,
) -> NetworkRollout:
    """Write ``net`` ``group_size`` times with the policy and score every position.

    ``references[t]`` is M*_t; ``positions`` caps the number of writing positions (all by
    default); ``qa_gain`` gives the terminal QA gain of each final state (0 without one).
    """
    T = len(net.segments) if positions is None else min(positions, len(net.segments))
    states = [WriterState(roster=net.roster) for _ in range(group_size)]
    samples: list[list[Sample]] = [[] for _ in range(group_size)]
    for t in range(T):
        seg = net.segments[t]
        chats = [build_writer_messages(replace(seg, heads=tuple(s.heads()))) for s in states]
        outs = generate_batch(
            model,
            tokenizer,
            chats,
            temperature=temperature,
            top_p=top_p,
            max_new_tokens=max_new_tokens,
        )
        for g, (prompt, completion, text, cut) in enumerate(outs):
            sr, rep = step_reward(
                text,
                states[g],
                references[t],
                n_messages=len(seg.messages),
                position=t,
                length_cut=cut,
                cfg=cfg,
                segment=seg,
            )
            samples[g].append(Sample(g, t, prompt, completion, text, cut, sr, rep))
    gains = [float(qa_gain(net.network_id, s)) if qa_gain else 0.0 for s in states]
    rets = [
        returns([s.reward.local for s in samples[g] if s.reward is not None], gains[g], cfg)
        for g in range(group_size)
    ]
    return NetworkRollout(net.network_id, samples, states, gains, rets)

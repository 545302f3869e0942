"""Validity reward, structural penalties, memory reward, returns and position-wise GRPO math."""

from __future__ import annotations

import json

import numpy as np
import pytest

from speakerflow.training.grpo_math import clipped_loss, k3_kl, position_advantages
from speakerflow.training.reward import (
    memory_reward,
    report_actions,
    returns,
    step_reward,
    structural_penalty,
    validity_reward,
)
from speakerflow.training.state import WriterState

ROSTER = ("Ana", "Ben")


def add(content, owner="Ana", source="Ana", layer="per_speaker_core", utype="fact"):
    return {
        "action": "ADD",
        "owner": owner,
        "source": source,
        "layer": layer,
        "utype": utype,
        "content": content,
    }


def text(*actions):
    return json.dumps({"actions": list(actions)})


def base_state():
    s = WriterState(roster=ROSTER)
    s.apply([add("lives in Vienna")], position=0, ids=["e1"])
    return s


def test_perfect_output_gets_full_validity_and_no_penalty():
    rep = report_actions(text(add("works as a nurse")), base_state(), n_messages=3)
    assert rep.json_valid and rep.attempted == 1 and rep.schema_valid == 1 and rep.stop_ok
    assert validity_reward(rep) == pytest.approx(1.0)
    assert structural_penalty(rep) == 0.0


def test_invalid_json_zero_validity_and_penalty():
    rep = report_actions(
        '{"actions": [ {"action": "ADD", ', base_state(), n_messages=3, length_cut=True
    )
    assert not rep.json_valid
    assert validity_reward(rep) == 0.0
    assert structural_penalty(rep) == pytest.approx(-(0.25 + 0.10))


def test_schema_duplicate_and_stop_components():
    bad = add("x", owner="Zed")  # owner not in roster
    dup = add("works as a nurse")
    rep = report_actions(text(dup, bad, dup), base_state(), n_messages=3)
    assert rep.attempted == 3 and rep.schema_valid == 2 and rep.unique_keys == 2
    assert not rep.stop_ok  # ends on a repeated (non-novel) action
    expected = 0.25 + 0.35 * 2 / 3 + 0.25 * 2 / 3 + 0.0
    assert validity_reward(rep) == pytest.approx(expected)
    assert structural_penalty(rep) == pytest.approx(-0.15)
    assert [a["content"] for a in rep.valid_actions] == ["works as a nurse"]


def test_add_already_in_state_and_identical_update_are_not_novel():
    s = base_state()
    rep = report_actions(text(add("Lives in Vienna.")), s, n_messages=2)
    assert rep.schema_valid == 1 and not rep.stop_ok and rep.valid_actions == []
    same = {"action": "UPDATE", "entry_id": "e1", "content": "lives in vienna"}
    assert not report_actions(text(same), s, n_messages=2).stop_ok
    moved = {"action": "UPDATE", "entry_id": "e1", "content": "lives in Graz"}
    assert report_actions(text(moved), s, n_messages=2).stop_ok
    unknown = {"action": "UPDATE", "entry_id": "nope", "content": "lives in Graz"}
    assert report_actions(text(unknown), s, n_messages=2).schema_valid == 0


def test_noop_alone_is_valid_and_too_many_actions_penalised():
    rep = report_actions(text({"action": "NOOP"}), base_state(), n_messages=2)
    assert validity_reward(rep) == pytest.approx(1.0)
    many = [add(f"fact number {i}") for i in range(9)]
    rep = report_actions(text(*many), base_state(), n_messages=2)  # budget max(8, 4) = 8
    assert rep.too_many and structural_penalty(rep) == pytest.approx(-0.10)


def test_zero_attempts_zero_validity():
    assert validity_reward(report_actions(text(), base_state(), n_messages=2)) == 0.0


def test_memory_reward_and_step_reward_apply_actions():
    ref = base_state()
    ref.apply([{"action": "UPDATE", "entry_id": "e1", "content": "lives in Graz"}], position=1)
    mine = base_state()
    sr, rep = step_reward(
        text({"action": "UPDATE", "entry_id": "e1", "content": "lives in Graz"}),
        mine,
        ref,
        n_messages=2,
        position=1,
    )
    assert len(mine.edges) == 1 and sr.phi == 1.0 and sr.chain == 1.0
    assert sr.mem == pytest.approx(1.0) and sr.local == pytest.approx(0.2 + 0.45)
    # no update at all: heads differ (Vienna vs Graz: gated), chain F 0
    r_mem, sl, chain = memory_reward(base_state(), ref)
    assert chain == 0.0 and r_mem == pytest.approx(0.8 * sl.phi)


def test_returns_discount_terminal_qa_gain():
    r = returns([0.1, 0.2, 0.3], qa_gain=1.0)
    assert r == pytest.approx([0.1 + 0.35 * 0.95**2, 0.2 + 0.35 * 0.95, 0.3 + 0.35])


def test_position_advantages_skip_low_sigma_and_clip():
    rewards = np.array(
        [
            [1.0, 0.5, 0.0],
            [0.0, 0.51, 0.0],
            [0.0, 0.5, 0.0],
            [0.0, 0.5, 0.0],
            [0.0, 0.5, 0.0],
            [0.0, 0.5, 0.0],
            [0.0, 0.5, 0.0],
            [0.0, 0.5, 0.0],
            [0.0, 0.5, 0.0],
            [0.0, 0.5, 0.0],
            [0.0, 0.5, 0.0],
            [0.0, 0.5, 10.0],
        ]
    )
    adv = position_advantages(rewards)
    assert np.all(adv[:, 1] == 0.0)  # sigma 0.003 < 0.02: skipped
    assert adv[0, 0] == pytest.approx(3.0)  # (1 - 1/12) / 0.276 = 3.32 -> clipped
    assert adv[11, 2] == pytest.approx(3.0) and adv[0, 2] < 0
    two = position_advantages([[1.0], [0.0]])
    assert two.ravel().tolist() == [1.0, -1.0]


def test_k3_kl_and_clipped_loss():
    import torch

    lp = torch.log(torch.tensor([[0.5, 0.25]]))
    assert torch.allclose(k3_kl(lp, lp), torch.zeros(1, 2))
    ref = torch.log(torch.tensor([[0.25, 0.25]]))
    # d = log(.25/.5) = -ln 2 -> exp(d) - d - 1 = 0.5 + ln 2 - 1
    assert k3_kl(lp, ref)[0, 0].item() == pytest.approx(0.5 + np.log(2) - 1)
    mask = torch.ones(1, 2)
    old = lp - 1.0  # ratio e = 2.718 -> clipped at 1.2
    loss, kl = clipped_loss(lp, old, lp, torch.tensor([1.0]), mask)
    assert loss.item() == pytest.approx(-1.2) and kl.item() == 0.0
    loss, _ = clipped_loss(lp, old, lp, torch.tensor([-1.0]), mask)
    assert loss.item() == pytest.approx(np.e)  # min(-e, -1.2) = -e

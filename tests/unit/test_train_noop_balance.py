"""NOOP balance of the local Writer: fewer NOOP windows in SFT (``thin_noop``) and the
calibrated NOOP gate at decoding (``calibrate``, ``FirstTokenGate``, ``decoding.json``)."""

from __future__ import annotations

import json

import pytest
import torch

from speakerflow.ops.backends.base import ChatResult
from speakerflow.ops.backends.local import FirstTokenGate
from speakerflow.ops.write.interfaces import Segment
from speakerflow.training.noop_gate import balanced_accuracy, calibrate, per_kind_sample
from speakerflow.training.windows import is_noop, thin_noop


def _examples(n_noop: int, n_act: int) -> list[dict]:
    act = json.dumps([{"action": "ADD", "content": "x"}])
    kinds = ["[]"] * n_noop + [act] * n_act
    return [{"segment_id": f"w{i}", "target_actions": k} for i, k in enumerate(kinds)]


def test_thin_noop_keeps_every_action_window_and_a_seeded_share_of_noop():
    data = _examples(12, 9)
    kept, dropped = thin_noop(data, 0.25, seed=3)
    assert dropped == 9 and sum(map(is_noop, kept)) == 3
    assert [ex for ex in kept if not is_noop(ex)] == data[12:]  # all actions, in order
    assert [ex["segment_id"] for ex in kept] == sorted(
        (ex["segment_id"] for ex in kept), key=lambda s: int(s[1:])
    )
    assert thin_noop(data, 0.25, seed=3) == (kept, dropped)  # seeded
    assert thin_noop(data, 0.25, seed=4)[0] != kept
    assert thin_noop(data, 1.0) == (data, 0)
    assert thin_noop(data, 0.0)[0] == data[12:]
    assert sum(map(is_noop, thin_noop(_examples(2, 1), 0.1)[0])) == 1  # at least one kept
    with pytest.raises(ValueError, match="noop keep share"):
        thin_noop(data, 1.5)


def test_calibrate_puts_the_threshold_in_the_gap_between_the_kinds():
    probs = [0.9, 0.8, 0.75, 0.4, 0.3, 0.6]
    noop = [True, True, True, False, False, False]
    report = calibrate(probs, noop)
    assert 0.6 < report["noop_min_p"] < 0.75 and report["balanced_accuracy"] == 1.0
    assert report["balanced_accuracy_at_0.5"] == pytest.approx((1 + 2 / 3) / 2, abs=1e-4)
    assert report["windows"] == 6 and report["noop_windows"] == 3
    # every window NOOP-heavy (the collapsed policy): the cut still separates by rank
    high = calibrate([0.99, 0.98, 0.95, 0.9], [True, True, False, False])
    assert 0.95 < high["noop_min_p"] < 0.98 and balanced_accuracy([0.99], [True], 0.5) == 1.0
    with pytest.raises(ValueError, match="one kind per probability"):
        calibrate([0.5], [True, False])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        calibrate([1.5], [True])


def test_first_token_gate_masks_the_token_only_at_the_first_step_below_min_p():
    scores = torch.log(torch.tensor([[0.7, 0.2, 0.1], [0.4, 0.5, 0.1]]))
    gate = FirstTokenGate(token=0, min_p=0.6, start=5)
    out = gate(torch.zeros(2, 5, dtype=torch.long), scores.clone())
    assert out[0].argmax() == 0 and out[1, 0] == float("-inf") and out[1].argmax() == 1
    later = gate(torch.zeros(2, 6, dtype=torch.long), scores.clone())
    assert torch.equal(later, scores)


class GateChat:
    name = "fake"

    def __init__(self):
        self.kwargs = []

    def chat_batch(self, chats, **kwargs):
        self.kwargs.append(kwargs)
        return [ChatResult('{"actions": [{"action": "NOOP"}]}', 10, 5) for _ in chats]


MSG = {"msg_id": "m1", "speaker": "Ana", "text": "hello there", "ts": "2024-01-01T10:00:00"}


def test_local_writer_reads_the_gate_from_the_model_folder(tmp_path, monkeypatch):
    from speakerflow.ops.write.writer import local

    fake = GateChat()
    monkeypatch.setattr("speakerflow.ops.backends.factory.make_backend", lambda kind, **c: fake)
    seg = Segment("s#0", "g", ("Ana",), (MSG,))
    local.LocalWriter(model=str(tmp_path), backend="transformers").propose(seg)
    assert "gate" not in fake.kwargs[-1]  # no decoding.json: plain greedy
    (tmp_path / local.DECODING_FILE).write_text(json.dumps({"noop_min_p": 0.93}))
    writer = local.LocalWriter(model=str(tmp_path), backend="transformers")
    writer.propose(seg)
    assert fake.kwargs[-1]["gate"] == ("NOOP", 0.93)
    local.LocalWriter(model=str(tmp_path), backend="transformers", noop_min_p=0.0).propose(seg)
    assert "gate" not in fake.kwargs[-1]  # an explicit 0 overrides the folder
    (tmp_path / local.DECODING_FILE).write_text(json.dumps({"noop_min_p": "high"}))
    with pytest.raises(ValueError, match="noop_min_p must be a number"):
        local.LocalWriter(model=str(tmp_path), backend="transformers")


def test_per_kind_sample_is_seeded_balanced_and_ordered():
    data = _examples(12, 4)
    part = per_kind_sample(data, 5, seed=1)
    assert sum(map(is_noop, part)) == 5 and len(part) == 9  # only 4 action windows exist
    assert part == [ex for ex in data if ex in part] and part == per_kind_sample(data, 5, 1)
    assert per_kind_sample(data, None) == data
    with pytest.raises(ValueError, match="per_kind"):
        per_kind_sample(data, 0)

"""Terminal QA gain through the real query path (in-memory store, hashing embedder)."""

from __future__ import annotations

import pytest

from speakerflow.training.data import load_networks
from speakerflow.training.qa_gain import (
    QAGainConfig,
    StoreQAGain,
    pick_questions,
    records_by_position,
)
from speakerflow.training.state import WriterState
from tests.conftest import shared


def test_pick_questions_sorted_uniform():
    qs = [{"id": f"q{i}", "question": "x?", "answer": "y"} for i in (5, 1, 9, 3, 7, 2, 8)]
    assert [q["id"] for q in pick_questions(qs, 4)] == ["q1", "q3", "q7", "q9"]
    assert len(pick_questions(qs[:2], 4)) == 2


@pytest.mark.data
def test_gain_keeps_system1_fixed_and_credits_derived_records():
    [net] = [
        n for n in load_networks(shared("socialmem", "training")) if n.network_id == "grp_4d5e6f7a"
    ]
    gain = StoreQAGain.from_folder([net], QAGainConfig(embedder="hashing"))
    assert len(gain.questions["grp_4d5e6f7a"]) == 4
    teacher = net.reference_states()[-1]
    # the teacher's records go into the store as records, chains included
    new = [r for batch, _ in records_by_position(net, teacher) for r in batch]
    assert len(new) == len(teacher.entries)
    full_t, s1_t = gain.accuracies("grp_4d5e6f7a", teacher)
    full_e, s1_e = gain.accuracies("grp_4d5e6f7a", WriterState(roster=net.roster))
    assert s1_t == s1_e == gain._accuracy("grp_4d5e6f7a", None, "s2")  # verbatim-only baseline
    assert 0.0 <= full_t <= 1.0 and 0.0 <= full_e <= 1.0
    assert gain("grp_4d5e6f7a", teacher) == pytest.approx(full_t - s1_t)

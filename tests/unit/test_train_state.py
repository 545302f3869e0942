"""Replaying teacher transitions rebuilds the teacher's final state."""

from __future__ import annotations

import json

import pytest

from speakerflow.training.state import WriterState, replay_teacher
from tests.conftest import shared


def test_apply_update_keeps_old_entry_and_copies_coordinates():
    s = WriterState(roster=("Ana",))
    s.apply(
        [
            {
                "action": "ADD",
                "owner": "Ana",
                "source": "Ana",
                "layer": "per_speaker_core",
                "utype": "fact",
                "content": "lives in Vienna",
            }
        ],
        position=0,
        ids=["a"],
    )
    s.apply(
        [{"action": "UPDATE", "entry_id": "a", "content": "lives in Graz"}], position=1, ids=["b"]
    )
    assert [h["entry_id"] for h in s.heads()] == ["b"]
    assert s.entries["a"]["superseded_by"] == "b" and s.edges == [("a", "b")]
    assert s.entries["b"]["owner"] == "Ana" and s.entries["b"]["layer"] == "per_speaker_core"
    with pytest.raises(KeyError, match="not a\ncurrent head|not a current head"):
        s.apply([{"action": "UPDATE", "entry_id": "a", "content": "x"}], position=2)


@pytest.mark.data
def test_replay_matches_every_teacher_final_state():
    folder = shared("socialmem", "teacher")
    files = sorted(folder.glob("*.json"))
    assert files
    for path in files:
        teacher = json.loads(path.read_text())
        states = replay_teacher(teacher)
        assert len(states) == len(teacher["transitions"])
        final = WriterState.from_final_state(teacher["final_state"])
        assert {h["entry_id"] for h in states[-1].heads()} == {
            h["entry_id"] for h in final.heads()
        }, path
        assert set(states[-1].edges) == set(final.edges), path

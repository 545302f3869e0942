"""The window credit: a dense, speaker-conditioned term over the records the teacher wrote in
one window (written before the code that computes it)."""

from __future__ import annotations

import json

import pytest

from speakerflow.training.reward import RewardConfig, step_reward, window_credit
from speakerflow.training.state import WriterState

ROSTER = ("Ana", "Ben")


def add(content, owner="Ana", source="Ana", layer="per_speaker_core"):
    return {
        "action": "ADD",
        "owner": owner,
        "source": source,
        "layer": layer,
        "utype": "fact",
        "content": content,
    }


def before():
    s = WriterState(roster=ROSTER)
    s.apply([add("keeps bees on the roof")], position=0, ids=["e1"])
    return s


def after(*actions):
    s = before()
    s.apply(list(actions), position=1)
    return s


TEACHER = after(add("has started learning the cello"))


def test_writing_nothing_where_the_teacher_wrote_nothing_is_full_credit():
    assert window_credit(before(), before(), before()) == 1.0


def test_writing_nothing_where_the_teacher_wrote_earns_nothing():
    assert window_credit(before(), before(), TEACHER) == 0.0


def test_writing_where_the_teacher_wrote_nothing_earns_nothing():
    assert window_credit(before(), after(add("likes tea")), before()) == 0.0


def test_the_teachers_record_is_full_credit_and_a_near_one_is_partial():
    exact = window_credit(before(), after(add("has started learning the cello")), TEACHER)
    near = window_credit(before(), after(add("is learning to play cello")), TEACHER)
    far = window_credit(before(), after(add("went to the market")), TEACHER)
    assert exact == pytest.approx(1.0)
    assert 0.0 < far < near < exact


def test_credit_is_speaker_conditioned():
    wrong_owner = after(add("has started learning the cello", owner="Ben", source="Ben"))
    wrong_source = after(add("has started learning the cello", source="Ben"))
    assert window_credit(before(), wrong_owner, TEACHER) == 0.0
    assert 0.0 < window_credit(before(), wrong_source, TEACHER) < 1.0


def test_an_extra_record_costs_precision():
    one = window_credit(before(), after(add("has started learning the cello")), TEACHER)
    two = window_credit(
        before(), after(add("has started learning the cello"), add("went to the market")), TEACHER
    )
    assert two < one


def test_step_reward_adds_the_weighted_credit_and_the_papers_return_has_none():
    reply = json.dumps({"actions": [add("has started learning the cello")]})
    kwargs = dict(n_messages=3, position=1)
    plain, _ = step_reward(reply, before(), TEACHER, **kwargs)
    credited, _ = step_reward(reply, before(), TEACHER, cfg=RewardConfig(w_new=0.5), **kwargs)
    assert plain.new == pytest.approx(1.0)
    assert credited.local == pytest.approx(plain.local + 0.5)

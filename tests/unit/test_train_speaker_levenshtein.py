"""SpeakerLevenshtein on hand-computed cases (SpeakerMem-R1 appendix E)."""

from __future__ import annotations

import pytest

from speakerflow.training.speaker_levenshtein import (
    kappa,
    score_chains,
    score_states,
    soft_match,
    token_f1,
    tokens,
)


def rec(content, owner="Ana", source=None, layer="per_speaker_core"):
    return {"owner": owner, "source": source or owner, "layer": layer, "content": content}


def test_tokens_lowercase_alnum_and_cjk():
    assert tokens("Flight BA-204, 9:30!") == ("flight", "ba", "204", "9", "30")
    assert tokens("我喜欢 Sushi") == ("我", "喜", "欢", "sushi")


def test_soft_match_by_hand():
    # token F1: 1 common of 1 / 2 tokens -> p=1, r=1/2, F1 = 2/3
    # SequenceMatcher on "apple" vs "apple pie": 5 matched chars, ratio = 2*5/(5+9) = 10/14
    assert token_f1(("apple",), ("apple", "pie")) == pytest.approx(2 / 3)
    assert soft_match("Apple.", "apple pie") == pytest.approx(0.6 * 2 / 3 + 0.4 * 10 / 14)


def test_perfect_match_is_one():
    state = [
        rec("likes the Lisbon option"),
        rec("team goes to Porto", owner="GROUP", source="Ana", layer="group_interaction"),
    ]
    score = score_states(state, [dict(r) for r in state])
    assert score.f == 1.0 and score.phi == 1.0
    assert score.by_kind["person"].f == 1.0 and score.by_kind["GROUP"].f == 1.0


def test_wrong_owner_scores_zero():
    assert score_states([rec("lives in Vienna", owner="Ben")], [rec("lives in Vienna")]).f == 0.0
    # also a wrong source or layer is gated to zero
    assert kappa(rec("lives in Vienna", source="Ben"), rec("lives in Vienna")) == 0.0
    assert kappa(rec("lives in Vienna", layer="per_speaker_profile"), rec("lives in Vienna")) == 0.0


def test_gate_below_half():
    # "a b c d" vs "a x y z": token F1 = 1/4; chars "a b c d" vs "a x y z" share
    # "a " + " " + " " = 4 chars -> ratio 8/14. soft = 0.15 + 0.4*8/14 = 0.379 < 0.50
    soft = soft_match("a b c d", "a x y z")
    assert soft == pytest.approx(0.6 * 0.25 + 0.4 * 8 / 14)
    assert 0 < soft < 0.5
    assert kappa(rec("a b c d"), rec("a x y z")) == 0.0
    assert score_states([rec("a b c d")], [rec("a x y z")]).f == 0.0
    # just above the gate the soft score counts: F = 2 * 0.6857 / 2
    assert score_states([rec("apple")], [rec("apple pie")]).f == pytest.approx(0.4 + 0.4 * 10 / 14)


def test_one_to_one_prediction_cannot_match_two_references():
    ref = [rec("moved to Vienna in May"), rec("moved to Vienna in May")]
    score = score_states([rec("moved to Vienna in May")], ref)
    assert score.total.pairs == 1
    assert score.f == pytest.approx(2 * 1 / 3)


def test_hungarian_picks_the_best_global_assignment():
    # greedy on p1 would take r1 (1.0) and leave p2 unmatched; the optimum pairs p1-r2, p2-r1
    ref = [rec("budget is 600 euros"), rec("budget is 600 euros for the trip")]
    pred = [rec("budget is 600 euros"), rec("budget 600 euros")]
    score = score_states(pred, ref)
    assert score.total.pairs == 2
    greedy = kappa(pred[0], ref[0]) + kappa(pred[1], ref[1])
    assert score.total.matched >= greedy


def test_omissions_and_over_writing_lower_f():
    ref = [rec("lives in Vienna"), rec("works as a nurse")]
    assert score_states(ref, ref).f == 1.0
    omitted = score_states(ref[:1], ref)
    assert omitted.f == pytest.approx(2 / 3)  # 2 * 1 / (1 + 2)
    over = score_states(ref + [rec("owns a red bicycle")], ref)
    assert over.f == pytest.approx(4 / 5)  # 2 * 2 / (3 + 2)


def test_phi_weights_macro_and_worst_owner():
    ref = [rec("lives in Vienna"), rec("works as a nurse", owner="Ben")]
    score = score_states([rec("lives in Vienna")], ref)
    assert score.by_owner["ana"].f == 1.0 and score.by_owner["ben"].f == 0.0
    assert score.phi == pytest.approx(0.8 * 0.5 + 0.2 * 0.0)


def test_bucket_kinds_person_group_cross():
    ref = [
        rec("is always late", owner="Ben", source="Ana", layer="per_speaker_profile"),
        rec("we go to Porto", owner="GROUP", source="Ana", layer="group_interaction"),
        rec("lives in Vienna"),
    ]
    pred = [ref[1], ref[2]]
    score = score_states(pred, ref)
    assert score.by_kind["cross-person"].f == 0.0 and score.by_kind["cross-person"].n_ref == 1
    assert score.by_kind["GROUP"].f == 1.0 and score.by_kind["person"].f == 1.0


def test_empty_states_match_perfectly():
    assert score_states([], []).f == 1.0 and score_states([], []).phi == 1.0
    assert score_states([], [rec("x y")]).f == 0.0


def test_chain_f_halves_and_coordinates():
    old, new = rec("review on Friday"), rec("review moved to Thursday")
    assert score_chains([(old, new)], [(old, new)]).f == 1.0
    # old half right, new half unrelated: 0.5 * 1 + 0.5 * soft(new, other) stays >= 0.5
    other = rec("zzz qqq")
    half = score_chains([(old, other)], [(old, new)])
    assert half.f == pytest.approx(0.5 + 0.5 * soft_match("zzz qqq", "review moved to Thursday"))
    wrong_layer = (
        rec("review on Friday", layer="per_speaker_profile"),
        rec("review moved to Thursday", layer="per_speaker_profile"),
    )
    assert score_chains([wrong_layer], [(old, new)]).f == 0.0
    assert score_chains([], []).f == 1.0 and score_chains([(old, new)], []).f == 0.0

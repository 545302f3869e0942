"""The rules Writer's learned selector (ops/writer/salience.py) and its fitting script."""

from __future__ import annotations

import json

import numpy as np
import pytest

from speakerflow.graphs import GroupStore
from speakerflow.graphs.records import all_records
from speakerflow.ops.writer import consolidate as cs
from speakerflow.ops.writer import salience as sal
from speakerflow.ops.writer.rules import RulesWriter
from speakerflow.pipelines.write_path import write_group
from speakerflow.training.writer_selector import choose_l2, fit_logistic, matched_heads
from tests.unit.test_write_consolidate import club_table

pytestmark = pytest.mark.timeout(120)


def _write(**config):
    store = GroupStore("/unused", "club", in_memory=True)
    store.append_messages(club_table())
    write_group(store, RulesWriter(**config), progress=False)
    return sorted(
        (r["owner"], r["layer"], r["content"]) for r in all_records(store) if r.get("content")
    )


def test_shipped_weights_match_the_features_and_were_fitted_on_half_a_only():
    spec = json.loads(sal.WEIGHTS_PATH.read_text())
    assert tuple(spec["features"]) == sal.FEATURES
    assert len(spec["coef"]) == len(spec["mean"]) == len(spec["scale"]) == len(sal.FEATURES)
    assert 0.0 < spec["threshold"] < 1.0
    fit = spec["fit"]
    assert fit["half"] == "a" and 0 < fit["positives"] < fit["candidates"]
    # half a of the sorted ids: every other network from the first
    assert "grp_1a2b3c4d" not in fit["networks"] and "grp_0d1e2f3a" in fit["networks"]
    assert [c["threshold"] for c in fit["curve"]] == sorted(c["threshold"] for c in fit["curve"])
    best = max(c["f"] for c in fit["curve"])
    assert any(c["threshold"] == spec["threshold"] and c["f"] == best for c in fit["curve"])


def test_selector_refuses_weights_of_other_features():
    spec = json.loads(sal.WEIGHTS_PATH.read_text())
    with pytest.raises(ValueError, match="refit"):
        sal.Selector({**spec, "features": [*spec["features"][:-1], "other"]})


def test_features_of_a_record():
    msgs = [
        {"msg_id": "m1", "speaker": "Ana", "text": "Are we still doing the pottery class?"},
        {"msg_id": "m2", "speaker": "Ben", "text": "I moved to Vienna in March for the new job."},
        {"msg_id": "m3", "speaker": "Ana", "text": "Vienna! Congrats on the job Ben."},
    ]
    stats = cs.WordStats(msgs, {"ana", "ben"}, {})
    texts = {m["msg_id"]: (m["speaker"], m["text"]) for m in msgs}
    act = {
        "action": "ADD",
        "owner": "Ben",
        "source": "Ben",
        "layer": "per_speaker_core",
        "utype": "fact",
        "content": "moved to Vienna in March for the new job",
        "from_ids": ["m2"],
    }
    row = dict(zip(sal.FEATURES, sal.features(act, texts, stats, ["m1", "m2", "m3"]), strict=True))
    assert row["kind_person"] == 1.0 and row["kind_cross"] == row["kind_group"] == 0.0
    assert row["utype_fact"] == 1.0 and row["from_question"] == 0.0
    assert row["position"] == 0.5 and row["speaker_share"] == pytest.approx(1 / 3)
    assert row["uptake"] == pytest.approx(np.log1p(1))  # Ana takes "Vienna" up
    assert row["message_coverage"] == 1.0  # the record keeps every content word of m2
    cross = {**act, "owner": "Ana", "source": "Ben", "layer": "per_speaker_profile"}
    assert sal.features(cross, texts, stats, ["m1", "m2", "m3"])[1] == 1.0


def test_selection_keeps_a_subset_and_is_deterministic():
    everything = _write(select=False)
    chosen = _write(select=True)
    assert chosen == _write(select=True)
    assert 0 < len(chosen) < len(everything)
    assert _write(select=True, select_threshold=0.0) == everything
    # at threshold 1 no judged ADD passes; GROUP records are not judged by default
    group = [r for r in everything if r[0] == "GROUP"]
    assert group and set(_write(select=True, select_threshold=1.0)) == set(group)
    assert _write(select=True, select_group=True, select_threshold=1.0) == []


def test_matched_heads_use_the_metric_matching():
    ref = [
        {"owner": "Ana", "source": "Ana", "layer": "per_speaker_core", "content": "lives in Vienna"}
    ]
    pred = [
        {
            "owner": "Ana",
            "source": "Ana",
            "layer": "per_speaker_core",
            "content": "lives in Vienna now",
        },
        {
            "owner": "Ana",
            "source": "Ana",
            "layer": "per_speaker_core",
            "content": "lives in Vienna",
        },
        {
            "owner": "Ben",
            "source": "Ben",
            "layer": "per_speaker_core",
            "content": "lives in Vienna",
        },
    ]
    k = matched_heads(pred, ref)
    assert k[1] == 1.0 and k[0] == 0.0 and k[2] == 0.0  # one-to-one, owner-gated


def test_logistic_fit_learns_the_signal_and_l2_is_chosen_by_held_out_networks():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3))
    y = (x[:, 0] + 0.3 * rng.normal(size=300) > 0).astype(float)
    m = fit_logistic(x, y, l2=1.0)
    assert m["coef"][0] > 1.0 and abs(m["coef"][1]) < 0.5 and abs(m["coef"][2]) < 0.5
    l2, aucs = choose_l2(x, y, [f"n{i % 4}" for i in range(300)])
    assert l2 in aucs and aucs[l2] == max(aucs.values()) > 0.8  # held-out networks ranked well

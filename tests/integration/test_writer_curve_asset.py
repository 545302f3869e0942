"""The ``writer_learning_curve`` asset: a GRPO run folder's curve (and its SFT adapter's)
materialised as metadata and a plot; a folder without a curve fails with what to do."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from speakerflow.assets import training
from speakerflow.pipelines.resources import HomeStore


def _meta(result: dg.ExecuteInProcessResult) -> dict:
    (mat,) = result.asset_materializations_for_node("writer_learning_curve")
    return {k: v.value for k, v in mat.metadata.items()}


def test_curve_asset_shows_reward_phi_and_refusals_per_step(tmp_path):
    run = tmp_path / "grpo"
    (run / "sft").mkdir(parents=True)
    grpo = [
        {"step": 1, "reward": 0.21, "phi_sl": 0.55, "refused": 0.4, "json_valid": 0.75},
        {"step": 2, "reward": 0.26, "phi_sl": 0.58, "refused": 0.25, "json_valid": 1.0},
    ]
    (run / "curve.json").write_text(json.dumps(grpo))
    (run / "sft" / "curve.json").write_text(json.dumps([{"step": 1, "loss": 1.5}]))
    store = HomeStore(home=str(tmp_path / "home"))
    result = dg.materialize(
        [training.writer_learning_curve],
        resources={"store": store},
        run_config={"ops": {"writer_learning_curve": {"config": {"run_dir": str(run)}}}},
    )
    meta = _meta(result)
    assert meta["grpo_steps"] == 2 and meta["sft_steps"] == 1
    assert meta["refused_first"] == 0.4 and meta["refused_last"] == 0.25
    assert meta["plot"].startswith("![") and "base64" in meta["plot"]
    assert (tmp_path / "home" / "training" / "writer_learning_curve" / "curve.png").is_file()


def test_curve_asset_without_a_curve_says_what_to_do(tmp_path):
    store = HomeStore(home=str(tmp_path / "home"))
    with pytest.raises(dg.Failure, match="train sft|grpo --base"):
        dg.materialize(
            [training.writer_learning_curve],
            resources={"store": store},
            run_config={"ops": {"writer_learning_curve": {"config": {"run_dir": str(tmp_path)}}}},
        )


def test_curve_asset_reads_the_shipped_sft_adapter_by_default(tmp_path):
    from speakerflow.ops.write.writer.local import SHIPPED_ADAPTER

    shipped = json.loads((SHIPPED_ADAPTER / "curve.json").read_text())
    store = HomeStore(home=str(tmp_path / "home"))
    result = dg.materialize([training.writer_learning_curve], resources={"store": store})
    meta = _meta(result)
    assert meta["grpo_steps"] == 0 and meta["sft_steps"] == len(shipped) > 0
    assert meta["sft_loss_first"] == shipped[0]["loss"]

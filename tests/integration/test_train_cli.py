"""``speakerflow train sft|grpo|export-onnx`` on the tiny model, for real (torch, TRL,
onnxruntime)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speakerflow.cli import main

pytestmark = pytest.mark.slow

ROSTER = ["Ana", "Ben"]


def _network(folder: Path) -> Path:
    """A two-session network and its teacher file (an ADD, then an UPDATE of it)."""
    train, teacher = folder / "training", folder / "teacher"
    train.mkdir(parents=True)
    teacher.mkdir()
    sessions = []
    for s, lines in enumerate([["I live in Vienna.", "Nice!"], ["I moved to Graz.", "Congrats"]]):
        sid = f"grp_t01_s0{s + 1}"
        turns = [
            {
                "turn": f"{sid}_t{i}",
                "speaker": ROSTER[i % 2],
                "speaker_id": f"p{i % 2}",
                "content": text,
                "ts": f"2025-0{s + 1}-01T10:0{i}:00",
                "reply_to": "",
            }
            for i, text in enumerate(lines)
        ]
        sessions.append(
            {
                "session_id": sid,
                "session_index": s + 1,
                "topic": "t",
                "ts": turns[0]["ts"],
                "turns": turns,
            }
        )
    qa = [{"id": "q1", "question": "Where does Ana live now?", "answer": "Ana lives in Graz"}]
    net = {
        "speakers": ROSTER,
        "sessions": sessions,
        "qa_pairs": qa,
        "meta": {"network_id": "grp_t01"},
    }
    (train / "social_grp_t01.json").write_text(json.dumps(net))
    add = {
        "action": "ADD",
        "owner": "Ana",
        "source": "Ana",
        "layer": "per_speaker_core",
        "utype": "fact",
        "content": "Lives in Vienna",
    }
    upd = {"action": "UPDATE", "entry_id": "x1", "content": "Lives in Graz"}
    tr = [
        {
            "turn": 0,
            "session_id": "grp_t01_s01",
            "actions": [add],
            "created_ids": ["x1"],
            "updated_from": [],
        },
        {
            "turn": 1,
            "session_id": "grp_t01_s02",
            "actions": [upd],
            "created_ids": ["x2"],
            "updated_from": ["x1"],
        },
    ]
    entries = [
        dict(add, entry_id="x1", superseded_by="x2"),
        dict(add, content="Lives in Graz", entry_id="x2", superseded_by=""),
    ]
    (teacher / "grp_t01.json").write_text(
        json.dumps(
            {
                "network_id": "grp_t01",
                "window_size": 25,
                "transitions": tr,
                "final_state": {
                    "entries": entries,
                    "heads": entries[1:],
                    "roster": ROSTER,
                    "update_edges": [{"old": "x1", "new": "x2"}],
                },
            }
        )
    )
    return train


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _changed(a: dict, b: dict) -> float:
    return max((a[k].float() - b[k].float()).abs().max().item() for k in a)


def _run(capsys, *argv: str) -> dict:
    capsys.readouterr()
    rc = main([*argv, "--json"])  # text by default; the report as JSON with --json
    out = capsys.readouterr().out
    assert rc == 0, out
    return json.loads(out)


def _prime(folder: Path, out: Path, steps: int = 40) -> Path:
    """Test set-up only: nudge the random tiny model towards short JSON replies ending in
    end-of-turn, so that sampled rollouts differ in reward (a random model's rewards are
    all equal, and GRPO rightly makes no update without reward spread)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-2)
    ids = tok(
        '<|im_start|>assistant\n{"actions": [{"action": "NOOP"}]}<|im_end|>', return_tensors="pt"
    ).input_ids
    for _ in range(steps):
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from speakerflow.training.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="module")
def primed(tiny, tmp_path_factory):
    return _prime(tiny, tmp_path_factory.mktemp("primed") / "model")


def test_train_sft_two_steps_changes_weights(tiny, tmp_path, capsys):
    data = _network(tmp_path)
    out = tmp_path / "sft"
    report = _run(
        capsys,
        "train",
        "sft",
        str(data),
        "--model",
        str(tiny),
        "--out",
        str(out),
        "--steps",
        "2",
        "--heldout-fraction",
        "0",
        "--max-length",
        "4096",
    )
    assert report["steps"] == 2 and report["pairs"] == 2 and report["device"] == "cpu"
    assert report["train_networks"] == ["grp_t01"] and report["heldout_networks"] == []
    assert _changed(_weights(tiny), _weights(out)) > 0


def test_train_grpo_two_steps_changes_weights(primed, tmp_path, capsys):
    data = _network(tmp_path)
    start = primed
    out = tmp_path / "grpo"
    report = _run(
        capsys,
        "train",
        "grpo",
        str(data),
        "--model",
        str(start),
        "--out",
        str(out),
        "--steps",
        "2",
        "--group-size",
        "4",
        "--positions",
        "1",
        "--max-new-tokens",
        "24",
        "--heldout-fraction",
        "0",
        "--qa-embedder",
        "hashing",
    )
    steps = report["steps"]
    assert len(steps) == 2 and all(s["samples"] == 4 for s in steps)
    assert all(len(s["qa_gain"]) == 4 and all(-1 <= g <= 1 for g in s["qa_gain"]) for s in steps)
    assert report["updates_applied"] >= 1, steps
    assert all(kl <= 0.02 for s in steps for kl in s["kl"][:1])  # first pass: policy == reference
    assert _changed(_weights(start), _weights(out)) > 0


def test_export_onnx_parity(tiny, tmp_path, capsys):
    report = _run(
        capsys, "train", "export-onnx", "--model", str(tiny), "--out", str(tmp_path / "onnx")
    )
    assert report["max_abs_logit_diff"] < 1e-3 and report["greedy_match"] and report["ok"]
    assert (tmp_path / "onnx" / "model.onnx").is_file()


def test_grpo_skips_passes_whose_kl_to_the_reference_is_too_high(tiny, primed, tmp_path):
    """A policy far from its reference (here: primed vs. the raw tiny model) has mean k3 KL
    well above 0.02, so every pass is skipped and the weights stay as they were."""
    from speakerflow.training.data import load_networks
    from speakerflow.training.grpo import GRPOSettings, train_grpo

    start = primed
    nets = load_networks(_network(tmp_path))
    report = train_grpo(
        start,
        nets,
        tmp_path / "out",
        GRPOSettings(steps=1, group_size=4, positions=1, max_new_tokens=24),
        ref_dir=tiny,
    )
    [step] = report["steps"]
    if step["advantaged"] == 0:
        pytest.skip("no reward spread in this rollout; nothing to skip")
    assert step["applied"] == 0 and step["skipped_kl"] == 2 and min(step["kl"]) > 0.02
    assert _changed(_weights(start), _weights(tmp_path / "out")) == 0.0


def test_eval_writer_through_the_exported_onnx_writer(tiny, tmp_path, capsys):
    """The onnx Writer backend loads an exported folder; a random model's output is refused
    by Validate, so nothing is written and F is 0 (the baseline any trained Writer must beat)."""
    from speakerflow.training.writer_eval import run

    _run(capsys, "train", "export-onnx", "--model", str(tiny), "--out", str(tmp_path / "onnx"))
    report = run(_network(tmp_path), f"onnx:{tmp_path / 'onnx'}", max_tokens=16, max_tokens_cap=16)
    assert report["backend"].startswith("chat:") and report["records"]["pred"] == 0
    assert report["speaker_levenshtein_f"] == 0.0
    [row] = report["per_network"]
    assert row["write"]["model_calls"] == 2 and row["write"]["accepted"] == 0


def test_grpo_update_raises_the_return(primed, tmp_path):
    """The sign check of the loop: with a large learning rate (and no KL brake) one update
    moves the policy towards its better-rewarded samples, so the next round's mean return
    is higher (here: fewer replies cut at the token limit)."""
    from speakerflow.training.data import load_networks
    from speakerflow.training.grpo import GRPOSettings, train_grpo

    nets = load_networks(_network(tmp_path))
    report = train_grpo(
        primed,
        nets,
        tmp_path / "out",
        GRPOSettings(
            steps=2, group_size=8, positions=1, max_new_tokens=24, lr=1e-3, beta=0.0, kl_skip=1e9
        ),
    )
    first, second = report["steps"]
    if first["advantaged"] == 0:
        pytest.skip("no reward spread in the first rollout")
    assert first["applied"] == 2
    assert second["mean_return"] > first["mean_return"]


def test_calibrate_more_refuses_bad_biases_and_non_model_folders(tmp_path, capsys):
    data = _network(tmp_path / "data")
    argv = ["train", "calibrate-more", str(data), "--model", str(tmp_path)]
    assert main([*argv, "--biases", "0,x"]) == 2
    assert "--biases: numbers separated by commas" in capsys.readouterr().err
    assert main([*argv, "--heldout-fraction", "0"]) == 2  # tmp_path holds no model
    assert "not a model or adapter folder" in capsys.readouterr().err

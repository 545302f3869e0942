"""Writer training as assets: SFT data set -> SFT checkpoint -> GRPO checkpoint -> ONNX export.

Artefacts live in ``<home>/training/<asset>/``; each asset reads its upstream's folder.
The base model is a local folder (``base_model``); left empty, a tiny randomly initialised
Qwen2 model is built offline so that the whole chain runs on a CPU in seconds (its
output is meaningless: it exercises the machinery, not quality).
"""

import dataclasses
import time
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from speakerflow.pipelines import constants as C
from speakerflow.pipelines.resources import StoreResource

from .common import TRAINING, report_metadata


class TrainingConfig(dg.Config):
    """Shared settings of the training assets (defaults: a CPU smoke run on the tiny model)."""

    data: str = Field(default=C.SOCIALMEM_PATH, description="SocialMemBench-format networks")
    teacher: str = Field(
        default=C.SOCIALMEM_TEACHER_PATH, description="Teacher actions/states folder"
    )
    base_model: str = Field(
        default="", description="Local model folder; empty = build the tiny test model"
    )
    steps: int = Field(
        default=2, gt=0, description="SFT optimiser steps / GRPO rounds (2 = a smoke run)"
    )
    max_length: int = Field(
        default=4096, ge=16, description="SFT: longest prompt+completion in tokens"
    )
    group_size: int = Field(
        default=4, ge=2, description="GRPO: trajectories per network (paper: 8)"
    )
    positions: int = Field(default=1, ge=1, description="GRPO: writing positions per network")
    max_new_tokens: int = Field(
        default=24, ge=1, description="GRPO: tokens per generated action list"
    )
    seed: int = 0


def _folder(store: StoreResource, name: str) -> Path:
    return store.subdir(C.TRAINING_DIRNAME, name)


def _upstream(store: StoreResource, name: str) -> Path:
    path = Path(store.root()) / C.TRAINING_DIRNAME / name
    if not path.exists() or not any(path.iterdir()):
        raise dg.Failure(f"{path} is empty: materialise {name} first")
    return path


def _meta(report: dict[str, Any], folder: Path, start: float) -> dict[str, Any]:
    meta = report_metadata(report)
    meta["folder"] = dg.MetadataValue.path(str(folder))
    meta["seconds"] = round(time.perf_counter() - start, 2)
    return meta


def _base_model(config: TrainingConfig, store: StoreResource) -> Path:
    if config.base_model:
        return Path(config.base_model)
    tiny = Path(store.root()) / C.TRAINING_DIRNAME / "tiny-base"
    if not (tiny / "config.json").exists():
        from speakerflow.training.tiny import build_tiny_model as build_tiny

        build_tiny(tiny, seed=config.seed)
    return tiny


@dg.asset(group_name=TRAINING, kinds={"python"})
def writer_sft_dataset(
    context: dg.AssetExecutionContext, config: TrainingConfig, store: StoreResource
) -> dg.MaterializeResult:
    """(prompt, target actions) pairs for every writing segment, from the teacher states."""
    from speakerflow.training.data import build_sft_dataset as build
    from speakerflow.training.data import write_jsonl

    start = time.perf_counter()
    out = _folder(store, "writer_sft_dataset")
    pairs = build(config.data, config.teacher or None)
    if not pairs:
        raise dg.Failure(
            f"{config.data}: no writing segment found; point config 'data' at networks"
        )
    write_jsonl(pairs, out / "train.jsonl")
    networks = sorted({str(p.get("network_id", "")) for p in pairs})
    report = {
        "pairs": len(pairs),
        "networks": len(networks),
        "network_ids": networks,
        "file": str(out / "train.jsonl"),
    }
    return dg.MaterializeResult(metadata=_meta(report, out, start))


@dg.asset(group_name=TRAINING, deps=["writer_sft_dataset"], kinds={"pytorch"})
def writer_sft_checkpoint(
    context: dg.AssetExecutionContext, config: TrainingConfig, store: StoreResource
) -> dg.MaterializeResult:
    """The Writer after supervised fine-tuning (TRL SFT) on the SFT data set."""
    from speakerflow.training.data import read_jsonl
    from speakerflow.training.sft import SFTSettings as settings
    from speakerflow.training.sft import train_sft

    start = time.perf_counter()
    out = _folder(store, "writer_sft_checkpoint")
    pairs = read_jsonl(_upstream(store, "writer_sft_dataset") / "train.jsonl")
    report = train_sft(
        _base_model(config, store),
        pairs,
        out,
        settings(max_steps=config.steps, max_length=config.max_length, seed=config.seed),
    )
    return dg.MaterializeResult(metadata=_meta(dict(report), out, start))


@dg.asset(group_name=TRAINING, deps=["writer_sft_checkpoint"], kinds={"pytorch"})
def writer_grpo_checkpoint(
    context: dg.AssetExecutionContext, config: TrainingConfig, store: StoreResource
) -> dg.MaterializeResult:
    """The Writer after speaker-conditioned GRPO, starting from the SFT checkpoint."""
    from speakerflow.training.data import load_networks
    from speakerflow.training.grpo import GRPOSettings as settings
    from speakerflow.training.grpo import train_grpo

    start = time.perf_counter()
    out = _folder(store, "writer_grpo_checkpoint")
    networks = [n for n in load_networks(config.data, config.teacher or None) if n.has_teacher]
    if not networks:
        raise dg.Failure(f"{config.data}: no network with teacher states under {config.teacher}")
    report = train_grpo(
        _upstream(store, "writer_sft_checkpoint"),
        networks,
        out,
        settings(
            steps=config.steps,
            group_size=config.group_size,
            positions=config.positions,
            max_new_tokens=config.max_new_tokens,
            seed=config.seed,
        ),
    )
    return dg.MaterializeResult(metadata=_meta(dict(report), out, start))


@dg.asset(group_name=TRAINING, deps=["writer_grpo_checkpoint"], kinds={"onnx"})
def writer_onnx(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    """The GRPO Writer exported to ONNX (with KV cache), with its logit parity to torch."""
    from speakerflow.training.onnx_export import export_onnx, onnx_parity

    start = time.perf_counter()
    model = _upstream(store, "writer_grpo_checkpoint")
    out = _folder(store, "writer_onnx")
    export_onnx(model, out)
    parity = onnx_parity(model, out, "Ana: let's go with Porto.")
    report = dataclasses.asdict(parity) if dataclasses.is_dataclass(parity) else dict(parity)
    report.pop("torch_tokens", None), report.pop("onnx_tokens", None)
    report["greedy_match"] = int(bool(report.get("greedy_match")))
    report["onnx_bytes"] = sum(p.stat().st_size for p in out.glob("*.onnx*"))
    meta = _meta(report, out, start)
    meta["files"] = dg.MetadataValue.json(sorted(p.name for p in out.iterdir()))
    return dg.MaterializeResult(metadata=meta)


class CurveConfig(dg.Config):
    """Where the learned Writer's training curves are (``speakerflow train sft|grpo --base``
    output folders; default: the adapter shipped with the repository)."""

    run_dir: str = Field(
        default="",
        description="a GRPO output folder with curve.json (and sft/ beneath); empty = the "
        "shipped adapter",
    )


def plot_curve(grpo: list[dict[str, Any]], sft: list[dict[str, Any]], path: Path) -> Path:
    """SFT loss and the GRPO reward, Phi_SL, window credit and refused share per step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    left.plot([r["step"] for r in sft], [r["loss"] for r in sft], marker=".")
    left.set(title="SFT (LoRA)", xlabel="step", ylabel="loss")
    for key, label in (
        ("reward", "reward"),
        ("phi_sl", "Phi_SL"),
        ("window_credit", "window credit"),
        ("refused", "refused share"),
    ):
        rows = [r for r in grpo if key in r]
        if not rows:  # window_credit: runs before it existed
            continue
        right.plot([r["step"] for r in rows], [r[key] for r in rows], marker="o", label=label)
    right.set(title="GRPO (G samples per window)", xlabel="step")
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


@dg.asset(group_name=TRAINING, kinds={"python", "matplotlib"})
def writer_learning_curve(
    context: dg.AssetExecutionContext, config: CurveConfig, store: StoreResource
) -> dg.MaterializeResult:
    """The learned Writer's learning curve: SFT loss per step, GRPO reward, Phi_SL
    (SpeakerLevenshtein potential) and the share of actions Validate refuses per step (a
    GRPO run folder; an SFT adapter folder shows its loss curve only)."""
    import json

    from speakerflow.ops.write.writer.local import SHIPPED_ADAPTER

    start = time.perf_counter()
    run = Path(config.run_dir) if config.run_dir else SHIPPED_ADAPTER
    curve_file = run / "curve.json"
    if not curve_file.is_file():
        raise dg.Failure(
            f"{curve_file} is missing: point run_dir at a `train sft|grpo --base` output"
        )
    rows = json.loads(curve_file.read_text())
    sft_file = run / "sft" / "curve.json"
    if any("reward" in r for r in rows):  # a GRPO run (its SFT adapter copied into sft/)
        grpo, sft = rows, json.loads(sft_file.read_text()) if sft_file.is_file() else []
    else:  # an SFT adapter (the shipped one): its loss curve only
        grpo, sft = [], rows
    out = _folder(store, "writer_learning_curve")
    report: dict[str, Any] = {
        "grpo_steps": len(grpo),
        "sft_steps": len(sft),
        "plot": str(plot_curve(grpo, sft, out / "curve.png")),
        "curve": grpo,
    }
    for key in ("reward", "phi_sl", "refused", "json_valid"):
        rows = [r[key] for r in grpo if key in r]
        if rows:
            report[f"{key}_first"], report[f"{key}_last"] = rows[0], rows[-1]
    if sft:
        report["sft_loss_first"], report["sft_loss_last"] = sft[0]["loss"], sft[-1]["loss"]
    return dg.MaterializeResult(metadata=_meta(report, out, start))

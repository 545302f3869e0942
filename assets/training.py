"""Writer training as assets: SFT data set -> SFT checkpoint -> GRPO checkpoint -> ONNX export.

Artefacts live in ``<home>/training/<asset>/``; each asset reads its upstream's folder.
The base model is a local folder (``base_model``); left empty, a tiny randomly initialised
Qwen2 model is built offline so that the whole chain runs on a CPU in seconds (its
output is meaningless: it exercises the machinery, not quality).
"""

import inspect
import time
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from speakerflow.pipelines import constants as C
from speakerflow.pipelines.resources import StoreResource

from .common import TRAINING, report_metadata, require


class TrainingConfig(dg.Config):
    """Shared settings of the training assets (defaults: a CPU dry run on the tiny model)."""

    data: str = Field(default=C.SOCIALMEM_PATH, description="SocialMemBench-format networks")
    teacher: str = Field(default=C.SOCIALMEM_TEACHER_PATH, description="Teacher actions/states folder")
    base_model: str = Field(default="", description="Local model folder; empty = build the tiny test model")
    max_steps: int = Field(default=2, gt=0, description="Optimiser steps (2 = a smoke run)")
    seed: int = 0


def _folder(store: StoreResource, name: str) -> Path:
    return store.subdir(C.TRAINING_DIRNAME, name)


def _upstream(store: StoreResource, name: str) -> Path:
    path = Path(store.root()) / C.TRAINING_DIRNAME / name
    if not path.exists() or not any(path.iterdir()):
        raise dg.Failure(f"{path} is empty: materialise {name} first")
    return path


def call_with(fn: Any, **kwargs: Any) -> Any:
    """Call ``fn`` with the keyword arguments it declares (others dropped).

    Why: the assets pass one standard set of settings to training functions whose
    optional parameters differ; required parameters missing here still fail loudly.
    """
    params = inspect.signature(fn).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return fn(**kwargs)
    return fn(**{k: v for k, v in kwargs.items() if k in params})


def _as_dict(result: Any, **extra: Any) -> dict[str, Any]:
    if isinstance(result, dict):
        return {**extra, **result}
    if isinstance(result, str | Path):
        return {**extra, "path": str(result)}
    if hasattr(result, "__dict__"):
        return {**extra, **{k: v for k, v in vars(result).items() if not k.startswith("_")}}
    return extra


def _meta(report: dict[str, Any], folder: Path, start: float) -> dict[str, Any]:
    meta = report_metadata(report)
    meta["folder"] = dg.MetadataValue.path(str(folder))
    meta["seconds"] = round(time.perf_counter() - start, 2)
    return meta


@dg.asset(group_name=TRAINING, kinds={"python", "parquet"})
def writer_sft_dataset(context: dg.AssetExecutionContext, config: TrainingConfig,
                       store: StoreResource) -> dg.MaterializeResult:
    """(prompt, target actions) pairs per writing segment, split by whole network."""
    build = require("speakerflow.training.data", "build_sft_dataset", "the SFT data builder (training)")
    start = time.perf_counter()
    out = _folder(store, "writer_sft_dataset")
    result = call_with(build, data=config.data, teacher=config.teacher, out=out, out_dir=out, seed=config.seed)
    return dg.MaterializeResult(metadata=_meta(_as_dict(result), out, start))


def _base_model(config: TrainingConfig, store: StoreResource) -> Path:
    if config.base_model:
        return Path(config.base_model)
    tiny = Path(store.root()) / C.TRAINING_DIRNAME / "tiny-base"
    if not (tiny / "config.json").exists():
        build_tiny = require("speakerflow.training.tiny", "build_tiny_model", "the tiny test model")
        build_tiny(tiny, seed=config.seed)
    return tiny


@dg.asset(group_name=TRAINING, deps=["writer_sft_dataset"], kinds={"pytorch"})
def writer_sft_checkpoint(context: dg.AssetExecutionContext, config: TrainingConfig,
                          store: StoreResource) -> dg.MaterializeResult:
    """The Writer after supervised fine-tuning (TRL SFT) on the SFT data set."""
    train_sft = require("speakerflow.training.sft", "train_sft", "SFT training")
    start = time.perf_counter()
    out = _folder(store, "writer_sft_checkpoint")
    result = call_with(train_sft, model_dir=_base_model(config, store), base_model=_base_model(config, store),
                       dataset=_upstream(store, "writer_sft_dataset"), data=_upstream(store, "writer_sft_dataset"),
                       out_dir=out, max_steps=config.max_steps, seed=config.seed)
    return dg.MaterializeResult(metadata=_meta(_as_dict(result), out, start))


@dg.asset(group_name=TRAINING, deps=["writer_sft_checkpoint"], kinds={"pytorch"})
def writer_grpo_checkpoint(context: dg.AssetExecutionContext, config: TrainingConfig,
                           store: StoreResource) -> dg.MaterializeResult:
    """The Writer after speaker-conditioned GRPO, starting from the SFT checkpoint."""
    train_grpo = require("speakerflow.training.grpo", "train_grpo", "GRPO training")
    start = time.perf_counter()
    out = _folder(store, "writer_grpo_checkpoint")
    sft = _upstream(store, "writer_sft_checkpoint")
    result = call_with(train_grpo, model_dir=sft, sft_dir=sft, data=config.data, teacher=config.teacher,
                       out_dir=out, max_steps=config.max_steps, seed=config.seed)
    return dg.MaterializeResult(metadata=_meta(_as_dict(result), out, start))


@dg.asset(group_name=TRAINING, deps=["writer_grpo_checkpoint"], kinds={"onnx"})
def writer_onnx(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    """The GRPO Writer exported to ONNX (with KV cache) for onnxruntime serving."""
    export_onnx = require("speakerflow.training.onnx_export", "export_onnx", "the ONNX export")
    start = time.perf_counter()
    out = _folder(store, "writer_onnx")
    path = export_onnx(_upstream(store, "writer_grpo_checkpoint"), out)
    files = sorted(p.name for p in Path(out).iterdir())
    meta = _meta({"path": str(path)}, out, start)
    meta["files"] = dg.MetadataValue.json(files)
    meta["onnx_bytes"] = sum(p.stat().st_size for p in Path(out).glob("*.onnx*"))
    return dg.MaterializeResult(metadata=meta)

"""Supervised fine-tuning of the Writer with TRL's ``SFTTrainer``.

Pairs come from :func:`speakerflow.training.data.build_sft_dataset` (conversational
prompt-completion); the loss is on the completion (the actions JSON) only. Pairs longer
than ``max_length`` tokens are dropped and counted, never truncated: a cut target would
teach the model to stop mid-JSON. On CUDA the model trains in bf16 when the device
supports it; on CPU in fp32.

>>> report = train_sft("tiny-model", pairs, "out/sft", SFTSettings(max_steps=2))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class SFTSettings(BaseModel):
    """SFT hyper-parameters (the paper trains 10 epochs before RL)."""

    model_config = ConfigDict(frozen=True)

    epochs: float = Field(
        default=10.0, gt=0, description="passes over the pairs (ignored when max_steps > 0)"
    )
    max_steps: int = Field(default=-1, description="optimizer steps; -1 = use epochs")
    lr: float = Field(default=1e-5, gt=0)
    batch_size: int = Field(default=1, ge=1)
    grad_accum: int = Field(default=1, ge=1)
    max_length: int = Field(default=8192, ge=16, description="longest prompt+completion in tokens")
    seed: int = 0
    bf16: bool | None = Field(default=None, description="None = bf16 when CUDA supports it")
    gradient_checkpointing: bool = False
    lora_r: int = Field(default=0, ge=0, description="LoRA rank; 0 = train every weight")
    lora_alpha: int = Field(default=32, ge=1)
    lora_dropout: float = Field(default=0.0, ge=0, lt=1)
    lora_layers: int | None = Field(
        default=None,
        ge=1,
        description="adapt only the top N transformer layers (None: all); backward then stops "
        "there, which is what makes CPU training affordable",
    )
    save_steps: int = Field(default=0, ge=0, description="checkpoint every N steps (0: none)")
    resume: bool = Field(default=False, description="continue from the newest checkpoint")


#: The linear layers a LoRA adapter wraps (Llama / Qwen2 names).
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def lora_config(
    r: int, alpha: int, dropout: float = 0.0, layers: int | None = None, n_layers: int = 0
) -> Any:
    """A peft ``LoraConfig`` over :data:`LORA_TARGETS` for a causal LM (the top ``layers`` of
    its ``n_layers`` only, when given)."""
    from peft import LoraConfig

    top = list(range(max(0, n_layers - layers), n_layers)) if layers and n_layers else None
    return LoraConfig(
        r=r,
        lora_alpha=alpha,
        lora_dropout=dropout,
        target_modules=list(LORA_TARGETS),
        layers_to_transform=top,
        task_type="CAUSAL_LM",
    )


def newest_checkpoint(folder: Path) -> str | None:
    """The ``checkpoint-N`` folder with the largest N under ``folder`` (None if none)."""
    found = sorted(folder.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    return str(found[-1]) if found else None


def save_adapter(model: Any, tokenizer: Any, out: Path, base: str) -> None:
    """Save a peft model's adapter (safetensors) with ``base`` as its base-model spec, so
    :func:`speakerflow.ops.backends.models.resolve_model` finds the base on any machine. The
    tokenizer is the base's (no tokens are added), so it is saved only when it differs."""
    model.save_pretrained(str(out), safe_serialization=True)
    if len(tokenizer) != model.get_input_embeddings().num_embeddings:
        tokenizer.save_pretrained(str(out))
    cfg_path = out / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = base
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")


def device_and_dtype(bf16: bool | None = None) -> tuple[str, Any]:
    """``("cuda", bfloat16)`` on a bf16-capable GPU (unless ``bf16`` is False), else
    ``("cpu", float32)``."""
    import torch

    if torch.cuda.is_available():
        use_bf16 = torch.cuda.is_bf16_supported() if bf16 is None else bf16
        return "cuda", torch.bfloat16 if use_bf16 else torch.float32
    return "cpu", torch.float32


def fits(pairs: Sequence[dict[str, Any]], tokenizer: Any, max_length: int) -> list[dict[str, Any]]:
    """The pairs whose templated prompt + completion is at most ``max_length`` tokens."""
    keep = []
    for p in pairs:
        n = len(
            tokenizer.apply_chat_template(list(p["prompt"]) + list(p["completion"]), tokenize=True)
        )
        if n <= max_length:
            keep.append(p)
    return keep


def _sft_config(s: SFTSettings, out: Path, device: str, bf16: bool) -> Any:
    """TRL's ``SFTConfig`` for these settings: checkpoints under ``out/checkpoints``,
    completion-only loss, a loss logged every step."""
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(out / "checkpoints"),
        num_train_epochs=s.epochs,
        max_steps=s.max_steps,
        learning_rate=s.lr,
        per_device_train_batch_size=s.batch_size,
        gradient_accumulation_steps=s.grad_accum,
        max_length=s.max_length,
        completion_only_loss=True,
        bf16=bf16,
        gradient_checkpointing=s.gradient_checkpointing,
        seed=s.seed,
        report_to="none",
        save_strategy="steps" if s.save_steps else "no",
        save_steps=s.save_steps or 500,
        logging_steps=1,
        use_cpu=device == "cpu",
        dataloader_pin_memory=device == "cuda",
    )


def _save(
    trainer: Any, tokenizer: Any, out: Path, model_dir: str | Path, adapter: Any, peft_config: Any
) -> list[dict]:
    """Save the trained adapter (over its base) or the whole model in ``out``, and its loss
    curve as ``out/curve.json``; return the curve."""
    if adapter is not None or peft_config is not None:
        base = adapter_base_spec(model_dir, adapter)
        save_adapter(trainer.model, tokenizer, out, base)
    else:
        trainer.save_model(str(out))
        tokenizer.save_pretrained(str(out))
    curve = [
        {"step": int(r["step"]), "loss": round(float(r["loss"]), 4)}
        for r in trainer.state.log_history
        if "loss" in r
    ]
    (out / "curve.json").write_text(json.dumps(curve, indent=1) + "\n")
    return curve


def train_sft(
    model_dir: str | Path,
    pairs: Sequence[dict[str, Any]],
    out_dir: str | Path,
    settings: SFTSettings | None = None,
) -> dict[str, Any]:
    """Fine-tune ``model_dir`` on ``pairs`` and save the model + tokenizer in ``out_dir``.

    Returns
    -------
    dict
        ``pairs`` used, ``dropped_too_long``, ``steps`` done, ``train_loss`` (mean over
        the run), ``device``, ``dtype``, ``seconds``, ``out_dir``.
    """
    import torch
    from datasets import Dataset
    from trl import SFTTrainer

    from speakerflow.ops.backends.models import load_causal_lm, resolve_model

    s = settings or SFTSettings()
    out = Path(out_dir)
    _, chain = resolve_model(model_dir)
    adapter = chain[-1] if chain else None
    device, dtype = device_and_dtype(s.bf16)
    # an adapter given: it goes on training (any adapters under it are merged into the base)
    model, tokenizer = load_causal_lm(model_dir, dtype=dtype, merge=False)
    used = fits(pairs, tokenizer, s.max_length)
    if not used:
        raise ValueError(
            f"no SFT pair fits in max_length={s.max_length} tokens "
            f"({len(pairs)} given); raise --max-length or use shorter segments"
        )
    peft_config = None
    if adapter is None and s.lora_r:
        n_layers = int(getattr(model.config, "num_hidden_layers", 0))
        peft_config = lora_config(s.lora_r, s.lora_alpha, s.lora_dropout, s.lora_layers, n_layers)
    data = Dataset.from_list(
        [{"prompt": list(p["prompt"]), "completion": list(p["completion"])} for p in used]
    )
    config = _sft_config(s, out, device, dtype == torch.bfloat16)
    start = time.perf_counter()
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=data,
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    resume = newest_checkpoint(out / "checkpoints") if s.resume else None
    result = trainer.train(resume_from_checkpoint=resume)
    curve = _save(trainer, tokenizer, out, model_dir, adapter, peft_config)
    return {
        "curve": curve,
        "resumed_from": resume,
        "lora_r": s.lora_r if peft_config is not None else None,
        "pairs": len(used),
        "dropped_too_long": len(pairs) - len(used),
        "steps": int(result.global_step),
        "train_loss": float(result.training_loss),
        "device": device,
        "dtype": str(dtype).removeprefix("torch."),
        "seconds": round(time.perf_counter() - start, 3),
        "out_dir": str(out),
    }


def adapter_base_spec(model_dir: str | Path, adapter: Path | None) -> str:
    """The base spec a new adapter records: the one its parent adapter names, else what
    training started from (a known name such as ``smollm2-135m`` stays a name)."""
    from speakerflow.ops.backends.models import adapter_base

    if adapter is not None:
        return adapter_base(adapter) or str(model_dir)
    return str(model_dir)

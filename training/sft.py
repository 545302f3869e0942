"""Supervised fine-tuning of the Writer with TRL's ``SFTTrainer``.

Pairs come from :func:`speakerflow.training.data.build_sft_dataset` (conversational
prompt-completion); the loss is on the completion (the actions JSON) only. Pairs longer
than ``max_length`` tokens are dropped and counted, never truncated: a cut target would
teach the model to stop mid-JSON. On CUDA the model trains in bf16 when the device
supports it; on CPU in fp32.

>>> report = train_sft("tiny-model", pairs, "out/sft", SFTSettings(max_steps=2))  # doctest: +SKIP
"""

from __future__ import annotations

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
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    s = settings or SFTSettings()
    out = Path(out_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    used = fits(pairs, tokenizer, s.max_length)
    if not used:
        raise ValueError(
            f"no SFT pair fits in max_length={s.max_length} tokens "
            f"({len(pairs)} given); raise --max-length or use shorter segments"
        )
    device, dtype = device_and_dtype(s.bf16)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype)
    data = Dataset.from_list(
        [{"prompt": list(p["prompt"]), "completion": list(p["completion"])} for p in used]
    )
    config = SFTConfig(
        output_dir=str(out / "checkpoints"),
        num_train_epochs=s.epochs,
        max_steps=s.max_steps,
        learning_rate=s.lr,
        per_device_train_batch_size=s.batch_size,
        gradient_accumulation_steps=s.grad_accum,
        max_length=s.max_length,
        completion_only_loss=True,
        bf16=dtype == torch.bfloat16,
        gradient_checkpointing=s.gradient_checkpointing,
        seed=s.seed,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        use_cpu=device == "cpu",
        dataloader_pin_memory=device == "cuda",
    )
    start = time.perf_counter()
    trainer = SFTTrainer(model=model, args=config, train_dataset=data, processing_class=tokenizer)
    result = trainer.train()
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    return {
        "pairs": len(used),
        "dropped_too_long": len(pairs) - len(used),
        "steps": int(result.global_step),
        "train_loss": float(result.training_loss),
        "device": device,
        "dtype": str(dtype).removeprefix("torch."),
        "seconds": round(time.perf_counter() - start, 3),
        "out_dir": str(out),
    }

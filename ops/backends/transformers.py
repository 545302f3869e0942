"""A chat backend on a local Hugging Face model folder, run with torch (CPU or CUDA).

``device="auto"`` uses CUDA when torch sees one; ``dtype="auto"`` means bfloat16 on CUDA
and float32 on CPU. Heavy imports (torch, transformers) happen at construction, never at
import time.

>>> chat = TransformersChat(model_dir="path/to/Qwen2.5-3B-Instruct")   # doctest: +SKIP
>>> chat.chat([{"role": "user", "content": "Say hi"}], max_tokens=8).text  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from speakerflow.ops.backends.local import LocalChatBackend, LocalModelConfig

_DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}


class TransformersConfig(LocalModelConfig):
    """:class:`LocalModelConfig` plus ``dtype`` (``auto``: bf16 on CUDA, fp32 on CPU)."""

    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"


class TransformersChat(LocalChatBackend):
    """Generation with ``AutoModelForCausalLM`` (eval mode, no gradients)."""

    name = "transformers"
    Config = TransformersConfig
    config: TransformersConfig

    def _load_model(self, folder: Path) -> Any:
        import torch
        from transformers import AutoModelForCausalLM

        choice = self.config.dtype
        if choice == "auto":
            choice = "bfloat16" if self.device == "cuda" else "float32"
        dtype = getattr(torch, _DTYPES[choice])
        model: Any = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
        return model.to(self.device).eval()

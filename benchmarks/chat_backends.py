"""Writer generation through the local chat backends: onnxruntime against torch (baseline).

Builds the tiny test model (or uses ``--model-dir``), exports it to ONNX, renders one Writer
prompt from the bundled sample chat and times the same greedy calls through the
``transformers`` backend and the ``onnx`` backend in the same process, one after the other.
Reports seconds per call, new tokens per second, the onnx/torch speed ratio, the export time
and the parity figures (max |logit diff|, identical greedy output).

    .venv/bin/python -m speakerflow.benchmarks.chat_backends [--calls 3] [--new-tokens 128]

On a GPU machine pass ``--device cuda`` (torch bf16 and onnxruntime-gpu's CUDA provider).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

SAMPLE = Path(__file__).resolve().parents[1] / "speakerflow" / "data" / "sample_team.jsonl"


def _segment(n_messages: int):
    from speakerflow.ops.write.interfaces import Segment

    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()[:n_messages]]
    roster = tuple(dict.fromkeys(r["speaker"] for r in rows))
    return Segment("bench#0", "bench", roster, tuple(rows))


def _time_backend(backend, messages, calls: int, new_tokens: int) -> dict[str, float]:
    backend.chat(messages, max_tokens=4)  # warm-up (allocations, lazy initialisation)
    tokens, start = 0, time.perf_counter()
    for _ in range(calls):
        result = backend.chat(messages, max_tokens=new_tokens)
        tokens += result.completion_tokens
    seconds = time.perf_counter() - start
    return {
        "prompt_tokens": result.prompt_tokens,
        "seconds_per_call": seconds / calls,
        "new_tokens_per_s": tokens / seconds,
    }


def run(
    model_dir: str | Path | None = None,
    *,
    calls: int = 3,
    new_tokens: int = 128,
    messages: int = 25,
    device: str = "cpu",
) -> dict[str, Any]:
    """Time both backends on one Writer prompt; returns the figures (also printed)."""
    from speakerflow.ops.backends import make_backend
    from speakerflow.ops.write.writer.prompt import build_writer_messages
    from speakerflow.training.onnx_export import export_onnx, onnx_parity
    from speakerflow.training.tiny import build_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(model_dir) if model_dir else build_tiny_model(Path(tmp) / "tiny")
        start = time.perf_counter()
        onnx_dir = export_onnx(folder, Path(tmp) / "onnx")
        export_s = time.perf_counter() - start
        chat = build_writer_messages(_segment(messages))
        torch_fig = _time_backend(
            make_backend("transformers", model_dir=folder, device=device), chat, calls, new_tokens
        )
        onnx_fig = _time_backend(
            make_backend("onnx", model_dir=onnx_dir, device=device), chat, calls, new_tokens
        )
        parity = onnx_parity(folder, onnx_dir, "Return the actions as JSON.", max_new_tokens=32)
    report: dict[str, Any] = {
        "model_dir": str(model_dir or "tiny (built)"),
        "device": device,
        "calls": calls,
        "new_tokens": new_tokens,
        "export_s": export_s,
        "torch": torch_fig,
        "onnx": onnx_fig,
        "onnx_over_torch_speed": onnx_fig["new_tokens_per_s"] / torch_fig["new_tokens_per_s"],
        "max_abs_logit_diff": parity.max_abs_logit_diff,
        "greedy_match": parity.greedy_match,
    }
    print(
        f"Writer prompt: {torch_fig['prompt_tokens']} tokens, {new_tokens} new tokens, "
        f"{calls} calls, device {device}"
    )
    print(f"{'backend':<14}{'s/call':>10}{'new tok/s':>12}")
    for name in ("torch", "onnx"):
        fig = report[name]
        print(f"{name:<14}{fig['seconds_per_call']:>10.3f}{fig['new_tokens_per_s']:>12.1f}")
    print(
        f"onnx/torch speed ratio {report['onnx_over_torch_speed']:.2f}x; export "
        f"{export_s:.2f} s; max |logit diff| {parity.max_abs_logit_diff:.2e}; "
        f"greedy identical: {parity.greedy_match}"
    )
    return report


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-dir", help="a Hugging Face causal LM folder (default: tiny model)")
    p.add_argument("--calls", type=int, default=3)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--messages", type=int, default=25, help="messages in the Writer segment")
    p.add_argument("--device", choices=("cpu", "cuda", "auto"), default="cpu")
    p.add_argument("--out", help="write the figures as JSON here")
    a = p.parse_args(argv)
    report = run(
        a.model_dir, calls=a.calls, new_tokens=a.new_tokens, messages=a.messages, device=a.device
    )
    if a.out:
        Path(a.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

"""Writer generation through the local chat backends: onnxruntime against torch (baseline).

Takes the real base model (``--model-dir smollm2-135m``, the default; a LoRA adapter folder
is merged over its base; ``--tiny`` builds the random test model instead), exports it to
ONNX, renders one Writer prompt from the bundled sample chat (``--prompt compact``: the
learned Writer's window prompt over ``--messages`` 4 messages; ``full``: the chat Writer's)
and times the same greedy calls through the ``transformers`` backend and the ``onnx``
backend in the same process, one after the other. Then the learned Writer
(:class:`~speakerflow.ops.write.writer.local.LocalWriter`) writes one segment of
``--segment`` messages through each backend (windows batched): Writer messages per second.
Reports seconds per call, new tokens per second, the onnx/torch speed ratio, the export time
and the parity figures (max |logit diff| over the prompt's logits, identical greedy output).

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


def _writer_rate(model: str | Path, device: str, n_messages: int) -> dict[str, float]:
    """The learned Writer on one segment of ``n_messages`` (windows batched): messages/s."""
    from speakerflow.ops.write.writer.local import LocalWriter

    writer = LocalWriter(model=str(model), device=device, max_new_tokens=96)
    writer.propose(_segment(n_messages))
    return writer.throughput()


def run(
    model_dir: str | Path | None = "smollm2-135m",
    *,
    calls: int = 3,
    new_tokens: int = 128,
    messages: int = 4,
    device: str = "cpu",
    prompt: str = "compact",
    segment: int = 8,
) -> dict[str, Any]:
    """Time both backends on one Writer prompt; returns the figures (also printed).
    ``model_dir`` None builds the tiny random model."""
    from speakerflow.ops.backends import make_backend
    from speakerflow.ops.write.writer.prompt import build_compact_messages, build_writer_messages
    from speakerflow.training.onnx_export import export_onnx, onnx_parity
    from speakerflow.training.tiny import build_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        folder = model_dir if model_dir else build_tiny_model(Path(tmp) / "tiny")
        start = time.perf_counter()
        onnx_dir = export_onnx(folder, Path(tmp) / "onnx")
        export_s = time.perf_counter() - start
        seg = _segment(messages)
        compact = prompt == "compact"
        chat = build_compact_messages(seg).chat if compact else build_writer_messages(seg)
        torch_fig = _time_backend(
            make_backend("transformers", model_dir=folder, device=device), chat, calls, new_tokens
        )
        onnx_fig = _time_backend(
            make_backend("onnx", model_dir=onnx_dir, device=device), chat, calls, new_tokens
        )
        parity = onnx_parity(folder, onnx_dir, "Return the actions as JSON.", max_new_tokens=32)
        writer = (
            {
                "torch": _writer_rate(folder, device, segment),
                "onnx": _writer_rate(onnx_dir, device, segment),
            }
            if segment and model_dir
            else None
        )
    report: dict[str, Any] = {
        "model_dir": str(model_dir or "tiny (built)"),
        "prompt": prompt,
        "writer_messages_per_s": writer,
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
    if writer:
        print(
            f"learned Writer, {segment}-message segment: torch "
            f"{writer['torch']['messages_per_s']:.2f} msg/s, onnx "
            f"{writer['onnx']['messages_per_s']:.2f} msg/s"
        )
    return report


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--model-dir",
        default="smollm2-135m",
        help="a model spec: smollm2-135m (default), a .gguf file, a model or adapter folder",
    )
    p.add_argument("--tiny", action="store_true", help="use the random tiny test model")
    p.add_argument("--calls", type=int, default=3)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--messages", type=int, default=4, help="messages in the timed prompt")
    p.add_argument("--prompt", choices=("compact", "full"), default="compact")
    p.add_argument(
        "--segment", type=int, default=8, help="messages the learned Writer writes (0: skip)"
    )
    p.add_argument("--device", choices=("cpu", "cuda", "auto"), default="cpu")
    p.add_argument("--out", help="write the figures as JSON here")
    a = p.parse_args(argv)
    report = run(
        None if a.tiny else a.model_dir,
        calls=a.calls,
        new_tokens=a.new_tokens,
        messages=a.messages,
        device=a.device,
        prompt=a.prompt,
        segment=a.segment,
    )
    if a.out:
        Path(a.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

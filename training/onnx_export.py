"""Export a causal language model folder to ONNX (with KV cache) and check its parity.

:func:`export_onnx` uses optimum's ``ORTModelForCausalLM`` exporter and copies the
tokenizer (with its chat template) next to ``model.onnx``, so the exported folder is all
the ``onnx`` chat backend needs. :func:`onnx_parity` runs the same prompt through torch
and onnxruntime and reports the largest absolute logit difference (first forward pass
over the prompt) and whether greedy generations are token-for-token identical.

>>> out = export_onnx(model_dir, tmp_path / "onnx")            # doctest: +SKIP
>>> onnx_parity(model_dir, out, "hello").max_abs_logit_diff < 1e-3  # doctest: +SKIP
True
"""

from __future__ import annotations

import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

#: Files of a tokenizer folder copied beside the ONNX model (those present are copied).
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
    "tokenizer.model",
)


def _check_model_dir(model_dir: Path) -> None:
    if not (model_dir / "config.json").is_file():
        raise FileNotFoundError(
            f"{model_dir}: no config.json; pass a Hugging Face model folder (for a test model: "
            "speakerflow.training.tiny.build_tiny_model(folder))"
        )


def export_onnx(model_dir: str | Path, out_dir: str | Path, *, use_cache: bool = True) -> Path:
    """Export ``model_dir`` (a causal LM saved with ``save_pretrained``) to ``out_dir``.

    Parameters
    ----------
    model_dir : source folder (config, weights, tokenizer), or any spec of
        :func:`speakerflow.ops.backends.models.resolve_model` (``smollm2-135m``, a LoRA
        adapter folder: merged into its base before the export).
    out_dir : destination; receives ``model.onnx`` (plus external data for large models),
        ``config.json``, ``generation_config.json`` and the tokenizer files.
    use_cache : export with past key/value inputs and outputs (KV cache), so that
        generation feeds one new token per step instead of the whole sequence.

    Returns
    -------
    Path
        ``out_dir``, loadable by ``make_backend("onnx", model_dir=out_dir)``.
    """
    import tempfile

    from optimum.onnxruntime import ORTModelForCausalLM

    from speakerflow.ops.backends.models import load_causal_lm, resolve_model

    dst = Path(out_dir)
    base, chain = resolve_model(model_dir)
    _check_model_dir(base)
    dst.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = base
        if chain:  # LoRA adapters: merged into the base first, the export is one plain model
            model, tokenizer = load_causal_lm(model_dir)
            src = Path(tmp) / "merged"
            model.save_pretrained(src)
            tokenizer.save_pretrained(src)
        with warnings.catch_warnings():  # the tracer's TracerWarnings say nothing actionable
            warnings.simplefilter("ignore")
            ort = ORTModelForCausalLM.from_pretrained(src, export=True, use_cache=use_cache)
        ort.save_pretrained(dst)
        for name in TOKENIZER_FILES:
            if (src / name).is_file():
                shutil.copy2(src / name, dst / name)
    return dst


@dataclass(frozen=True)
class ParityReport:
    """Torch versus onnxruntime on one prompt.

    ``max_abs_logit_diff`` is the largest |torch - onnx| over every position and vocabulary
    entry of the prompt's logits; ``greedy_match`` is True when both greedy continuations
    (``max_new_tokens`` tokens) are identical; the token ids are kept for inspection.
    """

    max_abs_logit_diff: float
    greedy_match: bool
    torch_tokens: tuple[int, ...]
    onnx_tokens: tuple[int, ...]


def onnx_parity(
    model_dir: str | Path, onnx_dir: str | Path, prompt: str, *, max_new_tokens: int = 24
) -> ParityReport:
    """Compare logits and greedy output of the torch model and its ONNX export (on CPU).

    ``prompt`` is wrapped as a user turn with the tokenizer's chat template when it has
    one, else tokenised as is.
    """
    import torch
    from optimum.onnxruntime import ORTModelForCausalLM

    from speakerflow.ops.backends.models import load_causal_lm

    ref, tokenizer = load_causal_lm(model_dir, dtype=torch.float32)
    ref = ref.eval()
    text = prompt
    if tokenizer.chat_template:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )
    enc = tokenizer(text, return_tensors="pt", add_special_tokens=False)
    ort = ORTModelForCausalLM.from_pretrained(onnx_dir, use_cache=True)
    gen = {
        "max_new_tokens": max_new_tokens,
        "do_sample": False,
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }
    with torch.no_grad():
        diff = (ref(**enc).logits - ort(**enc).logits).abs().max().item()
        n = enc["input_ids"].shape[1]
        a = ref.generate(**enc, **gen)[0, n:].tolist()
        b = ort.generate(**enc, **gen)[0, n:].tolist()
    return ParityReport(float(diff), a == b, tuple(a), tuple(b))

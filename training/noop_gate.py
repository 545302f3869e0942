"""Calibrating the local Writer's NOOP gate on the training windows.

A small SFT policy can put most of its first-token mass on NOOP for every window (NOOP
targets are short and learnt first), so greedy decoding writes nothing although the model
ranks the windows sensibly: its NOOP probability is higher where the teacher wrote nothing.
The gate turns that ranking into the decision: a reply opens with NOOP only where
``P(NOOP first token | prompt, REPLY_OPENING) >= noop_min_p``, otherwise with the best action
token (:meth:`speakerflow.ops.backends.local.LocalChatBackend.chat_batch`, ``gate``).

:func:`calibrate` picks ``noop_min_p`` on windows whose kind is known (the TRAINING
networks' windows; never the held-out ones, which would fit the threshold to the report):
the threshold that maximises the balanced accuracy of "NOOP iff p >= t" against the
teacher's target kind (NOOP or actions), the middle of the best run of thresholds. The
result goes to the model folder's ``decoding.json``, which
:class:`~speakerflow.ops.write.writer.local.LocalWriter` reads.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from speakerflow.ops.write.writer.local import DECODING_FILE, LocalWriter
from speakerflow.ops.write.writer.prompt import REPLY_OPENING

from .windows import is_noop


def balanced_accuracy(probs: Sequence[float], noop: Sequence[bool], t: float) -> float:
    """Mean of the recall of NOOP windows and of action windows when NOOP iff p >= t (a kind
    with no window counts as fully recalled)."""
    hits = {True: 0, False: 0}
    sizes = {True: 0, False: 0}
    for p, kind in zip(probs, noop, strict=True):
        sizes[kind] += 1
        hits[kind] += (p >= t) == kind
    return sum(hits[k] / sizes[k] if sizes[k] else 1.0 for k in (True, False)) / 2


def calibrate(probs: Sequence[float], noop: Sequence[bool]) -> dict[str, Any]:
    """The ``noop_min_p`` that best separates NOOP windows from action windows.

    Candidates are the midpoints between consecutive distinct probabilities (plus 0 and 1);
    of the best-scoring ones the median is taken, so the threshold sits inside the gap rather
    than on its edge. Returns ``noop_min_p``, ``balanced_accuracy`` at it and at 0.5 (the
    argmax's usual cut for a two-way choice), and the window counts.
    """
    if not probs or len(probs) != len(noop):
        raise ValueError(
            f"calibrate needs one kind per probability, got {len(probs)} / {len(noop)}"
        )
    if any(not 0.0 <= p <= 1.0 for p in probs):
        raise ValueError("probabilities must lie in [0, 1]")
    values = sorted(set(probs))
    cuts = [0.0] + [(a + b) / 2 for a, b in zip(values, values[1:], strict=False)] + [1.0]
    scores = [balanced_accuracy(probs, noop, t) for t in cuts]
    best = max(scores)
    winners = [t for t, s in zip(cuts, scores, strict=True) if s == best]
    t = winners[len(winners) // 2]
    return {
        "noop_min_p": round(t, 6),
        "balanced_accuracy": round(best, 4),
        "balanced_accuracy_at_0.5": round(balanced_accuracy(probs, noop, 0.5), 4),
        "windows": len(probs),
        "noop_windows": sum(noop),
    }


def per_kind_sample(
    examples: Sequence[dict[str, Any]], per_kind: int | None, seed: int = 0
) -> list[dict[str, Any]]:
    """A seeded sample of at most ``per_kind`` NOOP and ``per_kind`` action windows of
    ``examples``, in their order (None: all); one forward pass of a ~900-token window costs
    seconds on a CPU, so calibration may use a balanced part of the training windows."""
    if per_kind is None:
        return list(examples)
    if per_kind < 1:
        raise ValueError(f"per_kind must be >= 1, got {per_kind}")
    rng = random.Random(seed)
    keep: set[int] = set()
    for kind in (True, False):
        idx = [i for i, ex in enumerate(examples) if is_noop(ex) == kind]
        keep |= set(rng.sample(idx, min(per_kind, len(idx))))
    return [ex for i, ex in enumerate(examples) if i in keep]


def window_scores(backend: Any, examples: Sequence[dict[str, Any]]) -> list[tuple[float, float]]:
    """Per windowed example, one teacher-forced forward pass of prompt + target under a local
    chat backend: ``(P(NOOP first token after REPLY_OPENING), mean target-token loss)``.

    The target starts with :data:`REPLY_OPENING` token for token (the SFT targets do), so
    the distribution at the last opening token is the one decoding sees after the forced
    opening; the loss is over the target's tokens (its turn end included), as SFT's
    completion-only loss."""
    import torch

    tok = backend.tokenizer
    noop = backend.first_token(REPLY_OPENING, "NOOP")
    out = []
    for ex in examples:
        head = tok(backend.render(ex["prompt"]) + REPLY_OPENING, add_special_tokens=False)
        n_head = len(head["input_ids"])
        n_prompt = len(tok(backend.render(ex["prompt"]), add_special_tokens=False)["input_ids"])
        full = tok.apply_chat_template(list(ex["prompt"]) + list(ex["completion"]), tokenize=True)
        full = full["input_ids"] if isinstance(full, dict) else full
        if full[:n_head] != head["input_ids"]:
            raise ValueError(f"{ex.get('segment_id')}: the target does not open with REPLY_OPENING")
        ids = torch.tensor([full], device=backend.model.device)
        with torch.no_grad():
            logits = backend.model(input_ids=ids).logits[0].float()
        p_noop = float(torch.softmax(logits[n_head - 1], dim=-1)[noop])
        loss = torch.nn.functional.cross_entropy(logits[n_prompt - 1 : -1], ids[0, n_prompt:])
        out.append((p_noop, float(loss)))
    return out


def calibrate_folder(
    model: str | Path, examples: Sequence[dict[str, Any]], networks: Sequence[str]
) -> dict[str, Any]:
    """Calibrate ``model`` on ``examples`` (training windows of ``networks``) and write the
    result to ``model``'s :data:`~speakerflow.ops.write.writer.local.DECODING_FILE`."""
    folder = Path(model)
    if not (folder / "adapter_config.json").is_file() and not (folder / "config.json").is_file():
        raise ValueError(f"{folder}: not a model or adapter folder (decoding.json goes there)")
    scores = window_scores(LocalWriter(model=str(folder), noop_min_p=0.0).backend, examples)
    probs = [p for p, _ in scores]
    kinds = [is_noop(ex) for ex in examples]
    report = calibrate(probs, kinds)

    def by_kind(i: int) -> dict[str, float | None]:
        pick = [s[i] for s, k in zip(scores, kinds, strict=True)]
        return {
            "noop_windows": _mean([x for x, k in zip(pick, kinds, strict=True) if k]),
            "action_windows": _mean([x for x, k in zip(pick, kinds, strict=True) if not k]),
        }

    report.update(
        calibrated_on=sorted(networks),
        mean_p_noop=by_kind(0),
        mean_target_loss=by_kind(1),
        prompt_opening=REPLY_OPENING,
    )
    path = folder / DECODING_FILE
    kept = json.loads(path.read_text()) if path.is_file() else {}  # e.g. decoding, more_bias
    path.write_text(json.dumps({**kept, **report}, indent=1) + "\n")
    return report


def _mean(xs: Sequence[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None

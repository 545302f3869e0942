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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from speakerflow.ops.write.writer.local import DECODING_FILE
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


def noop_probs(model: str, examples: Sequence[dict[str, Any]]) -> list[float]:
    """P(NOOP first token) after the forced opening for each windowed example's prompt,
    under the local Writer's model (an adapter folder or base spec)."""
    from speakerflow.ops.write.writer.local import LocalWriter

    backend = LocalWriter(model=model, noop_min_p=0.0).backend
    token = backend.first_token(REPLY_OPENING, "NOOP")
    return backend.first_probs([ex["prompt"] for ex in examples], REPLY_OPENING, token)


def calibrate_folder(
    model: str | Path, examples: Sequence[dict[str, Any]], networks: Sequence[str]
) -> dict[str, Any]:
    """Calibrate ``model`` on ``examples`` (training windows of ``networks``) and write the
    result to ``model``'s :data:`~speakerflow.ops.write.writer.local.DECODING_FILE`."""
    folder = Path(model)
    if not (folder / "adapter_config.json").is_file() and not (folder / "config.json").is_file():
        raise ValueError(f"{folder}: not a model or adapter folder (decoding.json goes there)")
    probs = noop_probs(str(folder), examples)
    kinds = [is_noop(ex) for ex in examples]
    report = calibrate(probs, kinds)
    report.update(
        calibrated_on=sorted(networks),
        mean_p_noop={
            "noop_windows": _mean([p for p, k in zip(probs, kinds, strict=True) if k]),
            "action_windows": _mean([p for p, k in zip(probs, kinds, strict=True) if not k]),
        },
        prompt_opening=REPLY_OPENING,
    )
    (folder / DECODING_FILE).write_text(json.dumps(report, indent=1) + "\n")
    return report


def _mean(xs: Sequence[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None

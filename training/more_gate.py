"""Calibrate how many actions the structured / extract Writer writes per window.

After each action the walk chooses between closing the reply and opening another
(:mod:`speakerflow.ops.write.writer.structured`); a model trained on few windows prefers to
close, so it writes about one action per window where the teacher writes more.
``more_bias`` is added to the log-probability of opening another action. This module picks
it on TRAINING windows only (held-out networks are never used): for each candidate bias the
extract walk runs on the same seeded sample of windows, and the bias whose mean number of
actions per window is closest to the teacher's on those windows wins (ties: the smaller
bias). The result is merged into the model folder's ``decoding.json`` (its other keys, e.g.
``decoding`` and ``noop_min_p``, are kept), which the local Writer reads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from speakerflow.ops.write.writer.local import DECODING_FILE, MAX_BIAS, LocalWriter

from .grpo_windows import window_segment

#: Candidate biases (nats added to the log-probability of another action).
BIASES = (0.0, 1.0, 2.0, 3.0, 4.0)


def teacher_actions(example: dict[str, Any]) -> int:
    """The teacher's actions (NOOP aside) in a window example."""
    return sum(a.get("action") != "NOOP" for a in json.loads(example["target_actions"]))


def calibrate_more(
    model: str | Path,
    examples: Sequence[dict[str, Any]],
    networks: Sequence[str],
    biases: Sequence[float] = BIASES,
) -> dict[str, Any]:
    """Choose ``more_bias`` for ``model`` on ``examples`` (training windows of ``networks``)
    and merge it into the folder's :data:`DECODING_FILE`; returns the report."""
    folder = Path(model)
    if not (folder / "adapter_config.json").is_file() and not (folder / "config.json").is_file():
        raise ValueError(f"{folder}: not a model or adapter folder (decoding.json goes there)")
    if not examples or not biases:
        raise ValueError("calibrate-more needs at least one training window and one bias")
    if any(abs(b) > MAX_BIAS for b in biases):
        raise ValueError(f"biases must lie in [-{MAX_BIAS:g}, {MAX_BIAS:g}], got {list(biases)}")
    writer = LocalWriter(model=str(folder), decoding="extract", more_bias=0.0)
    segments = [window_segment(ex)[0] for ex in examples]
    target = sum(teacher_actions(ex) for ex in examples) / len(examples)
    means: dict[str, float] = {}
    for bias in biases:
        writer.more_bias = float(bias)
        written = 0
        for seg in segments:
            out = writer.propose(seg)
            written += sum(a.get("action") not in (None, "NOOP") for a in out.actions)
        means[str(float(bias))] = round(written / len(segments), 4)
    best = min(biases, key=lambda b: (abs(means[str(float(b))] - target), abs(b)))
    path = folder / DECODING_FILE
    settings = json.loads(path.read_text()) if path.is_file() else {}
    report = {
        "more_bias": float(best),
        "teacher_actions_per_window": round(target, 4),
        "actions_per_window_by_bias": means,
        "windows": len(examples),
        "calibrated_on": sorted(networks),
    }
    settings.update(more_bias=float(best), more_bias_calibration=report)
    path.write_text(json.dumps(settings, indent=1) + "\n")
    return report

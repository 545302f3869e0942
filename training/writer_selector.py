"""Fit the rules Writer's salience selector (``ops/writer/salience.json``).

``python -m speakerflow.training.writer_selector [DATA] [--out PATH]``

1. Every network of the fit half (half ``a`` of :func:`speakerflow.training.writer_eval.halves`:
   sorted ids, taken alternately; networks whose teacher wrote in another language than the
   chat are left out, :func:`~speakerflow.training.data.teacher_overlap` < 0.5) is written
   by the rules Writer with selection off; every candidate ADD's feature row
   (:func:`speakerflow.ops.writer.salience.features`) is collected.
2. Label: 1 when the resulting head finds a teacher partner under SpeakerLevenshtein's own
   one-to-one matching (owner, source, layer gate, soft match >= 0.5), else 0.
3. Fit an L2-regularised logistic regression (numpy, Newton steps) on standardised rows.
4. Calibrate: write the fit half again with the selector on at each threshold of a grid and
   keep the threshold with the highest micro F on that half (the metric itself, after the
   Writer has reacted to the dropped records).

The other half (``b``) is never read here; ``speakerflow eval writer`` reports it.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .data import Network, load_networks, teacher_overlap
from .speaker_levenshtein import _assign, _coord, kappa
from .writer_eval import run as eval_run
from .writer_eval import write_network

#: teachers sharing less of their words with the chat wrote in another language
MIN_TEACHER_OVERLAP = 0.5
L2_GRID = (0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
THRESHOLDS = tuple(round(x, 3) for x in np.arange(0.05, 0.61, 0.025))


def fit_half(nets: list[Network], half: str = "a") -> list[Network]:
    """The networks of ``half`` (sorted by id, taken alternately, as the eval's ``halves``)."""
    ids = sorted(n.network_id for n in nets)
    part = set(ids[0::2] if half == "a" else ids[1::2])
    return [n for n in nets if n.network_id in part]


def matched_heads(pred: list[dict[str, Any]], ref: list[dict[str, Any]]) -> list[float]:
    """Per predicted head, the kappa of its partner under the metric's matching (0: none)."""
    out = [0.0] * len(pred)
    owners: dict[str, tuple[list[int], list[int]]] = {}
    for i, rec in enumerate(pred):
        owners.setdefault(_coord(rec.get("owner")), ([], []))[0].append(i)
    for j, rec in enumerate(ref):
        owners.setdefault(_coord(rec.get("owner")), ([], []))[1].append(j)
    for p, r in owners.values():
        w = np.array([[kappa(pred[i], ref[j]) for j in r] for i in p]).reshape(len(p), len(r))
        for a, b in _assign(w):
            out[p[a]] = float(w[a, b])
    return out


def auc(y: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve (ties count half); 0.5 when one class is missing."""
    pos, neg = score[y > 0], score[y <= 0]
    if len(pos) == 0 or len(neg) == 0:
        return 0.5
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def choose_l2(x: np.ndarray, y: np.ndarray, groups: list[str], grid=L2_GRID) -> tuple[float, dict]:
    """The L2 strength with the highest leave-one-network-out AUC (mean over the held-out
    networks) on the fit half: the selector is used as a ranking cut at a threshold, and a
    network's base rate (how many records its teacher wrote) is not what it should learn."""
    scores = {}
    for l2 in grid:
        aucs = []
        for g in sorted(set(groups)):
            test = np.array([n == g for n in groups])
            m = fit_logistic(x[~test], y[~test], l2)
            z = ((x[test] - m["mean"]) / np.asarray(m["scale"])) @ np.asarray(m["coef"])
            aucs.append(auc(y[test], z))
        scores[l2] = round(float(np.mean(aucs)), 5)
    return max(scores, key=lambda k: (scores[k], k)), scores


def collect(nets: list[Network]) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    """(feature rows, labels, row info) of every candidate that became a head."""
    from speakerflow.ops.writer.rules import RulesWriter

    xs, ys, info = [], [], []
    for net in nets:
        writer = RulesWriter(select=False)
        rows: list[Any] = []
        writer.__dict__["_collect"] = rows  # the Writer hands every candidate's row here
        state, _ = write_network(net, writer)
        ref = net.reference_states()[-1].heads()
        heads = state.heads()
        k = matched_heads(heads, ref)
        label = {
            (h["owner"], h["layer"], h["content"].strip()): v for h, v in zip(heads, k, strict=True)
        }
        for _, _, act, row in rows:
            key = (act["owner"], act["layer"], act["content"].strip())
            if key in label:  # a head as written (not superseded, not refused)
                xs.append(row)
                ys.append(float(label[key] > 0))
                info.append(
                    {"network": net.network_id, "content": act["content"], "kappa": label[key]}
                )
    return np.array(xs), np.array(ys), info


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 50) -> dict[str, Any]:
    """L2 logistic regression on standardised columns (Newton / IRLS); the intercept is
    not penalised."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    pen = np.full(z.shape[1], l2)
    pen[-1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        grad = z.T @ (p - y) + pen * w
        hess = (z * (p * (1 - p))[:, None]).T @ z + np.diag(pen) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    # rounded, so a refit writes the same file (the last digits vary with the BLAS)
    return {
        "mean": np.round(mean, 6).tolist(),
        "scale": np.round(scale, 6).tolist(),
        "coef": np.round(w[:-1], 6).tolist(),
        "intercept": round(float(w[-1]), 6),
    }


def spec_of(model: dict[str, Any], threshold: float, fit: dict[str, Any]) -> dict[str, Any]:
    from speakerflow.ops.writer.salience import FEATURES

    return {"features": list(FEATURES), **model, "threshold": threshold, "fit": fit}


def calibrate(
    data: str | Path, spec: dict[str, Any], nets: list[str], thresholds=THRESHOLDS
) -> tuple[float, list[dict[str, float]]]:
    """The threshold with the highest micro F over ``nets`` (ties: the lower threshold)."""
    curve = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "w.json"
        path.write_text(json.dumps(spec))
        for t in thresholds:
            rep = _eval(data, nets, select=True, select_threshold=t, select_weights=str(path))
            curve.append({"threshold": t, "f": rep["f"], "n_pred": rep["n_pred"]})
    best = max(curve, key=lambda c: (round(c["f"], 6), -c["threshold"]))
    return best["threshold"], curve


def _eval(data: str | Path, nets: list[str], **config: Any) -> dict[str, Any]:
    """Micro F of the rules Writer over the networks ``nets`` of ``data``."""
    from speakerflow.ops.writer.rules import RulesWriter

    rep = eval_run(data, RulesWriter(**config), only=set(nets))
    return {"f": rep["speaker_levenshtein_f"], "n_pred": rep["records"]["pred"]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from speakerflow.ops.writer.salience import WEIGHTS_PATH

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default="../shared/data/socialmem/training")
    ap.add_argument("--out", default=str(WEIGHTS_PATH))
    ap.add_argument(
        "--l2",
        type=float,
        default=None,
        help="default: chosen by leave-one-network-out log loss on the fit half",
    )
    args = ap.parse_args(argv)
    nets = [n for n in load_networks(args.data) if n.has_teacher]
    half = fit_half(nets, "a")
    used = [n for n in half if (teacher_overlap(n) or 1.0) >= MIN_TEACHER_OVERLAP]
    x, y, info = collect(used)
    l2, cv = (args.l2, {}) if args.l2 is not None else choose_l2(x, y, [r["network"] for r in info])
    model = fit_logistic(x, y, l2)
    ids = [n.network_id for n in used]
    fit = {
        "networks": ids,
        "half": "a",
        "candidates": len(y),
        "positives": int(y.sum()),
        "l2": l2,
        "l2_cv_auc": {str(k): v for k, v in cv.items()},
        "label": "head finds a teacher partner (SpeakerLevenshtein matching)",
    }
    spec = spec_of(model, 0.5, fit)
    threshold, curve = calibrate(args.data, spec, [n.network_id for n in half])
    spec = spec_of(
        model, threshold, {**fit, "calibrated_on": [n.network_id for n in half], "curve": curve}
    )
    Path(args.out).write_text(json.dumps(spec, indent=1) + "\n")
    print(json.dumps({"out": args.out, "threshold": threshold, **fit}, indent=1))
    return spec


if __name__ == "__main__":
    main()

"""Fit the learned answer choice of :mod:`speakerflow.ops.query.answer_learned`.

Each record is one question: the feature rows of its best-scored sentences
(:func:`~speakerflow.ops.query.answer_learned.features`) and, per row, 1 when the sentence
comes from a message that holds the answer (the set's ``gold`` ids), else 0. The model is
listwise: a softmax over a question's sentences, trained to put its mass on the gold ones
(cross-entropy against the gold rows, L2 on the weights), features standardised on the
training rows. Questions without a gold row among the candidates teach nothing and are left
out. Plain torch, full batch, L-BFGS: a few hundred questions fit in seconds.
"""

from __future__ import annotations

from typing import Any

from speakerflow.ops.query.answer_learned import FEATURES


def usable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records with at least one gold and one other candidate."""
    return [r for r in records if any(r["labels"]) and not all(r["labels"])]


def fit(records: list[dict[str, Any]], l2: float = 0.01, steps: int = 200) -> dict[str, Any]:
    """Weights (``features``, ``mean``, ``scale``, ``coef``) fitted on ``records``."""
    import torch

    data = usable(records)
    if not data:
        raise ValueError("no question with a gold sentence among its candidates to fit on")
    rows = [x for r in data for x in r["rows"]]
    n = len(FEATURES)
    mean = [sum(x[j] for x in rows) / len(rows) for j in range(n)]
    scale = [(sum((x[j] - mean[j]) ** 2 for x in rows) / len(rows)) ** 0.5 or 1.0 for j in range(n)]
    xs = [
        torch.tensor(
            [[(v - m) / s for v, m, s in zip(x, mean, scale, strict=True)] for x in r["rows"]],
            dtype=torch.float32,
        )
        for r in data
    ]
    ys = [torch.tensor(r["labels"], dtype=torch.float32) for r in data]
    w = torch.zeros(n, requires_grad=True)
    opt = torch.optim.LBFGS([w], max_iter=steps, line_search_fn="strong_wolfe")

    def loss_fn():
        opt.zero_grad()
        loss = torch.zeros(())
        for x, y in zip(xs, ys, strict=True):
            logp = torch.log_softmax(x @ w, 0)
            loss = loss - torch.logsumexp(logp[y > 0], 0)
        loss = loss / len(xs) + l2 * (w * w).sum()
        loss.backward()
        return loss

    opt.step(loss_fn)
    return {
        "features": list(FEATURES),
        "mean": mean,
        "scale": scale,
        "coef": [float(c) for c in w.detach()],
        "questions": len(data),
        "l2": l2,
    }


def top_is_gold(records: list[dict[str, Any]], weights: dict[str, Any] | None) -> float:
    """Share of ``records`` whose chosen sentence is a gold one: by the weights, or (``None``)
    the first-ranked one (the scoring picker's best score, before its rules)."""
    from speakerflow.ops.query.answer_learned import best_index

    if not records:
        return 0.0
    hits = sum(
        r["labels"][0 if weights is None else best_index(r["rows"], weights)] > 0 for r in records
    )
    return hits / len(records)


def split(records: list[dict[str, Any]], key: str, held: set[str]):
    """(training, held-out) records by ``key`` (``set`` or ``data``, the conversation)."""
    return [r for r in records if r[key] not in held], [r for r in records if r[key] in held]

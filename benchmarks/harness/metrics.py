"""Scoring contexts against the generator's private truth, and the simulator quality formula.

* a line *states* the (slot, value) pairs of the events it cites; a knowledge line only those
  whose value it names (it may cite an event for one of several facts);
* gold hits: gold slots of the episode stated with their value current at query time;
* context precision = hits / max(1, retrieved lines) (header excluded);
* stale usage: 1 if any line states a value that held for its slot earlier but no longer does;
* traceability: share of retrieved lines whose every cited id resolves to a stored raw event
  (0 for an empty context: nothing to trace the decision to);
* quality (simulator-defined, the paper's appendix):
  ``clip(q_b + beta_r (r-1) + min(cap, coef * hits) - 0.02 missing - beta_s stale + N(0,
  0.018^2))``.
  Priors are ours (the paper does not publish them): q_b 0.45 without tools, 0.55 with tools;
  beta_r = 0, so any rise over rounds comes from measured hits and stale use.
"""

from __future__ import annotations

import random

HIT = {
    "InKH": (0.028, 0.16),
    "KH-NoInv": (0.028, 0.16),
    "WikiWalk": (0.024, 0.13),
    "SimpleMemory": (0.022, 0.12),
    "ToolAgent": (0.022, 0.12),
    "ModelOnly": (0.022, 0.12),
}
STALE = {"InKH": 0.04}
PRIOR = {"ModelOnly": 0.45}
SIGMA = 0.018


def score(name, lines, truth, qid, at, stored: set[str]) -> dict:
    gold = truth.gold[qid]
    items = [ln for ln in lines if ln.kind != "header"]
    said = set()
    for ln in items:
        for mid in ln.evidence_ids:
            for slot, value in truth.statements.get(mid, ()):
                if ln.kind != "knowledge" or value in ln.text:
                    said.add((slot, value))
    hits = sum(1 for g in gold if (g, truth.value(g, at)) in said)
    stale = int(any(truth.outdated(slot, value, at) for slot, value in said))
    trace = (
        sum(1 for ln in items if ln.evidence_ids and all(m in stored for m in ln.evidence_ids))
        / len(items)
        if items
        else 0.0
    )
    return {
        "hits": hits,
        "missing": len(gold) - hits,
        "stale": stale,
        "precision": hits / max(1, len(items)),
        "traceability": trace,
        "items": len(items),
    }


def quality(name: str, rnd: int, s: dict, rng: random.Random) -> float:
    coef, cap = HIT[name]
    q = (
        PRIOR.get(name, 0.55)
        + min(cap, coef * s["hits"])
        - 0.02 * s["missing"]
        - STALE.get(name, 0.11) * s["stale"]
        + rng.gauss(0.0, SIGMA)
    )
    return min(1.0, max(0.0, q))


def modelled_latency_ms(tokens: int, steps: int) -> float:
    """Modelled model latency (no model runs): 450 ms per model/tool step + 0.12 ms per context
    token."""
    return 450.0 * steps + 0.12 * tokens

"""The harness's held-out phrasings are the frozen round-3 templates (issue 25), and its
headline compares measured figures."""

import hashlib
import re
from pathlib import Path

import pytest

from speakerflow.benchmarks.harness.generator import HOLDOUT_FILE, STATE, Generator, load_holdout

ROOT = Path(__file__).resolve().parents[2]
FROZEN = ROOT / "tests" / "data" / "inkh_heldout" / "harness_phrasings.json"


def test_the_packaged_copy_is_the_frozen_file():
    readme = (FROZEN.parent / "README.md").read_text("utf-8")
    pinned = re.search(r"`harness_phrasings\.json` \|[^|]*\| `([0-9a-f]{64})`", readme).group(1)
    for path in (FROZEN, HOLDOUT_FILE):
        assert hashlib.sha256(path.read_bytes()).hexdigest() == pinned, path
    assert set(load_holdout()) == set(STATE)  # every stated relation has held-out wordings


def _matches(text: str, template: str) -> bool:
    parts = [re.escape(p) for p in re.split(r"\{\w\}", template)]
    return re.fullmatch(".+?".join(parts) + r"\.?", text) is not None


def test_holdout_one_states_every_fact_in_a_held_out_template():
    gen = Generator(3, rounds=3, episodes=12, holdout=1.0)
    templates = [t for ts in load_holdout().values() for t in ts]
    stated = [
        e["text"]
        for _, batch in gen.stream()
        for ep in batch
        for e in ep.events
        if gen.truth.statements[e["msg_id"]] and e["msg_id"] not in gen.truth.rumours
    ]
    assert len(stated) > 20
    assert all(any(_matches(t, tpl) for tpl in templates) for t in stated)


def test_headline_says_where_inkh_leads_ties_and_trails():
    from speakerflow.benchmarks.harness import NAMES, headline

    def rep(hits, stale, tokens, q_eq, q_paper):
        return {
            "hits": hits,
            "gold": 3.0,
            "stale_usage": stale,
            "rumour_use": 0.0,
            "context_precision": 0.4,
            "traceability": 1.0,
            "tokens": tokens,
            "retrieval_latency_ms": {"p50": 1.0, "p95": 2.0},
            "quality_equal": q_eq,
            "quality_paper": q_paper,
            "wilcoxon_p_vs_InKH": {"hits": 0.0078},
        }

    report = {
        n: rep(h, s, t, qe, qp)
        for n, h, s, t, qe, qp in zip(
            NAMES,
            (2.0, 2.2, 1.5, 1.0, 0.5, 0.0),  # KH-NoInv has more hits than InKH
            (0.0, 0.4, 0.5, 0.2, 0.0, 0.0),
            (170, 200, 1200, 680, 54, 29),
            (0.58, 0.55, 0.52, 0.53, 0.52, 0.50),
            (0.62, 0.57, 0.55, 0.55, 0.53, 0.39),
            strict=True,
        )
    }
    report |= {"meta": {"holdout": 1.0, "seeds": 8}, "inventory": {"extraction_recall": 0.96}}
    h = headline(report)
    every, memory = h["vs_all"], h["vs_memory"]
    hits = every["measured"]["hits"]
    assert hits["inkh"] == "trails" and hits["best_other"] == "KH-NoInv"
    assert hits["difference"] == -0.2 and hits["wilcoxon_p"] == 0.0078
    assert every["measured"]["tokens"]["best_other"] == "ModelOnly"  # fewest tokens is best
    assert "stale_usage" in every["ties"] and "traceability" in every["ties"]
    assert "context_precision" in every["ties"] and "hits" in every["trails"]
    # against the baselines with memory only, InKH's stale 0.0 beats SimpleMemory's 0.2
    assert memory["baselines"] == ["KH-NoInv", "WikiWalk", "SimpleMemory"]
    assert "stale_usage" in memory["leads"] and "tokens" in memory["leads"]
    assert h["quality_equal"]["best_other"] == "KH-NoInv"
    assert h["quality_equal"]["difference"] == 0.03
    assert h["quality_paper"]["difference"] == 0.05


def test_equal_quality_uses_one_formula_for_every_baseline():
    import random

    from speakerflow.benchmarks.harness.metrics import paper_quality, quality

    s = {"hits": 3, "missing": 1, "stale": 0}
    assert quality(s) == pytest.approx(0.55 + 0.066 - 0.02)
    assert quality(s | {"stale": 1}) == pytest.approx(0.55 + 0.066 - 0.02 - 0.11)
    gap = paper_quality("InKH", s, random.Random(0)) - paper_quality(
        "SimpleMemory", s, random.Random(0)
    )
    assert round(gap, 4) == 0.018  # what the paper's coefficients alone give InKH

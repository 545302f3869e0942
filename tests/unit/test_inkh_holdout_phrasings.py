"""The benchmark's held-out phrasings are outside the reader's phrase lists (issue 11)."""

import re

from speakerflow.benchmarks.harness.generator import HOLDOUT, STATE
from speakerflow.ops.knowledge.lexicon import RELATIONS


def test_no_held_out_template_uses_a_relation_phrase():
    phrases = [p for r in RELATIONS for p in r.phrases]
    for rel, templates in HOLDOUT.items():
        for t in templates.split("|"):
            text = re.sub(r"\{\w+\}", " ", t)
            used = [
                p for p in phrases if re.search(r"\b" + re.escape(p) + r"\b", text, re.IGNORECASE)
            ]
            assert not used, (rel, t, used)
    assert set(HOLDOUT) == set(STATE)  # every stated relation has held-out wordings


def test_headline_names_the_best_other_baseline_and_the_lead():
    from speakerflow.benchmarks.harness import NAMES, headline

    rep = {
        n: {"quality": q, "stale_usage": 0.0, "context_precision": 0.5}
        for n, q in zip(NAMES, (0.62, 0.57, 0.55, 0.58, 0.53, 0.39), strict=True)
    }
    rep |= {"meta": {"holdout": 1.0, "seeds": 8}, "inventory": {"extraction_recall": 0.96}}
    h = headline(rep)
    assert (
        h["best_other"] == "SimpleMemory"
        and h["quality_lead"] == 0.04
        and h["extraction_recall"] == 0.96
    )

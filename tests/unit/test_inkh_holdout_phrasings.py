"""The benchmark's held-out phrasings are outside the reader's phrase lists (issue 11)."""
import re

from speakerflow.benchmarks.harness.generator import HOLDOUT, STATE
from speakerflow.ops.lexicon import RELATIONS


def test_no_held_out_template_uses_a_relation_phrase():
    phrases = [p for r in RELATIONS for p in r.phrases]
    for rel, templates in HOLDOUT.items():
        for t in templates.split("|"):
            text = re.sub(r"\{\w+\}", " ", t)
            used = [p for p in phrases if re.search(r"\b" + re.escape(p) + r"\b", text, re.IGNORECASE)]
            assert not used, (rel, t, used)
    assert set(HOLDOUT) == set(STATE)  # every stated relation has held-out wordings

"""The general reader's pieces (ops/knowledge/reader.py, values.py) on sentences written for
this test."""

from speakerflow.ops.knowledge.reader import PrototypeClassifier, clauses, mask
from speakerflow.ops.knowledge.values import categories, negated_near, percents, pick
from speakerflow.ops.text.embed import HashingEmbedder


def test_clauses_split_at_ends_semicolons_and_contrasts():
    assert clauses("Desk is quiet; LINK book got thin. Nothing else, but SOL is choppy") == [
        "Desk is quiet",
        "LINK book got thin.",
        "Nothing else",
        "SOL is choppy",
    ]


def test_values_are_read_by_their_own_left_context_not_by_order():
    got = [(v.value, v.role) for v in percents("taker went from 0.10 % to 0.07% (was 0.1 pct)")]
    assert got == [("0.1%", "old"), ("0.07%", "new"), ("0.1%", "old")]
    assert pick(percents("now 0.07%, previously 0.1%")).value == "0.07%"
    assert pick(percents("previously 0.1%, now 0.07%")).value == "0.07%"
    assert [(v.value, v.role) for v in percents("typo, it's 0.02% not 0.2%")] == [
        ("0.02%", "new"),
        ("0.2%", "negated"),
    ]


def test_negation_is_scoped_and_a_bound_is_not_a_negation():
    text = "I'm not into memecoins, cautious by nature"
    (v,) = categories(text, "risk_preference")
    assert (v.value, v.role) == ("conservative", "plain")
    assert categories("DOT book is not deep", "liquidity")[0].role == "negated"
    assert not negated_near("no more than 4% per trade", 13)
    assert [(v.value, v.role) for v in percents("no more than 4% per trade")] == [("4%", "plain")]


def test_mask_and_prototype_classifier_memoise_by_masked_text():
    assert (
        mask("@kite_runner: 55% wins on BTC", [(0, 12, "trader"), (26, 29, "asset")])
        == "the trader: n% wins on the coin"
    )
    emb = HashingEmbedder(64)
    clf = PrototypeClassifier({"a": ("alpha beta",), "b": ("gamma delta",)}, emb)
    assert clf.best("alpha beta")[0] == "a"
    clf.scores("alpha beta")
    assert clf.encoded == 1 and set(clf.scores("gamma", ("b",))) == {"b"}

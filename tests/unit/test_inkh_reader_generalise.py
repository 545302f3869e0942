"""The reader's issue-11 generalisation steps on sentences written for this test (none is in
the paraphrase set or the benchmark generator): exemplar (k-NN) classification, cue words
read outside entity names and relation phrases, bare trader names, percentages without a
phrase of their own, entity-type-constrained request intents, and the injector's warm-up."""

from datetime import UTC, datetime

import numpy as np

from speakerflow.graphs.facts import FactGraph
from speakerflow.ops.inject import PassiveInjector
from speakerflow.ops.knowledge.canonicalize import Canonicalizer
from speakerflow.ops.knowledge.detect import Detector, is_word
from speakerflow.ops.knowledge.extract_knowledge import Event, KnowledgeExtractor
from speakerflow.ops.knowledge.reader import ExemplarClassifier, intent_classifier
from speakerflow.ops.text.embed import HashingEmbedder
from speakerflow.ops.text.people import PersonResolver

T0 = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
ROSTER = ["ana", "bo", "cy"]


def _parts():
    canon = Canonicalizer(group_id="g")
    det = Detector(canon.lexicon, canon.alias_table, people=PersonResolver(ROSTER))
    return canon, det


def test_exemplar_classifier_scores_a_label_by_its_nearest_exemplars_after_centring():
    emb = HashingEmbedder(256)
    clf = ExemplarClassifier(
        {
            "buy": ("purchase tokens now", "acquire tokens quickly", "order more tokens"),
            "chat": ("hello there friend", "thanks a lot friend"),
        },
        emb,
        k=1,
    )
    assert clf.best("purchase tokens now please")[0] == "buy"
    assert clf.best("thanks friend")[0] == "chat"
    # one far-off exemplar does not drag a label down when k=1 (no averaged centroid)
    sc = clf.scores("acquire tokens quickly")
    assert sc["buy"] > sc["chat"]
    m = clf._protos()
    assert np.allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)  # centred rows re-normalised
    assert set(clf.scores("x", ("chat",))) == {"chat"}


def test_cue_words_inside_entity_names_and_relation_phrases_do_not_decide_the_intent():
    _, det = _parts()
    assert (
        det.detect("has @uptrend_ursula been halted?").intent != "market_analysis"
    )  # "trend" is in the name
    assert (
        det.detect("is hodl_harry any good for me?").intent != "trade_preparation"
    )  # "hodl_harry" is no order
    d = det.detect("remind me of my max size")
    assert (
        d.intent != "trade_preparation" and "max_position" in d.aspects
    )  # "size" belongs to "max size"
    assert (
        det.detect("how is my book holding up").intent == "portfolio_review"
    )  # a cue around a phrase counts


def test_a_bare_name_in_a_subjects_place_is_a_trader_only_if_it_is_no_english_word():
    _, det = _parts()
    got = [
        (m.surface, m.etype)
        for m in det.detect("zebracorn has a 14% drawdown on the year").mentions
    ]
    assert ("zebracorn", "trader") in got
    got = [
        (m.surface, m.etype)
        for m in det.detect("weigh quokkaquant and zebracorn, who should I follow").mentions
    ]
    assert ("quokkaquant", "trader") in got and ("zebracorn", "trader") in got
    assert not [
        m
        for m in det.detect("market has a 14% drawdown on the year").mentions
        if m.etype == "trader"
    ]
    assert not [
        m for m in det.detect("drawdown was 14% on the year").mentions if m.etype == "trader"
    ]
    assert is_word("hedging") and is_word("liquidations") and not is_word("zebracorn")


def test_each_percentage_without_its_own_phrase_is_read_by_its_segment():
    canon, det = _parts()
    x = KnowledgeExtractor(canon, det)
    got = {
        (c.subject_id, c.relation, c.value)
        for c in x.extract(
            Event(
                "e1",
                "@kelp_knight update: 47% of closed trades in profit, worst peak-to-trough slide "
                "-23%",
                "copy_feed",
                T0,
                "tool_observation",
                1,
            )
        )
    }
    assert ("trader:kelpknight", "win_rate", "47%") in got
    assert ("trader:kelpknight", "max_drawdown", "23%") in got  # a drawdown is a magnitude
    got = x.extract(
        Event(
            "e2",
            "@kelp_knight copying was switched off by the platform",
            "copy_feed",
            T0,
            "tool_observation",
            1,
        )
    )
    assert [(c.relation, c.value) for c in got] == [("status", "paused")]


def test_request_intent_from_exemplars_within_the_named_entity_types():
    canon, det = _parts()
    inj = PassiveInjector(FactGraph(None, "g"), canon, det)
    assert inj.warm() >= 0.0
    d, ents = inj.read_request("time to scoop up some ADA?")
    assert ents == ["asset:ADA"] and d.intent in ("trade_preparation", "market_analysis")
    d, _ = inj.read_request("what do you make of @kelp_knight lately")
    assert (
        d.intent == "copy_trading_evaluation"
    )  # a trader is named: only a family about traders fits
    d, _ = inj.read_request("cheers, appreciated")
    assert d.intent == "other"
    assert intent_classifier() is inj.intents  # one process-wide classifier (one MiniLM, one memo)

"""Alias canonicalisation: one entity per asset/trader, merges recorded, never silent."""

from speakerflow.ops.knowledge.canonicalize import Canonicalizer
from speakerflow.ops.knowledge.detect import Detector


def test_bitcoin_aliases_collapse_to_one_asset():
    c = Canonicalizer()
    ids = {
        c.resolve_surface(s, "asset")
        for s in ("BTC", "Bitcoin", "XBT", "BTCUSDT", "BTC-USD", "btc/usdt")
    }
    assert ids == {"asset:BTC"}
    assert c.resolve_surface("ETHUSDT", "asset") == "asset:ETH" != c.resolve_surface("SOL", "asset")


def test_alias_merges_are_logged_with_method():
    c = Canonicalizer()
    c.resolve_surface("BTC", "asset")
    c.resolve_surface("BTCUSDT", "asset")
    assert c.resolve_surface("Bitcoinn", "unknown") == "asset:BTC"  # typo: fuzzy
    methods = {m["surface"]: m["method"] for m in c.merge_log}
    assert methods["BTCUSDT"] == "reference" and methods["Bitcoinn"] == "fuzzy"
    assert all(m["entity_id"] == "asset:BTC" for m in c.merge_log)


def test_unrelated_words_do_not_fuzzy_merge():
    c = Canonicalizer()
    c.resolve_surface("Bitcoin", "asset")
    assert c.resolve_surface("Should", "unknown") is None
    assert c.resolve_surface("Bitter", "unknown") is None


def test_trader_handles_and_spellings_detected_as_one():
    c = Canonicalizer()
    d = Detector(c.lexicon, c.alias_table)
    first = [c.resolve(m) for m in d.detect("@alpha_whale win rate 60%").mentions]
    later = [
        c.resolve(m) for m in d.detect("Copy AlphaWhale or alpha whale?").mentions if c.resolve(m)
    ]
    assert first == ["trader:alphawhale"] and set(later) == {"trader:alphawhale"}


def test_model_fallback_is_asked_and_logged():
    asked = []

    def model(surface, etype, cands):
        asked.append((surface, etype))
        return "trader:alphawhale"

    c = Canonicalizer(model=model)
    c.resolve_surface("@alpha_whale", "trader")
    assert c.resolve_surface("@the_whale_guy", "trader") == "trader:alphawhale"
    assert asked == [("@the_whale_guy", "trader")] and c.merge_log[-1]["method"] == "model"


def test_roster_aliases_resolve_people():
    from datetime import UTC, datetime

    from speakerflow.ops.knowledge.extract_knowledge import Event, KnowledgeExtractor
    from speakerflow.ops.text.people import PersonResolver

    c = Canonicalizer()
    d = Detector(
        c.lexicon,
        c.alias_table,
        people=PersonResolver(["Ana Ruiz", "Mum"], aliases={"Ana Ruiz": ["Annie"]}),
    )
    x = KnowledgeExtractor(c, d)
    ev = Event(
        "m1",
        "Annie's risk tolerance is aggressive. Mom keeps her position size under 1%.",
        "desk",
        datetime(2026, 1, 1, tzinfo=UTC),
        "message",
        1,
    )
    got = [(k.subject_id, k.relation, k.value, k.scope) for k in x.extract(ev)]
    assert got == [
        ("person:Ana Ruiz", "risk_preference", "aggressive", "user:Ana Ruiz"),
        ("person:Mum", "max_position", "1%", "user:Mum"),
    ]

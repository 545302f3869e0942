"""Extraction: the rules backend reads values from clauses; the chat backend is validated."""

import json
from datetime import UTC, datetime

from speakerflow.ops.backends.base import ScriptedChat
from speakerflow.ops.knowledge.canonicalize import Canonicalizer
from speakerflow.ops.knowledge.detect import Detector
from speakerflow.ops.knowledge.extract_knowledge import Event, KnowledgeExtractor

T = datetime(2026, 3, 1, tzinfo=UTC)


def _x(backend="rules"):
    c = Canonicalizer()
    return KnowledgeExtractor(c, Detector(c.lexicon, c.alias_table), backend)


def facts(x, text, speaker="feed", stype="market_update", tier=1):
    return [
        (k.subject_id, k.relation, k.value, k.scope)
        for k in x.extract(Event("m1", text, speaker, T, stype, tier))
    ]


def test_rules_read_values_changes_and_first_person():
    x = _x()
    assert facts(x, "BREAKING: XBT taker fee changed from 0.10% to 0.12%.") == [
        ("asset:BTC", "fee", "0.12%", "shared")
    ]
    assert facts(x, "Regime shift: Ethereum flipped from in a downtrend to volatile.") == [
        ("asset:ETH", "regime", "volatile", "shared")
    ]
    assert facts(
        x, "I'm cautious these days. Keep my position size under 2%.", "ana", "user_turn"
    ) == [
        ("person:ana", "risk_preference", "conservative", "user:ana"),
        ("person:ana", "max_position", "2%", "user:ana"),
    ]
    assert facts(x, "Is the BTC fee still 0.1%?") == []  # questions assert nothing
    assert facts(x, "gm everyone, BTC to the moon") == []


def test_hedged_hearsay_gets_low_confidence():
    x = _x()
    (k,) = x.extract(
        Event(
            "m1",
            "Heard a rumour the BTC trading fee might drop to 0%.",
            "forum",
            T,
            "tool_observation",
            3,
        )
    )
    assert k.confidence == 0.3


def test_chat_backend_rows_validated_and_rejected_with_reasons():
    reply = json.dumps(
        [
            {"subject": "XBT", "relation": "fee", "value": "0.12%"},
            {"subject": "XBT", "relation": "moon_factor", "value": "9"},
            {"subject": "XBT", "relation": "fee", "value": "0.5%"},  # not in the text
            {"subject": "XBT", "relation": "regime"},
        ]
    )
    chat = ScriptedChat(["```json\n" + reply + "\n```", "not json"])
    x = _x(chat)
    got = facts(x, "XBT taker fee is 0.12% today.")
    assert got == [("asset:BTC", "fee", "0.12%", "shared")]
    reasons = [r["reason"] for r in x.rejects]
    assert (
        any("moon_factor" in r for r in reasons)
        and any("ungrounded" in r for r in reasons)
        and len(reasons) == 3
    )
    assert facts(x, "whatever") == [] and "JSON" in x.rejects[-1]["reason"]
    assert x.model_calls == 2 and len(chat.calls) == 2


def test_rules_generalise_to_unseen_phrasings():
    x = _x()
    cases = {
        "Solana has turned bearish after the unlock.": [
            ("asset:SOL", "regime", "bearish", "shared")
        ],
        "Fees on ETH-USD perps now stand at 0.05%.": [("asset:ETH", "fee", "0.05%", "shared")],
        "The book on Cardano is really thin right now.": [
            ("asset:ADA", "liquidity", "thin", "shared")
        ],
        "@quant_kim's win rate dropped to 38% this month.": [
            ("trader:quantkim", "win_rate", "38%", "shared")
        ],
        "Avalanche remains range-bound.": [("asset:AVAX", "regime", "ranging", "shared")],
        "Ethereum is exposed to depeg risk via stETH.": [
            ("asset:ETH", "exposed_to", "risk:depeg", "shared")
        ],
        "Copying @quant_kim is halted.": [("trader:quantkim", "status", "paused", "shared")],
    }
    for text, want in cases.items():
        assert facts(x, text) == want, text


def test_operators_compose_detect_canonicalize_and_extract():
    import pyarrow as pa

    from speakerflow.ops.core.base import Context
    from speakerflow.ops.knowledge.canonicalize import Canonicalize
    from speakerflow.ops.knowledge.detect import Detect
    from speakerflow.ops.knowledge.extract_knowledge import ExtractKnowledge

    msgs = pa.table(
        {
            "msg_id": ["a", "b"],
            "speaker": ["feed", "ana"],
            "ts": [T, T],
            "text": ["XBT taker fee is 0.1%.", "I'm cautious; Bitcoin regime is bearish."],
            "source_type": ["market_update", "user_turn"],
            "trust_tier": [1, 1],
        }
    )
    ids = (Detect() >> Canonicalize())(msgs, Context())
    assert ids["entity_ids"].to_pylist() == [["asset:BTC"], ["asset:BTC"]]
    op = ExtractKnowledge()
    out = op(msgs, Context())
    assert [(r["subject_id"], r["relation"], r["value"]) for r in out.to_pylist()] == [
        ("asset:BTC", "fee", "0.1%"),
        ("person:ana", "risk_preference", "conservative"),
        ("asset:BTC", "regime", "bearish"),
    ]
    assert op.stats.rows_out == 3

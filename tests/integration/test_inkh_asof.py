"""Issue 11 defect 1: as-of injection on a real store (Parquet + Kuzu).

A desk stream written for this test (changes, a rumour, a correction, an ending) is ingested
whole into one store and event by event into another. Injecting into the first at 20 past
times must give exactly the contexts the second gives when it has seen only the events up
to that time; no line may rest on a fact valid after that time or cite a later event."""

import json
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from speakerflow.cli import main
from speakerflow.ops.inject import InjectConfig, PassiveInjector
from speakerflow.pipelines.entity_path import build_entity_graph, load_knowledge
from speakerflow.schemas import MESSAGE_SCHEMA

T0 = datetime(2026, 5, 4, 7, 30, tzinfo=UTC)
# (hours after T0, source, source_type, trust, text)
STREAM = [
    (0, "venue_api", "tool_observation", 1, "Venue API: BTC taker fee sits at 0.08%."),
    (1, "desk_feed", "market_update", 1, "Desk feed: ETH drifting sideways, no real direction."),
    (2, "ana", "user_turn", 1, "For the record I'm a cautious trader."),
    (3, "copy_bot", "tool_observation", 1, "@gridqueen closes 58% of trades green."),
    (5, "copy_bot", "tool_observation", 1, "Copy platform: @gridqueen is live for followers."),
    (
        8,
        "forum_scraper",
        "tool_observation",
        3,
        "Forum gossip: ETH about to turn bullish, trust me.",
    ),
    (12, "ana", "user_turn", 1, "Keep each of my positions below 3% of the account."),
    (20, "venue_api", "tool_observation", 1, "Venue API: BTC order book looks thin overnight."),
    (26, "desk_feed", "market_update", 1, "Desk feed: ETH is now firmly in a downtrend."),
    (30, "risk_desk", "risk_signal", 1, "ETH is exposed to depeg risk via the staked collateral."),
    (
        33,
        "venue_api",
        "tool_observation",
        1,
        "Venue API: BTC taker fee went to 0.06% for our tier.",
    ),
    (40, "carl", "user_turn", 1, "Heads up, BTC trading fee moved to 0.5% this morning."),
    (41, "carl", "user_turn", 1, "typo above, it's 0.05% not 0.5%"),
    (
        50,
        "copy_bot",
        "tool_observation",
        1,
        "Copy platform notice: @gridqueen copying is now halted.",
    ),
    (55, "ana", "user_turn", 1, "Actually I'm fine with aggressive bets now."),
    (60, "risk_desk", "risk_signal", 1, "Good news, the depeg scare on ETH is behind us."),
    (66, "venue_api", "tool_observation", 1, "Venue API: BTC order book is deep again."),
    (70, "copy_bot", "tool_observation", 1, "@gridqueen closes 49% of trades green."),
    (75, "desk_feed", "market_update", 1, "Desk feed: ETH back to sideways chop."),
    (
        80,
        "copy_bot",
        "tool_observation",
        1,
        "Copy platform: @gridqueen is live for followers again.",
    ),
]
REQUESTS = [
    ("ana", "Buy some BTC for me, what will it cost?"),
    ("ana", "Market read on ETH please."),
    ("ana", "Should I mirror @gridqueen?"),
    ("carl", "BTC fees and book depth?"),
]


def rows(events, group="desk"):
    return [
        {
            "msg_id": f"s{i:02d}",
            "group_id": group,
            "session_id": "s",
            "turn": i,
            "ts": T0 + timedelta(hours=h),
            "speaker": src,
            "text": text,
            "reply_to": None,
            "source_type": st,
            "source_ref": f"{st}:s{i:02d}",
            "trust_tier": tier,
        }
        for i, (h, src, st, tier, text) in events
    ]


def inject(store, text, at, user):
    fg, canon, det = load_knowledge(store)
    inj = PassiveInjector(fg, canon, det, config=InjectConfig(record_use=False))
    return inj.inject(text, at, user)


def test_inject_at_past_times_equals_ingesting_in_time_order(home):
    whole = home.open("whole", writable=True)
    step = home.open("step", writable=True)
    indexed = list(enumerate(STREAM))
    whole.append_messages(pa.Table.from_pylist(rows(indexed, "whole"), schema=MESSAGE_SCHEMA))
    build_entity_graph(whole)
    ts = {f"s{i:02d}": T0 + timedelta(hours=h) for i, (h, *_rest) in indexed}
    times = [
        T0 + timedelta(hours=h, minutes=30) for h, *_ in STREAM
    ]  # 20 times, one after each event
    assert len(times) == 20
    fed = 0
    compared = 0
    for n, at in enumerate(times):
        new = [(i, e) for i, e in indexed[fed:] if T0 + timedelta(hours=e[0]) <= at]
        if new:
            step.append_messages(pa.Table.from_pylist(rows(new, "step"), schema=MESSAGE_SCHEMA))
            build_entity_graph(step)
            fed += len(new)
        user, text = REQUESTS[n % len(REQUESTS)]
        a = inject(whole, text, at, user)
        b = inject(step, text, at, user)
        assert a.text() == b.text(), (at, a.text(), b.text())
        for ln in a.lines:
            assert all(ts[m] <= at for m in ln.evidence_ids), (at, ln.text)
            assert ln.valid_at is None or ln.valid_at <= at, (at, ln.text)
        compared += 1
    assert compared == 20
    whole.close()
    step.close()


def test_cli_inject_with_ts_sees_the_world_as_of_ts(home, capsys):
    s = home.open("desk", writable=True)
    s.append_messages(pa.Table.from_pylist(rows(list(enumerate(STREAM))), schema=MESSAGE_SCHEMA))
    build_entity_graph(s)
    s.close()
    early = (T0 + timedelta(hours=4)).isoformat()
    assert (
        main(
            [
                "inject",
                "desk",
                "--event",
                json.dumps({"content": "BTC fees? ETH trend?", "ts": early}),
                "--user",
                "ana",
                "--json",
                "--home",
                str(home.root),
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    text = "\n".join(ln["text"] for ln in out["lines"])
    assert "0.08%" in text and "0.06%" not in text and "0.05%" not in text
    assert (
        "ETH ranging" in out["lines"][0]["text"] and "bearish" not in text and "bullish" not in text
    )
    late = (T0 + timedelta(hours=90)).isoformat()
    assert (
        main(
            [
                "inject",
                "desk",
                "--event",
                json.dumps({"content": "BTC fees? ETH trend?", "ts": late}),
                "--user",
                "ana",
                "--json",
                "--home",
                str(home.root),
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    text = "\n".join(ln["text"] for ln in out["lines"])
    assert "0.05%" in text and "0.08%" not in text and "0.5%" not in text

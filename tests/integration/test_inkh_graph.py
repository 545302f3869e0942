"""The knowledge harness on a real store: Kuzu facts with provenance, invalidation, wiki, tick,
CLI."""

import json
import random
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from speakerflow.cli import main
from speakerflow.graphs.facts import FactGraph
from speakerflow.ops.knowledge.maintenance import tick
from speakerflow.ops.knowledge.wiki import write_wiki
from speakerflow.pipelines.entity_path import build_entity_graph
from speakerflow.schemas import MESSAGE_SCHEMA

T = datetime(2026, 2, 1, tzinfo=UTC)
EVENTS = [
    ("e1", "exchange_api", "tool_observation", "Exchange API: taker fee for BTCUSDT is 0.10%."),
    (
        "e2",
        "exchange_api",
        "tool_observation",
        "Order book depth on XBT is deep; ETH liquidity looks thin today.",
    ),
    ("e3", "ana", "user_turn", "I'm conservative these days, keep my position size under 2%."),
    ("e4", "news", "market_update", "BREAKING: Bitcoin taker fee changed from 0.10% to 0.12%."),
]


@pytest.fixture()
def store(home):
    s = home.open("desk", writable=True)
    rows = [
        {
            "msg_id": m,
            "group_id": "desk",
            "session_id": "s",
            "turn": i,
            "ts": T + timedelta(hours=i),
            "speaker": sp,
            "text": tx,
            "reply_to": None,
            "source_type": st,
            "source_ref": f"{st}:{m}",
            "trust_tier": 1,
        }
        for i, (m, sp, st, tx) in enumerate(EVENTS)
    ]
    s.append_messages(pa.Table.from_pylist(rows, schema=MESSAGE_SCHEMA))
    yield s
    s.close()


def test_entity_path_writes_bitemporal_facts_with_provenance(store):
    stats = build_entity_graph(store)
    assert stats["invalidated"] == 1 and stats["added"] == 6
    assert build_entity_graph(store)["events"] == 0  # idempotent rerun
    fg = FactGraph(store.graph, "desk").load()
    fees = sorted((k for k in fg.items.values() if k.relation == "fee"), key=lambda k: k.valid_at)
    assert [k.value for k in fees] == ["0.1%", "0.12%"]
    assert fees[0].invalid_at == T + timedelta(hours=3) and fees[0].expired_at is not None
    assert fees[0].superseded_by == fees[1].edge_id and fees[1].invalid_at is None
    assert [r["msg_id"] for r in fg.provenance(fees[0].edge_id)] == ["e1"]
    assert sorted(fg.neighbourhood_kuzu(["asset:BTC"])) == sorted(
        k.edge_id for k in fg.neighbourhood(["asset:BTC"], 1)
    )
    ent = fg.entities["asset:BTC"]
    assert {"BTCUSDT", "XBT", "Bitcoin"} <= set(ent.aliases)
    assert (store.root / "merge_log.jsonl").read_text().count("asset:BTC") >= 1


def test_wiki_and_maintenance(store, tmp_path):
    build_entity_graph(store)
    report = tick(store, now=T + timedelta(days=400), seed=1)
    assert report["fixes_applied"] > 0 and report["probes_run"][0] == "stale_sweep"
    assert (store.root / "maintenance_log.jsonl").exists() and (
        store.root / "review_queue.jsonl"
    ).exists()
    paths = write_wiki(store, tmp_path / "wiki")
    btc = (tmp_path / "wiki" / "asset--BTC.md").read_text()
    assert "0.12%" in btc and "invalid since 2026-02-01 03:00" in btc and "superseded by" in btc
    index = paths[0].read_text()
    assert 'id="raw-e1"' in index and "Maintenance log" in index
    assert (tmp_path / "wiki" / "person--ana.md").exists()


def test_cli_inject_prints_cited_context_within_budget(store, home, capsys):
    build_entity_graph(store)
    store.close()
    event = json.dumps(
        {
            "content": "Prepare an order to buy XBT: fees and liquidity?",
            "ts": "2026-02-02T00:00:00+00:00",
        }
    )
    assert (
        main(
            [
                "inject",
                "desk",
                "--event",
                event,
                "--user",
                "ana",
                "--budget",
                "200",
                "--json",
                "--home",
                str(home.root),
            ]
        )
        == 0
    )
    wc = json.loads(capsys.readouterr().out)
    texts = [ln["text"] for ln in wc["lines"]]
    assert (
        wc["tokens"] <= 200
        and any("fee: 0.12%" in t for t in texts)
        and not any("0.1%" in t for t in texts)
    )
    assert any("position" in t for t in texts)
    assert all(ln["evidence_ids"] for ln in wc["lines"] if ln["kind"] == "knowledge")


def test_speakermem_records_are_served_as_knowledge(store):
    from speakerflow.graphs.records import write_records
    from speakerflow.ops.inject import PassiveInjector
    from speakerflow.pipelines.entity_path import load_knowledge
    from speakerflow.schemas import KnowledgeItem

    build_entity_graph(store)
    rec = KnowledgeItem(
        entry_id="r1",
        group_id="desk",
        layer="per_speaker_profile",
        scope="PERSON",
        owner="ana",
        source="ana",
        utype="stance",
        content="ana thinks ETH staking is too risky for the treasury",
        from_ids=["e3"],
        valid_at=T,
        first_seen=T,
    )
    write_records(store, [rec])
    fg, canon, det = load_knowledge(store)
    wc = PassiveInjector(fg, canon, det).inject(
        "What does ana think about ETH staking for the treasury?", T + timedelta(days=1), "ana"
    )
    line = next(ln for ln in wc.lines if ln.edge_ids == ["rec_r1"])
    assert "stance" in line.text and line.evidence_ids == ["e3"]


def test_cli_end_to_end_on_the_sample_event_stream(home, tmp_path, capsys):
    from pathlib import Path

    import speakerflow

    sample = Path(speakerflow.__file__).parent / "data" / "sample_events.jsonl"
    h = ["--home", str(home.root)]
    assert main(["ingest", str(sample), "--format", "events", *h]) == 0
    assert main(["maintain", "--group", "desk", "--now", "2026-05-14T08:30:00+00:00", *h]) == 0
    ev = json.dumps(
        {
            "content": "Prepare an order to buy Bitcoin with leverage: fees, regime and my "
            "position size?",
            "ts": "2026-05-14T09:00:00+00:00",
        }
    )
    capsys.readouterr()
    assert main(["inject", "desk", "--event", ev, "--user", "ana", "--json", *h]) == 0
    wc = json.loads(capsys.readouterr().out)
    text = "\n".join(ln["text"] for ln in wc["lines"])
    assert "fee: 0.12%" in text and "regime: volatile" in text and "position: 2%" in text
    assert (
        "0.1%" not in text
        and "bullish" not in text
        and "0%" not in text.replace("0.12%", "").replace("2%", "")
    )
    assert "aggressive" not in text  # ben's private preference
    assert main(["wiki", "desk", "--out", str(tmp_path / "wiki"), *h]) == 0
    assert "superseded by" in (tmp_path / "wiki" / "asset--BTC.md").read_text()


def test_human_review_moves_maturity_and_is_logged(store):
    from speakerflow.ops.knowledge.maintenance import apply_review

    build_entity_graph(store)
    fg = FactGraph(store.graph, "desk").load()
    fee = next(k for k in fg.items.values() if k.relation == "fee" and k.invalid_at is None)
    assert apply_review(store, fee.edge_id, "approve")["to"] == "proven"
    assert FactGraph(store.graph, "desk").load().items[fee.edge_id].maturity == "proven"
    assert apply_review(store, fee.edge_id, "reject")["to"] == "deprecated"
    assert "review" in (store.root / "maintenance_log.jsonl").read_text()


def test_merge_candidates_are_queued_not_applied(store):
    from speakerflow.ops.knowledge.maintenance import sample_probe, tick
    from speakerflow.schemas import Entity

    build_entity_graph(store)
    fg = FactGraph(store.graph, "desk").load()

    fg.put_entities(
        [
            Entity(
                entity_id="trader:alphawhale", group_id="desk", name="@alpha_whale", etype="trader"
            ),
            Entity(
                entity_id="trader:alphawhal", group_id="desk", name="@alpha_whal", etype="trader"
            ),
        ]
    )
    fg.flush()
    seed = next(s for s in range(200) if sample_probe(random.Random(s)) == "merge")
    rep = tick(store, now=T, seed=seed)
    assert rep["probe"] == "merge"
    merges = [q for q in rep["review_items"] if q["kind"] == "merge"]
    assert {(q["keep"], q["drop"]) for q in merges} == {("trader:alphawhal", "trader:alphawhale")}
    assert "merge" in (store.root / "review_queue.jsonl").read_text()
    assert {"trader:alphawhale", "trader:alphawhal"} <= set(
        FactGraph(store.graph, "desk").load().entities
    )  # not applied


def test_entity_path_with_a_chat_backend(store):
    from speakerflow.ops.backends.base import ScriptedChat

    def reply(messages):
        text = messages[-1]["content"]
        if "0.12%" in text:
            return '[{"subject": "Bitcoin", "relation": "fee", "value": "0.12%"}]'
        if "0.10%" in text:
            return '[{"subject": "BTCUSDT", "relation": "fee", "value": "0.10%"}]'
        return "[]"

    chat = ScriptedChat(reply)
    stats = build_entity_graph(store, backend=chat)
    assert stats["model_calls"] == len(EVENTS) == len(chat.calls)
    assert stats["added"] == 2 and stats["invalidated"] == 1

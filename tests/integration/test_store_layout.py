"""The graph's Message nodes keep no text (the Parquet parts are the record of truth); a store
made with the older layout (text in Kuzu) still opens, takes appends, recovers, forgets and
compacts."""

import kuzu
import pyarrow as pa

from speakerflow.graphs import batch
from speakerflow.graphs.append import next_part
from speakerflow.graphs.audit import audit
from speakerflow.graphs.forget import forget
from speakerflow.graphs.kuzu_graph import MESSAGE_GRAPH_SCHEMA, node_ddl
from speakerflow.graphs.tables import message_texts
from speakerflow.ops.loaders import load
from speakerflow.schemas import MESSAGE_SCHEMA
from speakerflow.settings import BUNDLED_SAMPLE


def _sample(group="team"):
    [(gid, table)] = load(BUNDLED_SAMPLE, "jsonl", group=group)
    return gid, table


def _old_layout(home, gid):
    """A group whose graph has the Message table of the older layout (with ``text``)."""
    root = home.group_path(gid)
    root.mkdir(parents=True)
    db = kuzu.Database(str(root / "graph.kuzu"))
    conn = kuzu.Connection(db)
    conn.execute(node_ddl("Message", MESSAGE_SCHEMA, "msg_id"))
    conn.close()
    db.close()


def _graph_columns(store):
    return [r["name"] for r in store.graph.rows("CALL table_info('Message') RETURN name")]


def test_a_new_graph_keeps_no_message_text_and_texts_come_from_parquet(home):
    gid, table = _sample()
    with home.open(gid, writable=True) as store:
        store.append_messages(table)
        assert _graph_columns(store) == MESSAGE_GRAPH_SCHEMA.names
        assert "text" not in _graph_columns(store)
        rows = store.graph.rows("MATCH (m:Message) RETURN m.msg_id AS id, m.speaker AS s")
        assert len(rows) == table.num_rows
        ids = table["msg_id"].to_pylist()[:5]
        want = dict(zip(ids, table["text"].to_pylist()[:5], strict=True))
        assert message_texts(store.root, [*ids, "not-stored"]) == want
        assert audit(store)["mismatched"] == 0


def test_an_older_store_with_text_in_the_graph_still_works(home):
    gid, table = _sample()
    _old_layout(home, gid)
    first, rest = table.slice(0, 10), table.slice(10)
    with home.open(gid, writable=True) as store:
        store.append_messages(first)
        assert "text" in _graph_columns(store)  # the older layout is kept, not migrated
        texts = store.graph.rows("MATCH (m:Message) RETURN m.msg_id AS id, m.text AS t")
        assert {r["id"]: r["t"] for r in texts} == dict(
            zip(first["msg_id"].to_pylist(), first["text"].to_pylist(), strict=True)
        )
        store.append_messages(rest)
        assert store.graph.count("Message") == table.num_rows
        assert store.search("hotel", 3)
    # a batch interrupted after its part was staged rolls forward into the older layout too
    with home.open(gid, writable=True) as store:
        part = next_part(store.root / "messages")
        extra = table.slice(0, 2).to_pylist()
        for i, r in enumerate(extra):
            r["msg_id"] = f"late-{i}"
        new = pa.Table.from_pylist(extra, schema=MESSAGE_SCHEMA)
        import pyarrow.parquet as pq

        pq.write_table(new, store.root / "messages" / f".{part}.tmp")
        batch.begin(store.root, {"kind": "messages", "part": part, "rows": 2})
    with home.open(gid, writable=True) as store:
        assert store.recovered["graph_rows_added"] == 2
        got = store.graph.rows(
            "MATCH (m:Message) WHERE m.msg_id STARTS WITH 'late-' RETURN m.text AS t"
        )
        assert sorted(r["t"] for r in got) == sorted(r["text"] for r in extra)
        victim = table["msg_id"][0].as_py()
        forget(store, message_ids=[victim])
        assert victim not in {
            r["id"] for r in store.graph.rows("MATCH (m:Message) RETURN m.msg_id AS id")
        }
        assert audit(store)["mismatched"] == 0
        # compaction writes the graph in the current layout (text left to Parquet)
        assert store.compact_graph() is not None
        assert "text" not in _graph_columns(store)
        assert store.graph.count("Message") == store.messages().num_rows
        assert audit(store)["mismatched"] == 0


def test_fact_provenance_reads_the_text_from_parquet(home):
    from datetime import UTC, datetime

    from speakerflow.graphs.facts import FactGraph
    from speakerflow.pipelines.entity_path import build_entity_graph

    text = "Exchange API: taker fee for BTCUSDT is 0.10%."
    row = {
        "msg_id": "e1",
        "group_id": "desk",
        "session_id": "s",
        "turn": 0,
        "ts": datetime(2026, 2, 1, tzinfo=UTC),
        "speaker": "exchange_api",
        "text": text,
        "reply_to": None,
        "source_type": "tool_observation",
        "source_ref": "tool_observation:e1",
        "trust_tier": 1,
    }
    with home.open("desk", writable=True) as store:
        store.append_messages(pa.Table.from_pylist([row], schema=MESSAGE_SCHEMA))
        assert build_entity_graph(store)["added"] >= 1
        fg = FactGraph(store.graph, "desk").load()
        fee = next(k for k in fg.items.values() if k.relation == "fee")
        [prov] = fg.provenance(fee.edge_id)
        assert prov["msg_id"] == "e1" and prov["text"] == text
        assert prov["speaker"] == "exchange_api" and prov["source_ref"] == "tool_observation:e1"

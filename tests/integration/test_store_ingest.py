"""The columnar ingest path: dedup without a Python set of stored ids, the text index written
from Arrow through JSON lines (the same index as the per-row path), forget and re-ingest."""

from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from speakerflow.graphs import SearchFilter, StoreError
from speakerflow.graphs.append import index_columns, index_table
from speakerflow.graphs.forget import forget
from speakerflow.graphs.text_index import TantivyIndex, doc_key, doc_keys
from speakerflow.ops.loaders import load
from speakerflow.settings import BUNDLED_SAMPLE


def _sample(group="team"):
    [(gid, table)] = load(BUNDLED_SAMPLE, "jsonl", group=group)
    return gid, table


def test_arrow_ingest_builds_the_same_index_as_the_row_path(tmp_path):
    _, table = _sample()
    docs = index_table(table)
    a, b = TantivyIndex(tmp_path / "rows"), TantivyIndex(tmp_path / "arrow")
    a.add_columns(index_columns(table))
    b.add_table(docs)
    assert a.count() == b.count() == table.num_rows
    queries = ["where does Dev live", "offsite Lisbon Porto", "hotel", "budget flights cheap"]
    filters = [
        None,
        SearchFilter(kind="message", speaker="Dev"),
        SearchFilter(session_id="s2"),
        SearchFilter(since=datetime(2026, 4, 1, tzinfo=UTC)),
        SearchFilter(until=datetime(2026, 3, 5, tzinfo=UTC), kind="message"),
    ]
    compared = 0
    for q in queries:
        for f in filters:
            want = a.search(q, 50, f)
            assert b.search(q, 50, f) == want
            assert b.search_keys(q, 50, f) == (
                [doc_key(h.doc_id) for h in want],
                [h.score for h in want],
            )
            compared += len(want)
    assert compared > 20


def test_text_with_newlines_and_line_separators_is_one_document(tmp_path):
    ts = datetime(2026, 1, 1, tzinfo=UTC)
    table = pa.table(
        {
            "doc_id": ["a", "b"],
            "kind": ["message"] * 2,
            "text": ["first line\nsecond\u2028third", "x\ry"],
            "ts": pa.array([ts, ts], pa.timestamp("us", tz="UTC")),
        }
    )
    index = TantivyIndex(tmp_path)
    index.add_table(table)
    assert index.count() == 2 and [h.doc_id for h in index.search("third")] == ["a"]


def test_dedup_in_the_batch_against_the_store_and_after_reopen(home):
    gid, table = _sample()
    with home.open(gid, writable=True) as s:
        doubled = pa.concat_tables(
            [table.slice(0, 10), table.slice(5, 10)]
        )  # rows 5-9 twice in one batch
        first = s.append_messages(doubled)
        assert (first.added, first.skipped) == (15, 5)
        second = s.append_messages(table.slice(10, 20))  # 10-14 stored, 15-29 new
        assert (second.added, second.skipped) == (15, 5)
        assert s.messages()["msg_id"].to_pylist() == table["msg_id"].to_pylist()[:30]
    with home.open(gid, writable=True) as s:  # a fresh open reads the ids from the Parquet parts
        again = s.append_messages(table)
        assert (again.added, again.skipped) == (2, 30)
        assert (
            s.stats()["messages"] == table.num_rows == s.index.count() == s.graph.count("Message")
        )


def test_a_repeat_with_other_text_is_refused_and_nothing_is_written(home):
    gid, table = _sample()
    with home.open(gid, writable=True) as s:
        s.append_messages(table.slice(0, 10))
        rows = table.slice(8, 4).to_pylist()
        changed = pa.Table.from_pylist([{**r, "text": "edited"} for r in rows], schema=table.schema)
        with pytest.raises(StoreError, match="already stored with different text"):
            s.append_messages(changed)
        new = table.slice(12, 1).to_pylist()[0]
        inner = pa.Table.from_pylist(
            [new, {**new, "text": "edited"}], schema=table.schema
        )  # one new id, two texts
        with pytest.raises(StoreError, match="row 1"):
            s.append_messages(inner)
        assert s.stats()["messages"] == 10 and s.index.count() == 10


def test_a_forgotten_message_can_be_ingested_again(home):
    gid, table = _sample()
    with home.open(gid, writable=True) as s:
        s.append_messages(table)
        victim = table["msg_id"][3].as_py()
        forget(s, message_ids=[victim])
        assert victim not in s.messages()["msg_id"].to_pylist()
        back = s.append_messages(table.filter(pc.equal(table["msg_id"], victim)))
        assert (back.added, back.skipped) == (1, 0)
        assert s.stats()["messages"] == table.num_rows


def test_the_index_written_in_chunks_is_the_one_written_at_once(tmp_path):
    _, table = _sample()
    docs = index_table(table)
    whole, chunked = TantivyIndex(tmp_path / "whole"), TantivyIndex(tmp_path / "chunked")
    chunked.CHUNK = 7  # the bundled chat in several JSON chunks, one commit
    whole.add_table(docs)
    chunked.add_table(docs)
    assert chunked.count() == whole.count() == table.num_rows
    for q in ("where does Dev live", "offsite Lisbon Porto", "hotel"):
        assert chunked.search(q, 50) == whole.search(q, 50) != []
        assert chunked.search_keys(q, 50) == whole.search_keys(q, 50)


def test_doc_keys_are_doc_key_of_each_id():
    ids = ["a", "m-000001", "ünïcode id", "x" * 300, ""]
    assert doc_keys(ids).tolist() == [doc_key(d) for d in ids]
    assert doc_keys([]).tolist() == []


@pytest.mark.parametrize("keep", ["1", "0"])
def test_appends_with_a_kept_or_a_per_commit_index_writer(home, monkeypatch, keep):
    """A writable store keeps one index writer across appends by default (merges in the
    background, waited for on close); either way every append is searchable at once, the
    three stores agree, and a later open sees every message."""
    monkeypatch.setenv("SPEAKERFLOW_INDEX_KEEP_WRITER", keep)
    gid, table = _sample()
    step = 6
    with home.open(gid, writable=True) as s:
        for lo in range(0, table.num_rows, step):
            s.append_messages(table.slice(lo, step))
            seen = lo + min(step, table.num_rows - lo)
            assert s.index.count() == seen == s.graph.count("Message")
        assert (s.index._writer is not None) == (keep == "1")
        profile = s.ingest_profile()
        for key in ("validate", "dedup", "parquet", "manifest", "index", "kuzu_copy"):
            assert profile[key] > 0, key
        assert profile["index.commit"] > 0 and profile["index.docs"] > 0
    assert s.index._writer is None  # closed: merges waited for, lock released
    with home.open(gid, writable=True) as s:  # a new writer can be taken at once
        assert s.index.count() == table.num_rows == s.stats()["messages"]
        assert (s.append_messages(table).added, s.index.count()) == (0, table.num_rows)
    with home.open(gid) as r:
        assert r.index.count() == table.num_rows
        assert r.search("hotel", 50) != []


def test_a_copy_with_fewer_threads_restores_the_connections_setting(tmp_path):
    from speakerflow.graphs.kuzu_graph import KuzuGraph

    _, table = _sample()

    def threads(g: KuzuGraph) -> int:
        return int(g.rows("CALL current_setting('threads') RETURN *")[0]["threads"])

    with KuzuGraph(tmp_path / "g.kuzu") as g:
        before = threads(g)
        assert g.copy_nodes("Message", table, threads=1) == table.num_rows
        assert threads(g) == before and g.count("Message") == table.num_rows

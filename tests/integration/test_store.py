"""The real stores: Kuzu and Tantivy under a per-group home."""

import json
import multiprocessing as mp
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from speakerflow.graphs import (
    GroupBusyError,
    KuzuGraph,
    SearchFilter,
    StoreError,
    UnboundParameterError,
)
from speakerflow.ops.loaders import LoadError, load
from speakerflow.settings import BUNDLED_SAMPLE


def _sample(group="team"):
    [(gid, table)] = load(BUNDLED_SAMPLE, "jsonl", group=group)
    return gid, table


def _snapshot(home, gid):
    with home.open(gid) as s:
        return (
            s.stats(),
            s.index.count(),
            s.graph.count("Message"),
            sorted(p.name for p in s.root.rglob("*.parquet")),
        )


def test_kuzu_refuses_unbound_parameters(tmp_path):
    g = KuzuGraph(tmp_path / "g.kuzu")
    g.execute(
        "CREATE (:Entity {entity_id: 'e1', group_id: 'g', name: 'BTC', etype: 'asset', aliases: "
        "['XBT']})"
    )
    with pytest.raises(UnboundParameterError, match="x"):
        g.execute("MATCH (e:Entity) WHERE e.entity_id = $x DELETE e")
    assert g.count("Entity") == 1  # nothing was deleted
    # a '$' inside a string literal is not a parameter
    assert g.rows("MATCH (e:Entity) WHERE e.name <> '$x' RETURN e.name AS n") == [{"n": "BTC"}]
    g.execute("MATCH (e:Entity) WHERE e.entity_id = $x DELETE e", {"x": "e1"})
    assert g.count("Entity") == 0
    g.close()


def test_ingest_is_idempotent_and_searchable(home):
    gid, table = _sample()
    with home.open(gid, writable=True) as s:
        first = s.append_messages(table)
        second = s.append_messages(table)
        assert (first.added, first.skipped, second.added, second.skipped) == (32, 0, 0, 32)
        assert s.roster() == ["Ana", "Ben", "Chloe", "Dev"]
        hits = s.search("where does Dev live", 5, SearchFilter(kind="message", speaker="Dev"))
        assert hits and all(h.doc_id.startswith("s") for h in hits)
        texts = {r["msg_id"]: r["text"] for r in s.messages().to_pylist()}
        assert any("Vienna" in texts[h.doc_id] for h in hits)
        later = s.search("live", 5, SearchFilter(since=datetime(2026, 4, 1, tzinfo=UTC)))
        assert [h.doc_id for h in later] == ["s3-t00"]
    assert _snapshot(home, gid)[0]["messages"] == 32


def test_out_of_order_timestamps_are_ordered(home):
    gid, table = _sample()
    with home.open(gid, writable=True) as s:
        s.append_messages(table.take(pa.array(list(range(31, -1, -1)))))
        ts = s.messages()["ts"].to_pylist()
    assert ts == sorted(ts)


def test_appends_extend_the_cached_table_as_a_reopen_reads_it(home):
    """Appends update the open store's message table in place (no re-read of every part);
    it must equal what a fresh open reads from the parts, ties and order included."""
    gid, table = _sample()
    order = [5, 0, 17, 3, 31, 9, 22, 1, 14, 28, 7, 11]
    with home.open(gid, writable=True) as s:
        s.messages()  # cached before the appends
        for chunk in (order[:4], order[4:9], order[9:], list(range(32))):
            s.append_messages(table.take(pa.array(chunk)))
        cached = s.messages()
    with home.open(gid) as fresh:
        assert cached.equals(fresh.messages())
        assert cached.num_rows == 32


def test_store_refuses_other_groups_rows_and_bad_ids(home):
    _, table = _sample("other")
    with home.open("team", writable=True) as s:
        with pytest.raises(StoreError, match="group_id"):
            s.append_messages(table)
    with pytest.raises(StoreError, match="invalid group id"):
        home.open("../escape", writable=True)


@pytest.mark.parametrize("suffix", ["jsonl", "json"])
def test_truncated_file_fails_clearly_and_store_is_unchanged(home, tmp_path, suffix):
    gid, table = _sample()
    with home.open(gid, writable=True) as s:
        s.append_messages(table.slice(0, 10))
    before = _snapshot(home, gid)
    text = BUNDLED_SAMPLE.read_text()
    if suffix == "jsonl":
        bad = tmp_path / "bad.jsonl"
        bad.write_text(text[: len(text) // 2])  # cut in the middle of a line
        fmt = "jsonl"
    else:
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({"sessions": [{"session_id": "s", "turns": []}]})[:-5])
        fmt = "socialmem"
    with pytest.raises(LoadError, match=r"bad\.json.*line \d+"):
        load(bad, fmt, group=gid)
    assert _snapshot(home, gid) == before


def test_missing_field_names_line_and_field(tmp_path):
    bad = tmp_path / "m.jsonl"
    bad.write_text(
        '{"msg_id": "a", "ts": "2026-01-01T00:00:00Z", "speaker": "A", "text": "hi"}\n'
        '{"msg_id": "b", "ts": "2026-01-01T00:00:00Z", "text": "no speaker"}\n'
    )
    with pytest.raises(LoadError, match=r"row 2: field 'speaker'"):
        load(bad, "jsonl", group="g")


def _try_open(root, q):
    from speakerflow.graphs import Home

    try:
        Home(root).open("team", writable=True).close()
        q.put("opened")
    except GroupBusyError as exc:
        q.put(f"busy: {exc}")


def test_one_writer_per_group(home):
    with home.open("team", writable=True):
        q = mp.get_context("spawn").Queue()
        p = mp.get_context("spawn").Process(target=_try_open, args=(str(home.root), q))
        p.start()
        p.join(60)
        assert q.get(timeout=5).startswith("busy")
    with home.open("team", writable=True):
        pass  # released on close


def test_groups_are_isolated(home):
    for gid in ("a", "b"):
        _, table = _sample(gid)
        with home.open(gid, writable=True) as s:
            s.append_messages(table.slice(0, 12 if gid == "a" else 32))
    with home.open("a") as s:
        ids = {h.doc_id for h in s.search("Vienna moved live", 50)}
        assert ids and all(i < "s2" for i in ids)  # group a only holds session s1


def test_failed_index_write_undoes_the_graph_and_parquet(home, monkeypatch):
    gid, table = _sample()
    with home.open(gid, writable=True) as s:
        s.append_messages(table.slice(0, 10))
    before = _snapshot(home, gid)
    with home.open(gid, writable=True) as s:

        def boom(columns):
            raise OSError("disk full")

        monkeypatch.setattr(
            s.index, "add_table", boom
        )  # the ingest path writes the index from Arrow
        with pytest.raises(OSError, match="disk full"):
            s.append_messages(table)
    assert _snapshot(home, gid) == before

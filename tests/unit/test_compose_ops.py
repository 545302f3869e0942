"""Operators compose: passthrough Detect/Canonicalize/Segmenter, pipeline input requirements,
the write path as Segmenter >> ForEach(Writer >> Validate >> Upsert) (in-memory store),
the staged watermark of RecordBuffer."""

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from speakerflow.graphs import GroupStore
from speakerflow.graphs.records import RecordBuffer, written_ids
from speakerflow.ops import Lambda
from speakerflow.ops.core import ForEach, Pipeline
from speakerflow.ops.core.base import Context, SchemaMismatchError
from speakerflow.ops.knowledge.canonicalize import Canonicalize
from speakerflow.ops.knowledge.detect import Detect
from speakerflow.ops.loaders import load
from speakerflow.ops.write.segment import Segmenter
from speakerflow.ops.write.upsert import Upsert
from speakerflow.ops.write.validate import Validate
from speakerflow.ops.write.writer.operator import Writer
from speakerflow.pipelines.write_path import write_group, write_pipeline
from speakerflow.settings import BUNDLED_SAMPLE

pytestmark = pytest.mark.timeout(60)
KEYS = ("entry_id", "layer", "owner", "source", "content", "supersedes")
T0 = datetime(2025, 3, 1, 9, tzinfo=UTC)


def _store(gid="team"):
    store = GroupStore("/unused", gid, in_memory=True)
    store.append_messages(load(BUNDLED_SAMPLE, "jsonl", group=gid)[0][1])
    return store


def _keys(store):
    return {tuple(r[k] for k in KEYS) for r in store.records().to_pylist()}


def _messages(order):
    """Two sessions, written out of time order (rows as given by ``order``)."""
    rows = [
        {
            "msg_id": f"{s}-{i}",
            "session_id": s,
            "turn": i,
            "ts": T0 + timedelta(minutes=m + i),
            "speaker": "Ana",
            "text": f"I like Bitcoin {i}",
            "extra": f"x{s}{i}",
        }
        for s, m in (("s1", 0), ("s2", 60))
        for i in range(3)
    ]
    return pa.Table.from_pylist([rows[i] for i in order])


def test_detect_canonicalize_segmenter_hand_every_column_on():
    table = _messages([5, 0, 3, 1, 4, 2])
    out = (Detect() >> Canonicalize() >> Segmenter(window=2))(table, Context())
    assert set(table.column_names) < set(out.column_names)
    assert {"surfaces", "etypes", "intent", "risk", "entity_ids", "segment_id"} <= set(
        out.column_names
    )
    # rows come out segment by segment, in write order, each message with its own columns
    assert out["segment_id"].to_pylist() == ["s1#0", "s1#0", "s1#1", "s2#0", "s2#0", "s2#1"]
    assert out["msg_id"].to_pylist() == ["s1-0", "s1-1", "s1-2", "s2-0", "s2-1", "s2-2"]
    assert out["extra"].to_pylist() == ["xs10", "xs11", "xs12", "xs20", "xs21", "xs22"]
    assert out["entity_ids"].to_pylist()[0] == ["asset:BTC"]
    # running Detect twice replaces its columns instead of duplicating them
    again = Detect()(out)
    assert again.column_names == out.column_names


def test_pipeline_input_needs_what_passthrough_steps_do_not_produce():
    pipe = Segmenter() >> ForEach("segment_id", Writer("rules") >> Validate() >> Upsert())
    assert {"speaker", "text", "msg_id", "ts"} <= set(pipe.consumes)
    with pytest.raises(SchemaMismatchError, match="text"):
        pipe(_messages(range(6)).drop_columns(["text"]), Context(store=_store()))
    # a step that does not hand its input on still breaks the chain at build time
    ids_only = Lambda(
        lambda t, c: t.select(["msg_id", "session_id", "turn", "ts"]),
        name="ids",
        consumes=("msg_id", "session_id", "turn", "ts"),
        produces=pa.schema(
            [
                ("msg_id", pa.string()),
                ("session_id", pa.string()),
                ("turn", pa.int64()),
                ("ts", pa.timestamp("us", "UTC")),
            ]
        ),
    )
    with pytest.raises(SchemaMismatchError, match="speaker"):
        Pipeline(ids_only, Segmenter(), ForEach("segment_id", Writer("rules")))


def test_composed_write_path_equals_write_group_and_is_idempotent():
    composed, reference = _store(), _store()
    pipe = Segmenter() >> ForEach("segment_id", Writer("rules") >> Validate() >> Upsert())
    ctx = Context(store=composed)
    out = pipe(composed.messages(), ctx)
    report = write_group(reference, "rules", progress=False)
    assert out.num_rows == composed.records().num_rows == report.accepted
    assert _keys(composed) == _keys(reference) and report.updates > 0
    assert written_ids(composed) == set(composed.messages()["msg_id"].to_pylist())
    # every segment's Writer saw the heads the segments before it wrote
    segs = list(ctx.state["segments"].values())
    first_ids = {
        r["entry_id"]
        for r in composed.records().to_pylist()
        if set(r["from_ids"]) <= segs[0].msg_ids
    }
    assert first_ids and any(h["entry_id"] in first_ids for h in segs[1].heads)
    # a second run writes nothing and asks no backend
    again = write_pipeline(writer=Writer("rules"))
    assert again(composed.messages(), Context(store=composed)).num_rows == 0
    assert (
        again.steps[1].inner.steps[0].stats.extra["skipped_written"] == composed.messages().num_rows
    )
    assert _keys(composed) == _keys(reference)


def test_writer_none_writes_nothing_and_leaves_the_watermark():
    store = _store()
    out = write_pipeline(writer=Writer("none"))(store.messages(), Context(store=store))
    assert out.num_rows == 0 and store.records().num_rows == 0 and not written_ids(store)


def test_record_buffer_stages_the_watermark_and_flushes_every_n_batches():
    store = _store()
    buffer = RecordBuffer(store, flush_every=2)
    pipe = write_pipeline(writer=Writer("rules"))
    msgs = Segmenter()(store.messages())
    assert list(dict.fromkeys(msgs["segment_id"].to_pylist())) == ["s1#0", "s2#0", "s3#0"]
    first = msgs.filter(pa.compute.equal(msgs["segment_id"], "s1#0"))
    pipe(first, Context(store=buffer))
    # one batch staged: nothing in the store yet; the buffer answers with its staged ids
    assert (
        store.records().num_rows == 0
        and not store.meta("writer_written_msg_ids")
        and buffer.pending > 0
    )
    assert set(first["msg_id"].to_pylist()) == written_ids(buffer)
    pipe(msgs, Context(store=buffer))  # skips s1#0; s2#0 is the second batch: flushed; s3#0 staged
    assert store.records().num_rows > 0 and buffer.pending > 0
    assert written_ids(store) == set(
        msgs.filter(pa.compute.is_in(msgs["segment_id"], pa.array(["s1#0", "s2#0"])))[
            "msg_id"
        ].to_pylist()
    )
    buffer.flush()
    reference = _store()
    write_group(reference, "rules", progress=False)
    assert _keys(store) == _keys(reference)
    assert written_ids(store) == set(msgs["msg_id"].to_pylist()) and buffer.pending == 0
    with pytest.raises(ValueError, match="flush_every"):
        RecordBuffer(store, flush_every=0)


def test_docstring_examples_of_the_composed_modules_run():
    import doctest

    from speakerflow.ops.knowledge import canonicalize, detect
    from speakerflow.ops.write import segment
    from speakerflow.pipelines import write_path

    for module in (segment, detect, canonicalize, write_path):
        assert doctest.testmod(module).failed == 0, module.__name__


def test_a_run_that_fails_half_way_resumes_where_it_stopped():
    from speakerflow.ops.write.writer.rules import RulesWriter

    class FailsOnSecond(RulesWriter):
        def propose(self, segment):
            if segment.segment_id == "s2#0":
                raise RuntimeError("backend down")
            return super().propose(segment)

    store = _store()
    with pytest.raises(RuntimeError, match="backend down"):
        write_pipeline(writer=Writer(FailsOnSecond()))(store.messages(), Context(store=store))
    first = {m for m in store.messages()["msg_id"].to_pylist() if m.startswith("s1-")}
    assert written_ids(store) == first and store.records().num_rows > 0
    write_pipeline(writer=Writer("rules"))(store.messages(), Context(store=store))
    reference = _store()
    write_group(reference, "rules", progress=False)
    assert _keys(store) == _keys(reference)

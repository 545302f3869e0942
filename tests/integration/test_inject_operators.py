"""``Inject`` and its steps ``Retrieve >> Score >> Compress >> TopB >> Fuse`` over an events
table give every event the context ``PassiveInjector.inject`` gives it."""

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from speakerflow.benchmarks.harness.generator import Generator
from speakerflow.ops import Lambda
from speakerflow.ops.core import Pipeline
from speakerflow.ops.core.base import Context
from speakerflow.ops.inject import InjectConfig, PassiveInjector
from speakerflow.ops.inject.operators import (
    LINE_SCHEMA,
    Compress,
    Fuse,
    Inject,
    Retrieve,
    Score,
    TopB,
)
from speakerflow.ops.knowledge.load import load_knowledge
from speakerflow.pipelines.entity_path import build_entity_graph
from speakerflow.schemas import MESSAGE_SCHEMA

NOW = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def desk(tmp_path_factory):
    """A group built from a harness stream (seed 5), and its user questions as events."""
    from speakerflow.graphs import Home

    gen = Generator(5, 2, 30)
    batches = [ep for _, batch in gen.stream() for ep in batch]
    evs = [e for ep in batches for e in ep.events]
    store = Home(tmp_path_factory.mktemp("home")).open("desk", writable=True)
    store.append_messages(
        pa.Table.from_pylist(
            [{**e, "group_id": "desk", "reply_to": None} for e in evs], schema=MESSAGE_SCHEMA
        )
    )
    build_entity_graph(store, now=NOW)
    qs = [next(e for e in ep.events if e["msg_id"] == ep.qid) for ep in batches if ep.qid]
    events = pa.table(
        {
            "msg_id": [q["msg_id"] for q in qs],
            "text": [q["text"] for q in qs],
            "ts": pa.array([q["ts"] + timedelta(days=2) for q in qs], pa.timestamp("us", tz="UTC")),
            "user": [q["speaker"] for q in qs],
        }
    )
    yield store, events
    store.close()


def _reference(store, events, **cfg):
    fg, canon, det = load_knowledge(store)
    inj = PassiveInjector(fg, canon, det, config=InjectConfig(record_use=False, **cfg))
    return [
        inj.inject(t, ts, u)
        for t, ts, u in zip(
            events["text"].to_pylist(),
            events["ts"].to_pylist(),
            events["user"].to_pylist(),
            strict=True,
        )
    ]


@pytest.mark.parametrize("cfg", [{}, {"budget": 120, "max_items": 4}])
def test_inject_operator_equals_passive_injector(desk, cfg):
    store, events = desk
    ref = _reference(store, events, **cfg)
    op = Inject(**cfg)
    out = op(events, Context(store=store))
    assert out.column_names[:4] == events.column_names  # passthrough: the events' columns first
    assert out["context"].to_pylist() == [wc.text() for wc in ref]
    assert out["context_tokens"].to_pylist() == [wc.tokens for wc in ref]
    assert out["intent"].to_pylist() == [wc.detection.intent for wc in ref]
    assert out["edge_ids"].to_pylist() == [
        [e for ln in wc.lines if ln.kind == "knowledge" for e in ln.edge_ids] for wc in ref
    ]
    assert sum(out["knowledge_lines"].to_pylist()) > len(ref)  # real contexts, not headers only
    assert all(t <= cfg.get("budget", 600) for t in out["context_tokens"].to_pylist())
    assert op.stats.extra["fuse/injected"] == sum(out["knowledge_lines"].to_pylist())


def test_steps_compose_and_a_user_step_fits_between(desk):
    store, events = desk
    ref = _reference(store, events)
    steps = Retrieve() >> Score() >> Compress() >> TopB() >> Fuse()
    assert isinstance(steps, Pipeline)
    out = steps(events, Context(store=store))
    assert out["context"].to_pylist() == [wc.text() for wc in ref]
    # a user's own step between Compress and TopB: drop every line resting on one message
    banned = next(
        e for wc in ref for ln in wc.lines if ln.kind == "knowledge" for e in ln.evidence_ids
    )
    keep = Lambda(
        lambda t, c: t.filter(pa.array([banned not in ev for ev in t["evidence_ids"].to_pylist()])),
        name="distrust",
        consumes=("evidence_ids",),
        produces=LINE_SCHEMA,
    )
    mine = (Retrieve() >> Score() >> Compress() >> keep >> TopB() >> Fuse())(
        events, Context(store=store)
    )
    assert all(banned not in ev for ev in mine["evidence_ids"].to_pylist())
    assert mine.num_rows == events.num_rows

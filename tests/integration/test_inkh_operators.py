"""The InKH stages as operators: ``Detect >> Canonicalize >> ExtractKnowledge >> Invalidate >>
Decay`` over an events table builds the same graph as ``build_entity_graph``; the registry
holds an operator for every design stage plus Inject."""

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from speakerflow.benchmarks.harness.generator import Generator
from speakerflow.graphs import Home
from speakerflow.graphs.facts import FactGraph
from speakerflow.ops.core import registry
from speakerflow.ops.core.base import Context
from speakerflow.ops.knowledge.canonicalize import Canonicalize
from speakerflow.ops.knowledge.decay import Decay
from speakerflow.ops.knowledge.detect import Detect
from speakerflow.ops.knowledge.extract_knowledge import ExtractKnowledge
from speakerflow.ops.knowledge.governance import Govern
from speakerflow.ops.knowledge.invalidate import FACT_SCHEMA, Invalidate
from speakerflow.ops.knowledge.maintenance import Maintain
from speakerflow.ops.knowledge.wiki import Wiki
from speakerflow.pipelines.entity_path import build_entity_graph
from speakerflow.schemas import MESSAGE_SCHEMA

NOW = datetime(2026, 6, 1, tzinfo=UTC)
STAGES = (
    "detect",
    "canonicalize",
    "writer",
    "validate",
    "upsert",
    "invalidate",
    "decay",
    "project",
    "select",
    "resolve",
    "compose",
    "judge",
    "inject",
)


def _events(group: str, rounds: int = 2, episodes: int = 30) -> pa.Table:
    """A harness stream (seed 3): tool observations, market updates, user turns, rumours,
    corrections, replies, in time order."""
    gen = Generator(3, rounds, episodes)
    evs = [e for _, batch in gen.stream() for ep in batch for e in ep.events]
    rows = [{**e, "group_id": group, "reply_to": None} for e in evs]
    for i in range(1, len(rows), 7):  # some replies, so the addressee path is exercised
        rows[i]["reply_to"] = rows[i - 1]["msg_id"]
    return pa.Table.from_pylist(rows, schema=MESSAGE_SCHEMA)


def _graph(store) -> tuple[dict, dict, set]:
    fg = FactGraph(store.graph, store.group_id).load(with_records=False)
    facts = {e: {**k.row(), "superseded_by": k.superseded_by} for e, k in fg.items.items()}
    ents = {e: (x.name, x.etype, tuple(x.aliases)) for e, x in fg.entities.items()}
    sup = (
        {
            tuple(r)
            for r in store.graph.execute(
                "MATCH (a:Fact)-[:SUPERSEDES]->(b:Fact) RETURN a.edge_id, b.edge_id"
            )
            .get_as_arrow()
            .to_pylist()
        }
        if hasattr(store.graph, "execute")
        else set()
    )
    return facts, ents, sup


@pytest.fixture()
def two_stores(home, tmp_path):
    """The same group ``desk`` with the same events in two homes (fact ids hash the group id)."""
    a, b = home.open("desk", writable=True), Home(tmp_path / "home2").open("desk", writable=True)
    a.append_messages(_events("desk"))
    b.append_messages(_events("desk"))
    yield a, b
    a.close(), b.close()


def test_composed_operators_build_the_same_graph_as_build_entity_graph(two_stores):
    ref, mine = two_stores
    totals = build_entity_graph(ref, now=NOW)
    assert totals["added"] > 30 and totals["invalidated"] > 0  # a stream with real contradictions

    pipe = Detect() >> Canonicalize() >> ExtractKnowledge() >> Invalidate() >> Decay()
    events = mine.messages()
    events = events.take(pc.sort_indices(events, [("ts", "ascending")]))
    out = pipe(events, Context(store=mine, clock=lambda: NOW))

    facts_ref, ents_ref, sup_ref = _graph(ref)
    facts_ops, ents_ops, sup_ops = _graph(mine)
    assert len(facts_ref) == totals["facts"]
    assert facts_ops.keys() == facts_ref.keys()
    assert facts_ops == facts_ref
    assert ents_ops == ents_ref and sup_ops == sup_ref
    # the operators' stats are build_entity_graph's counts
    stats = pipe.stats()
    assert stats["extract_knowledge"]["rows_out"] == totals["candidates"]
    assert {k: stats["invalidate"][k] for k in ("added", "validated", "invalidated")} == {
        k: totals[k] for k in ("added", "validated", "invalidated")
    }
    # the output: every fact the run wrote, with its effective confidence and maturity at NOW
    assert out.schema.names[: len(FACT_SCHEMA)] == FACT_SCHEMA.names
    assert out.num_rows == len(facts_ops)
    row = {r["edge_id"]: r for r in out.to_pylist()}
    invalid = [e for e, f in facts_ops.items() if f["invalid_at"] is not None]
    assert invalid and all(
        row[e]["effective_confidence"] == 0.0 and row[e]["maturity"] == "deprecated"
        for e in invalid
    )
    valid = [r for r in out.to_pylist() if r["invalid_at"] is None]
    assert all(0.0 < r["effective_confidence"] <= r["confidence"] for r in valid)


def test_maintain_and_wiki_after_the_write_path(two_stores, tmp_path):
    store, _ = two_stores
    events = store.messages()
    events = events.take(pc.sort_indices(events, [("ts", "ascending")]))
    later = NOW + timedelta(days=400)  # everything has decayed: the sweep deprecates
    pipe = (
        ExtractKnowledge()
        >> Invalidate()
        >> Decay()
        >> Maintain(at=later, seed=1)
        >> Wiki(out_dir=str(tmp_path / "w"))
    )
    ctx = Context(store=store, clock=lambda: NOW)
    pages = pipe(events, ctx)
    stats = pipe.stats()
    assert stats["maintain"]["fixes"] > 0 and stats["maintain"]["rows_out"] >= 1
    assert "knowledge" not in ctx.state  # Maintain dropped the cached graph: later steps reload it
    assert pages["page"].to_pylist()[0] == "index" and stats["wiki"]["pages"] == pages.num_rows > 1
    assert "deprecated" in (tmp_path / "w" / "asset--BTC.md").read_text()


def test_govern_marks_and_drops_by_the_allow_predicate():
    t = pa.table(
        {
            "effective_confidence": [0.9, 0.1, 0.9, 0.9],
            "maturity": ["verified", "verified", "candidate", "verified"],
            "scope": ["shared", "shared", "shared", "user:ben"],
        }
    )
    out = Govern(risk="high", user="ana")(t)
    assert out["allowed"].to_pylist() == [True, False, False, False]
    assert out["refused"].to_pylist() == [None, "confidence", "maturity", "scope"]
    assert Govern(risk="low", user="ben", drop=True)(t).num_rows == 3


def test_registry_has_every_design_stage_with_schemas():
    registry.discover()
    for name in STAGES:
        cls = registry.get(name)
        assert cls.consumes and len(cls.produces) > 0, name
    for name in ("govern", "extract_knowledge", "retrieve", "score", "compress", "topb", "fuse"):
        assert registry.get(name).consumes, name
    for name in ("maintain", "wiki"):  # triggered by any table; they read the group's store
        assert len(registry.get(name).produces) > 0


def test_decay_without_a_store_uses_the_time_part_only():
    t0 = NOW - timedelta(days=30)
    facts = pa.Table.from_pylist(
        [
            {
                "edge_id": "f1",
                "group_id": "g",
                "subject_id": "asset:BTC",
                "relation": "zzz_unknown",
                "object_id": "value:x",
                "description": "",
                "evidence_ids": ["m1"],
                "confidence": 0.8,
                "maturity": "candidate",
                "regime_tag": None,
                "scope": "shared",
                "valid_at": t0,
                "invalid_at": None,
                "updated_at": t0,
                "created_at": t0,
                "expired_at": None,
                "reuse_count": 0,
                "validations": 1,
                "utility": 0.0,
                "last_validated": t0,
                "trust_tier": 1,
                "superseded_by": None,
            }
        ],
        schema=FACT_SCHEMA,
    )
    out = Decay(at=NOW)(facts)
    assert out["decay"].to_pylist() == pytest.approx([0.5])  # one default half-life (30 days)
    assert out["effective_confidence"].to_pylist() == pytest.approx([0.4])
    assert out["maturity"].to_pylist() == [
        "verified"
    ]  # one validation: Psi moves candidate -> verified

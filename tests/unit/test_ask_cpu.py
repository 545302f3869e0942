"""The cheaper ask path gives the same results as the per-record rules it replaced:
Resolve's one-pass record scores against the per-record rule, a read snapshot's key search
against its id search; and ``Memory(pipeline=...)`` serves a user's pipeline (the default
one with an Arrow operator of one's own in between) with the default's results."""

import math

import numpy as np
import pytest
from test_query_operators import QUESTIONS as OPERATOR_QUESTIONS
from test_query_path import store  # noqa: F401 - the shared fixture (messages + hand-made records)

from speakerflow import Memory
from speakerflow.graphs import SearchFilter, query_terms
from speakerflow.graphs.text_index import doc_key
from speakerflow.ops import Lambda
from speakerflow.ops.loaders import load
from speakerflow.ops.query.channels import rank_of
from speakerflow.ops.query.group_view import GroupView
from speakerflow.ops.query.recall import recall
from speakerflow.ops.query.record_view import RecordView, _dense_sims
from speakerflow.ops.query.resolve import ResolveConfig, _relevance
from speakerflow.ops.text.embed import HashingEmbedder
from speakerflow.pipelines.query_path import QueryConfig, query_pipeline
from speakerflow.settings import BUNDLED_SAMPLE

CFG = QueryConfig(embedder="hashing")
QUESTIONS = [*OPERATOR_QUESTIONS, "Where did Dev live in March?"]


def _same(a, b) -> None:
    assert a.question == b.question and a.answer == b.answer
    assert a.projection == b.projection
    assert [e.model_dump() for e in a.evidence] == [e.model_dump() for e in b.evidence]
    assert a.context == b.context and a.tokens == b.tokens
    assert a.cited_ids() == b.cited_ids()


def _relevance_per_record(view, records, fused, projection, config, embedder, pool):
    """The rule as it was written per record (the reference of the numpy pass)."""
    issue_words = set(query_terms(projection.issue))
    top = float(fused.max())
    default_idf = max(records.idf.values(), default=1.0)
    issue_weight = sum(records.idf.get(w, default_idf) for w in issue_words) or 1.0
    qvec = embedder.encode([projection.question])[0]
    out = []
    for i, r in enumerate(records.rows):
        if r["layer"] not in config.layers:
            out.append(0.0)
            continue
        text = f"{r['owner']}: {r['content']}"
        dense = float(embedder.encode([text])[0] @ qvec)
        lexical = sum(records.idf[w] for w in issue_words & records.terms[i]) / issue_weight
        rows = [view.pos[m] for m in r["from_ids"] if m in view.pos]
        recalled = any(row in set(pool) for row in rows)
        if lexical < config.min_lexical and dense < config.min_dense and not recalled:
            out.append(0.0)
            continue
        s1 = max((fused[row] for row in rows), default=0.0)
        out.append(s1 + top * (0.5 * lexical + 0.5 * max(dense - config.min_dense, 0.0)))
    return out


def test_resolve_scores_every_record_in_one_pass_as_the_per_record_rule(store):  # noqa: F811
    from speakerflow.ops.query.project import project_rules

    embedder = HashingEmbedder()
    view = GroupView.of(store)
    records = RecordView.of(store)
    config = ResolveConfig()
    checked = 0
    for question in QUESTIONS:
        projection = project_rules(question, store.roster(), store.aliases())
        result = recall(view, question, QueryConfig().recall, embedder)
        words = set(query_terms(projection.issue))
        weight = sum(records.idf.get(w, max(records.idf.values())) for w in words) or 1.0
        dense = _dense_sims(store, records, config.layers, projection.question, embedder)
        got = _relevance(
            view,
            records,
            result.fused,
            words,
            weight,
            dense,
            float(result.fused.max()),
            config,
            result.pool,
        )
        want = _relevance_per_record(
            view, records, result.fused, projection, config, embedder, result.pool
        )
        usable = records.in_layers(config.layers)  # only these are ever scored by a row
        assert len(got) == len(want) == len(usable)
        for g, w, u in zip(got, want, usable, strict=True):
            assert not u or math.isclose(g, w, rel_tol=1e-6, abs_tol=1e-9), question
        checked += sum(1 for w in want if w > 0)
    assert checked > 0  # some records matched: the comparison is not all zeros


def test_rank_of_breaks_ties_by_position():
    scores = np.array([0.5, 2.0, 0.5, 0.0, 2.0, 1.0])
    assert rank_of(scores).tolist() == [4.0, 1.0, 5.0, 6.0, 2.0, 3.0]


def test_snapshot_key_search_matches_its_id_search(tmp_path):
    with Memory(home=tmp_path, embedder="hashing") as mem:
        mem.add("team", BUNDLED_SAMPLE)
        snap = mem.snapshot("team")
        flt = SearchFilter(kind="message")
        for q in ("offsite Porto", "hotel river", "budget per person", "Lisbon"):
            hits = snap.search(q, 50, flt)
            keys, scores = snap.search_keys(q, 50, flt)
            assert keys == [doc_key(h.doc_id) for h in hits] and len(keys) > 0
            assert scores == pytest.approx([h.score for h in hits])
        # messages appended after the snapshot (their write pending) stay out of both
        mem.append(
            "team",
            [
                {
                    "msg_id": "late-1",
                    "ts": "2026-05-20T10:00:00Z",
                    "speaker": "Ana",
                    "text": "Porto offsite photos are up, Porto was great",
                }
            ],
            pending_write=True,
        )
        assert mem.snapshot("team") is snap
        keys, _ = snap.search_keys("Porto offsite", 100, flt)
        assert doc_key("late-1") not in keys
        assert keys == [doc_key(h.doc_id) for h in snap.search("Porto offsite", 100, flt)]


def test_memory_serves_a_users_pipeline(tmp_path):
    loaded = load(BUNDLED_SAMPLE, "jsonl", group="team")[0][1]
    seen: list[int] = []

    def count(table, ctx):  # an Arrow operator of the user's, between Select and Resolve
        seen.append(table.num_rows)
        return table

    steps = query_pipeline(CFG).steps
    mine = (
        steps[0]
        >> steps[1]
        >> steps[2]
        >> Lambda(count, name="count", passthrough=True)
        >> steps[3]
    )
    mine = mine >> steps[4] >> steps[5]
    with Memory(home=tmp_path / "a", embedder="hashing") as default:
        default.add("team", loaded.to_pylist())
        with Memory(home=tmp_path / "b", embedder="hashing", pipeline=mine) as served:
            served.add("team", loaded.to_pylist())
            for question in QUESTIONS:
                a, cited_a = default.ask_cited("team", question)
                b, cited_b = served.ask_cited("team", question)
                _same(a, b)
                assert cited_a == cited_b
                # the cited messages are shared (frozen) objects, validated once per table
                again = default.ask_cited("team", question)[1]
                assert all(x is y for x, y in zip(again, cited_a, strict=True))
    assert len(seen) == len(QUESTIONS)  # the user's operator ran once per ask


def test_memory_refuses_a_pipeline_that_cannot_answer(tmp_path):
    with pytest.raises(ValueError, match="cannot answer questions"):
        Memory(
            home=tmp_path,
            embedder="hashing",
            pipeline=query_pipeline(CFG).steps[0] >> Lambda(lambda t, c: t, name="noop"),
        )

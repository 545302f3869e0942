"""The query stages as operators: declared columns, a user-built pipeline on the in-memory
store, and the typed batches the stages hand on identical to the Arrow tables they make."""

import pyarrow as pa
import pytest
from test_query_path import store  # noqa: F401 - the shared fixture (messages + hand-made records)

from speakerflow.graphs import GroupStore
from speakerflow.ops import SchemaMismatchError
from speakerflow.ops.backends.base import ScriptedChat
from speakerflow.ops.core import registry
from speakerflow.ops.core.base import Context
from speakerflow.ops.loaders import load
from speakerflow.ops.query.answer import Answer
from speakerflow.ops.query.compose import Compose
from speakerflow.ops.query.project import Project
from speakerflow.ops.query.query_tables import (
    PROJECTION_COLUMNS,
    candidates_table,
    evidence_items,
    evidence_table,
    projections,
)
from speakerflow.ops.query.recall import Recall
from speakerflow.ops.query.resolve import Resolve
from speakerflow.ops.query.select import Select
from speakerflow.pipelines.query_path import (
    ABLATIONS,
    QueryConfig,
    answer_question,
    embedder_for,
    query_context,
    query_pipeline,
)
from speakerflow.schemas import EVIDENCE_SCHEMA
from speakerflow.settings import BUNDLED_SAMPLE

CFG = QueryConfig(embedder="hashing")
QUESTIONS = [
    "Which hotel near the river?",
    "What did the group decide about the offsite?",
    "Where does Dev live?",
    "How did where Dev lives change?",
    "What does each person prefer for the offsite city?",
    "What does Ben think of Chloe?",
    "What is the wifi password?",
    "When did Dev move to Vienna?",
]


def test_each_operator_declares_what_it_consumes_and_adds():
    expect = {
        "project": ({"question"}, {"question_id", *PROJECTION_COLUMNS}),
        "recall": ({"question"}, {"question_id", "pool", "fused"}),
        "select": (
            {"question_id", "pool", "fused", *PROJECTION_COLUMNS},
            {"question_id", "selected"},
        ),
        "resolve": (
            {"question_id", "pool", "fused", *PROJECTION_COLUMNS},
            {"question_id", "memory"},
        ),
        "compose": (
            {"question_id", "selected", "memory", *PROJECTION_COLUMNS},
            {"question_id", "evidence", "context", "tokens", "cited_ids"},
        ),
        "answer": (
            {"question_id", "evidence", "context", *PROJECTION_COLUMNS},
            {"question_id", "answer", "answer_said", "answer_quote"},
        ),
    }
    for name, (consumes, produces) in expect.items():
        cls = registry.get(name)
        assert set(cls.consumes) == consumes and set(cls.produces.names) == produces, name
        assert cls.passthrough, f"{name} must hand on its input columns"
    # today's budgets are the configs' defaults
    assert (
        Select().config.top_k == 10
        and Select().config.max_anchors == 2
        and Select().config.ask_pool == 20
    )
    assert Resolve().config.k == 2 and Resolve().config.source_k == 1 and Recall().config.pool == 40


def test_a_stage_without_its_inputs_upstream_is_refused(store):  # noqa: F811
    # every query stage hands its input on, so a column nobody upstream adds becomes a
    # requirement of the pipeline's input, checked before anything runs
    with pytest.raises(SchemaMismatchError, match="selected"):
        (Project() >> Recall() >> Resolve() >> Compose())(
            pa.table({"question": ["Which hotel?"]}), Context(store=store)
        )
    with pytest.raises(SchemaMismatchError, match="pool"):
        (Project() >> Select())(pa.table({"question": ["Which hotel?"]}), Context(store=store))


def test_user_pipeline_runs_several_questions_on_the_in_memory_store(store):  # noqa: F811
    pipe = (
        Project()
        >> Recall(pool=6)
        >> Select(top_k=3, ask=False)
        >> Resolve(k=1)
        >> Compose()
        >> Answer()
    )
    questions = pa.table(
        {
            "question_id": ["hotel", "offsite"],
            "question": [
                "Which hotel near the river?",
                "What did the group decide about the offsite?",
            ],
        }
    )
    out = pipe(questions, Context(store=store, backends={"embedder": embedder_for(CFG)}))
    assert out.num_rows == 2 and out["question_id"].to_pylist() == ["hotel", "offsite"]
    assert all(len(s) <= 3 for s in out["selected"].to_pylist())
    assert all(len(p) <= 6 for p in out["pool"].to_pylist())
    assert "m5" in out["cited_ids"][0].as_py()[:2] and "Porto" in out["answer"][1].as_py()
    flat = evidence_table(out)
    assert flat.schema.names == ["question_id", *EVIDENCE_SCHEMA.names]
    assert set(flat["question_id"].to_pylist()) == {"hotel", "offsite"}
    assert candidates_table(out, "selected")["msg_id"].to_pylist()  # flattens with ranks
    stats = pipe.stats()
    assert stats["select"]["rows_in"] == 2 and stats["compose"]["rows_out"] == 2
    assert stats["resolve"]["items"] > 0 and stats["compose"]["context_tokens"] == sum(
        out["tokens"].to_pylist()
    )
    assert all(stats[s]["model_calls"] == 0 for s in stats)  # rules: no model


def test_repeated_question_ids_are_refused(store):  # noqa: F811
    with pytest.raises(ValueError, match="question_id repeats"):
        Project()(
            pa.table({"question_id": ["a", "a"], "question": ["x", "y"]}), Context(store=store)
        )


def _same_stage_by_stage(store, question, config) -> None:  # noqa: F811
    """``answer_question`` (typed batches between the stages) against the same pipeline run
    one stage at a time on Arrow tables (each stage's output made a table, read back by the
    next): what a custom Arrow operator between two stages sees."""
    res = answer_question(store, question, config)
    table, ctx = pa.table({"question": [question]}), query_context(store, config)
    for step in query_pipeline(config).steps:
        table = step(table, ctx)
    assert res.evidence == evidence_items(table)[0], question
    assert res.projection == projections(table)[0]
    assert (res.context, res.tokens) == (table["context"][0].as_py(), table["tokens"][0].as_py())
    assert res.cited_ids() == table["cited_ids"][0].as_py()
    assert res.answer == (table["answer"][0].as_py() if config.answer_question else "")


@pytest.mark.parametrize("ablate", [None, *ABLATIONS])
def test_typed_batches_give_what_the_stages_tables_give(store, ablate):  # noqa: F811
    config = CFG.model_copy(update={"ablate": ablate})
    for question in QUESTIONS:
        _same_stage_by_stage(store, question, config)


def test_typed_batches_match_on_the_bundled_sample_with_asks():
    s = GroupStore("/tmp/unused", "sample", in_memory=True)
    s.append_messages(load(BUNDLED_SAMPLE, "jsonl", group="sample")[0][1])
    for question in [
        "Where will the offsite be?",
        "Who prefers which city?",
        "When is the deadline?",
        "What did Ana say about the budget spreadsheet numbers?",
    ]:
        _same_stage_by_stage(s, question, CFG)


def test_chat_select_and_answer_meter_model_calls(store):  # noqa: F811
    chat = ScriptedChat(
        [
            '{"ranked": [2, 1], "expand": []}',
            '{"enough": true, "ask": ""}',
            "Ben: the Ribeira hotel",
        ]
    )
    pipe = (
        Project()
        >> Recall(pool=4)
        >> Select(top_k=2)
        >> Resolve()
        >> Compose()
        >> Answer(backend="chat")
    )
    out = pipe(
        pa.table({"question": ["Which hotel near the river?"]}),
        Context(store=store, backends={"select": chat, "answer": chat}),
    )
    assert out["answer"][0].as_py() == "Ben: the Ribeira hotel"
    stats = pipe.stats()
    assert stats["select"]["model_calls"] == 2 and stats["select"]["tokens"] > 0
    assert stats["answer"]["model_calls"] == 1 and stats["project"]["model_calls"] == 0
    with pytest.raises(ValueError, match="ctx.backends"):
        (Project() >> Recall() >> Select() >> Resolve() >> Compose() >> Answer(backend="chat"))(
            pa.table({"question": ["x"]}), Context(store=store)
        )


def test_answer_question_with_chat_asks_it_to_project_select_and_answer(store):  # noqa: F811
    chat = ScriptedChat(
        [
            '{"issue": "hotel", "rows": ["ALL"], "tense": "head"}',
            '{"ranked": [1], "expand": []}',
            '{"enough": true, "ask": ""}',
            "Ben: the Ribeira hotel",
        ]
    )
    res = answer_question(
        store, "Which hotel near the river?", CFG.model_copy(update={"backend": "chat"}), chat=chat
    )
    assert res.projection.issue == "hotel" and res.answer == "Ben: the Ribeira hotel"
    assert (
        len(chat.calls) == 4 and res.model_tokens > 0
    )  # project, rank, sufficiency, answer: all metered

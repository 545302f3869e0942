"""The SpeakerMem query path for one question over one group's store.

Project -> System 1 (Recall -> Select -> Expand -> Sufficiency/ASK -> top-k)
        -> System 2 (rows -> k per row + source-k -> head/full -> fallback/empty rows)
        -> Compose -> Answer.

Each stage is a registered operator; :func:`query_pipeline` composes them
(``Project >> Recall >> Select >> Resolve >> Compose >> Answer``) and
:func:`answer_question` runs that pipeline for one question: the one query path of the CLI,
``Memory`` (so the server and MCP), ``eval`` and Dagster. The stages hand typed batches on
(:mod:`speakerflow.ops.core.batch`), so a question builds no Arrow table between them; a
custom pipeline (another operator in between, a stage replaced) is served the same way
(``answer_question(..., pipeline=p)``, ``Memory(pipeline=p)``).

>>> from speakerflow.graphs import GroupStore
>>> from speakerflow.ops.loaders import load
>>> from speakerflow.settings import BUNDLED_SAMPLE
>>> store = GroupStore("/tmp/unused", "sample", in_memory=True)
>>> _ = store.append_messages(load(BUNDLED_SAMPLE, "jsonl", group="sample")[0][1])
>>> result = answer_question(store, "Where will the offsite be?", QueryConfig(embedder="hashing"))
>>> "s2-t05" in result.cited_ids(10)
True
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from speakerflow.ops.core import Pipeline
from speakerflow.ops.core.base import Batch, Context, Operator, OperatorConfig
from speakerflow.ops.core.registry import register
from speakerflow.ops.query.answer import Answer, AnswerConfig
from speakerflow.ops.query.compose import Compose, ComposeConfig
from speakerflow.ops.query.project import Project, ProjectConfig
from speakerflow.ops.query.query_tables import (
    ANSWER_QUOTE,
    ANSWER_SAID,
    ANSWERS,
    COMPOSED,
    PROJECTION,
    PROJECTION_COLUMNS,
    QUESTIONS,
    Composed,
)
from speakerflow.ops.query.recall import Recall, RecallConfig
from speakerflow.ops.query.resolve import Resolve, ResolveConfig
from speakerflow.ops.query.select import Select, SelectConfig
from speakerflow.ops.text.embed import Embedder, shared_embedder
from speakerflow.schemas import EvidenceItem, Projection
from speakerflow.schemas.records import GROUP_OWNER

#: What ``ablate`` may switch off: System 1, all of System 2, its GROUP rows or PERSON rows.
ABLATIONS = ("s1", "s2", "s2-group", "s2-person")


class QueryConfig(OperatorConfig):
    """Everything the query path needs; defaults are the paper's budgets.

    ``embedder``: ``minilm`` (dense recall), ``hashing`` (test double) or ``none``.
    ``backend``: ``rules`` for Project/Select/Answer, or ``chat`` to use ``chat`` (a
    ChatBackend passed to :func:`answer_question`) for all three.
    ``ablate``: one of :data:`ABLATIONS` or ``None``.
    """

    embedder: str = "minilm"
    backend: str = "rules"
    recall: RecallConfig = RecallConfig()
    select: SelectConfig = SelectConfig()
    resolve: ResolveConfig = ResolveConfig()
    compose: ComposeConfig = ComposeConfig()
    answer: AnswerConfig = AnswerConfig()
    ablate: str | None = None
    answer_question: bool = True

    def model_post_init(self, _ctx: Any) -> None:
        if self.ablate is not None and self.ablate not in ABLATIONS:
            raise ValueError(f"ablate={self.ablate!r}: use one of {ABLATIONS} or None")
        if self.backend not in ("rules", "chat"):
            raise ValueError(f"backend={self.backend!r}: use 'rules' or 'chat' (and pass chat=...)")


@dataclass
class QueryResult:
    """The answer and everything it rests on.

    ``latency_ms`` covers projection, retrieval and composition (not the answerer);
    ``answer_ms`` the answerer; ``tokens`` the context tokens; ``model_tokens`` tokens
    spent by chat backends (0 with rules). ``said``: the day the answering message was said
    when a date answer means another day ("4 May 2026" said on "27 April 2026"), else
    ``None``; shown beside the answer, never inside it.
    """

    question: str
    answer: str
    projection: Projection
    evidence: list[EvidenceItem]
    context: str
    tokens: int
    latency_ms: float
    answer_ms: float = 0.0
    model_tokens: int = 0
    stats: dict[str, float] = field(default_factory=dict)
    #: the cited ids in composed order as Compose fused them (``None``: evidence order)
    cited: list[str] | None = None
    said: str | None = None
    #: with ``AnswerConfig.short_answer``: the whole line the short answer was taken from
    quote: str | None = None

    def cited_ids(self, limit: int | None = None) -> list[str]:
        """Distinct message ids the evidence cites, in composed order."""
        return Composed(self.evidence, self.context, self.tokens, self.cited).cited_ids(limit)

    def to_dict(self) -> dict:
        return {
            "question": self.question,
            "answer": self.answer,
            "said": self.said,
            "quote": self.quote,
            "projection": self.projection.model_dump(),
            "evidence": [e.model_dump() for e in self.evidence],
            "context_tokens": self.tokens,
            "latency_ms": round(self.latency_ms, 2),
            "answer_ms": round(self.answer_ms, 2),
            "model_tokens": self.model_tokens,
        }


_EMBEDDERS: dict[str, Embedder | None] = {}


def embedder_for(config: QueryConfig) -> Embedder | None:
    """One embedder object per kind per process (the model loads once, shared with the
    Writer: :func:`~speakerflow.ops.text.embed.shared_embedder`; ``Memory`` may wrap it here
    in a batching one)."""
    if config.embedder not in _EMBEDDERS:
        _EMBEDDERS[config.embedder] = shared_embedder(config.embedder)
    return _EMBEDDERS[config.embedder]


class DropGroupRow(Operator):
    """The ``s2-group`` ablation: the projection's rows without ``GROUP``."""

    name = "drop_group_row"
    consumes = PROJECTION_COLUMNS
    produces = pa.schema([("rows", pa.list_(pa.string()))])
    passthrough = True

    def run_batch(self, batch: Batch, ctx: Context) -> Batch:
        dropped = [
            p.model_copy(update={"rows": [r for r in p.rows if r != GROUP_OWNER]})
            for p in batch.get(PROJECTION)
        ]
        return batch.put(PROJECTION, dropped)


def _layers(config: QueryConfig) -> tuple[str, ...]:
    """System 2 layers left by the config's ablation."""
    layers = config.resolve.layers
    if config.ablate == "s2-group":
        return tuple(x for x in layers if not x.startswith("group_"))
    if config.ablate == "s2-person":
        return tuple(x for x in layers if not x.startswith("per_speaker"))
    return layers


def _recall_config(config: QueryConfig) -> RecallConfig:
    """System 1 recall for the config's ablation: the ``records`` channel is System 2 (off
    under ``s2``; only the layers left under ``s2-group`` / ``s2-person``)."""
    rc = config.recall
    if config.ablate == "s2":
        return rc.model_copy(update={"weights": {**rc.weights, "records": 0.0}})
    layers = tuple(x for x in rc.record_layers if x in _layers(config))
    return rc if layers == rc.record_layers else rc.model_copy(update={"record_layers": layers})


def query_pipeline(config: QueryConfig | None = None, chat: bool = False) -> Pipeline:
    """The query path as one operator pipeline for ``config``:
    ``Project >> Recall >> Select >> Resolve >> Compose >> Answer`` (no Answer when
    ``answer_question`` is off; ablations switch a track off or drop the GROUP row).

    ``chat=True``: Project, Select and Answer use the chat backends of the context (see
    :func:`query_context`). Run it on a ``question`` table with a :class:`Context` whose
    ``store`` is the group's store.
    """
    config = config or QueryConfig()
    layers = _layers(config)
    steps: list[Operator] = [Project(ProjectConfig(backend="chat" if chat else "rules"))]
    if config.ablate == "s2-group":
        steps.append(DropGroupRow())
    recall_cfg = _recall_config(config)
    steps += [
        Recall(recall_cfg),
        Select(
            config.select.model_copy(
                update={
                    "ask_recall": config.select.ask_recall or recall_cfg,
                    "enabled": config.select.enabled and config.ablate != "s1",
                }
            )
        ),
        Resolve(
            config.resolve.model_copy(
                update={
                    "layers": layers,
                    "enabled": config.resolve.enabled and config.ablate != "s2",
                }
            )
        ),
        Compose(config.compose),
    ]
    if config.answer_question:
        steps.append(
            Answer(config.answer.model_copy(update={"backend": "chat" if chat else "rules"}))
        )
    return Pipeline(*steps)


def query_context(store, config: QueryConfig | None = None, chat=None) -> Context:
    """The context :func:`query_pipeline` runs in: the store, the embedder and (when given)
    ``chat`` as the Project, Select and Answer backend."""
    backends: dict[str, Any] = {"embedder": embedder_for(config or QueryConfig())}
    if chat is not None:
        backends.update(project=chat, select=chat, answer=chat)
    return Context(store=store, backends=backends)


#: what a pipeline must hand back for :func:`answer_question` to read its result
RESULT_COLUMNS = frozenset({*PROJECTION_COLUMNS, *COMPOSED.names})

_PIPELINES: dict[tuple[int, bool], tuple[QueryConfig, Pipeline]] = {}


def default_pipeline(config: QueryConfig, chat: bool = False) -> Pipeline:
    """:func:`query_pipeline` for ``config``, built once per config object (a template:
    runs use its :meth:`~speakerflow.ops.core.base.Pipeline.fresh` copies)."""
    key = (id(config), chat)
    found = _PIPELINES.get(key)
    if found is None or found[0] is not config:
        if len(_PIPELINES) > 64:
            _PIPELINES.clear()
        found = _PIPELINES[key] = (config, query_pipeline(config, chat=chat))
    return found[1]


def check_query_pipeline(pipeline: Pipeline) -> Pipeline:
    """``pipeline`` if it can serve questions (takes ``question``, hands back the projection
    and the composed evidence), else a ValueError naming what it lacks."""
    missing = sorted(RESULT_COLUMNS - pipeline.output_columns)
    if missing or "question" not in pipeline.consumes:
        raise ValueError(
            f"pipeline {pipeline!r} cannot answer questions: it must consume 'question' "
            f"and hand on the projection and Compose's columns (missing: {missing})"
        )
    return pipeline


def answer_question(
    store, question: str, config: QueryConfig | None = None, chat=None, pipeline=None
) -> QueryResult:
    """Answer ``question`` from ``store`` (a :class:`GroupStore`, in memory or on disk) by
    running the query pipeline on a one-row question batch: :func:`query_pipeline` for
    ``config``, or ``pipeline`` (a custom one, see :func:`check_query_pipeline`)."""
    config = config or QueryConfig()
    if config.backend == "chat" and chat is None:
        raise ValueError("backend='chat' needs chat=<a ChatBackend>; see speakerflow.ops.backends")
    use_chat = chat if config.backend == "chat" else None
    start = time.perf_counter()
    template = (
        default_pipeline(config, use_chat is not None)
        if pipeline is None
        else check_query_pipeline(pipeline)
    )
    run = template.fresh()
    out = run.call_batch(Batch.of({QUESTIONS: [question]}), query_context(store, config, use_chat))
    return _result(question, run, out, (time.perf_counter() - start) * 1000)


def _result(question: str, run: Pipeline, out: Batch, total_ms: float) -> QueryResult:
    """The :class:`QueryResult` of one question from the batch and the stats of ``run``."""
    answer_ms = sum(s.stats.seconds for s in run.steps if isinstance(s, Answer)) * 1000
    extra: dict[str, float] = {}
    for step in run.steps:
        for key, value in step.stats.extra.items():
            extra[key] = extra.get(key, 0) + value
    composed = out.get(COMPOSED)[0]
    said = out.get(ANSWER_SAID)[0] if "answer_said" in out.column_names else None
    quote = out.get(ANSWER_QUOTE)[0] if "answer_quote" in out.column_names else None
    return QueryResult(
        question,
        out.get(ANSWERS)[0] if "answer" in out.column_names else "",
        out.get(PROJECTION)[0],
        composed.evidence,
        composed.context,
        composed.tokens,
        total_ms - answer_ms,
        answer_ms,
        sum(s.stats.tokens for s in run.steps),
        extra,
        composed.cited_ids(),
        said,
        quote,
    )


ANSWERS_SCHEMA = pa.schema(
    [
        ("question", pa.string()),
        ("answer", pa.string()),
        ("cited_ids", pa.list_(pa.string())),
        ("context_tokens", pa.int64()),
        ("latency_ms", pa.float64()),
    ]
)


@register
class AnswerQuestions(Operator):
    """``question`` table -> one answer row per question (answer, cited message ids in composed
    order, context tokens, latency). Needs ``ctx.store``; ``ctx.backends["chat"]`` is used when
    the config's ``backend`` is ``chat``. The config is a :class:`QueryConfig`."""

    name = "answer_questions"
    consumes = ("question",)
    produces = ANSWERS_SCHEMA
    Config = QueryConfig
    config: QueryConfig

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        rows = []
        for question in table["question"].to_pylist():
            res = answer_question(ctx.store, question, self.config, chat=ctx.backends.get("chat"))
            self.stats.tokens += res.model_tokens
            rows.append(
                {
                    "question": question,
                    "answer": res.answer,
                    "cited_ids": res.cited_ids(),
                    "context_tokens": res.tokens,
                    "latency_ms": res.latency_ms,
                }
            )
        return pa.Table.from_pylist(rows, schema=ANSWERS_SCHEMA)

"""The SpeakerMem query path for one question over one group's store.

Project -> System 1 (Recall -> Select -> Expand -> Sufficiency/ASK -> top-k)
        -> System 2 (rows -> k per row + source-k -> head/full -> fallback/empty rows)
        -> Compose -> Answer.

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

from speakerflow.ops.answer import NO_INFO, AnswerConfig, answer_chat, answer_rules
from speakerflow.ops.base import Context, Operator, OperatorConfig
from speakerflow.ops.compose import ComposeConfig, Composed, compose
from speakerflow.ops.embed import Embedder, make_embedder
from speakerflow.ops.project import Project, ProjectConfig
from speakerflow.ops.recall import GroupView, RecallConfig, recall
from speakerflow.ops.registry import register
from speakerflow.ops.resolve import ResolveConfig, resolve_rows
from speakerflow.ops.select import SelectConfig, select_s1
from speakerflow.schemas import EvidenceItem, Projection

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
    spent by chat backends (0 with rules).
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

    def cited_ids(self, limit: int | None = None) -> list[str]:
        """Distinct message ids the evidence cites, in composed order."""
        return Composed(self.evidence, self.context, self.tokens).cited_ids(limit)

    def to_dict(self) -> dict:
        return {"question": self.question, "answer": self.answer, "projection": self.projection.model_dump(),
                "evidence": [e.model_dump() for e in self.evidence], "context_tokens": self.tokens,
                "latency_ms": round(self.latency_ms, 2), "answer_ms": round(self.answer_ms, 2),
                "model_tokens": self.model_tokens}


_EMBEDDERS: dict[str, Embedder | None] = {}


def embedder_for(config: QueryConfig) -> Embedder | None:
    """One embedder object per kind per process (the model loads once)."""
    if config.embedder not in _EMBEDDERS:
        _EMBEDDERS[config.embedder] = make_embedder(config.embedder)
    return _EMBEDDERS[config.embedder]


def answer_question(store, question: str, config: QueryConfig | None = None, chat=None) -> QueryResult:
    """Answer ``question`` from ``store`` (a :class:`GroupStore`, in memory or on disk)."""
    config = config or QueryConfig()
    if config.backend == "chat" and chat is None:
        raise ValueError("backend='chat' needs chat=<a ChatBackend>; see speakerflow.ops.backends")
    use_chat = chat if config.backend == "chat" else None
    start = time.perf_counter()
    embedder = embedder_for(config)
    view = GroupView.of(store)
    project = Project(ProjectConfig(backend="chat" if use_chat else "rules"))
    projection = project.project(question, store.roster(), store.aliases(), use_chat)
    if config.ablate == "s2-group":
        projection = projection.model_copy(update={"rows": [r for r in projection.rows if r != "GROUP"]})
    result = recall(view, question, config.recall, embedder)
    selected = [] if config.ablate == "s1" else select_s1(
        view, result, projection, config.recall, config.select, embedder, use_chat, project.stats)
    s2_items: list[dict] = []
    if config.ablate != "s2":
        layers = config.resolve.layers
        if config.ablate == "s2-group":
            layers = tuple(x for x in layers if not x.startswith("group_"))
        elif config.ablate == "s2-person":
            layers = tuple(x for x in layers if not x.startswith("per_speaker"))
        s2_items = resolve_rows(view, result.fused, projection, store.roster(),
                                config.resolve.model_copy(update={"layers": layers}), embedder, result.pool)
    composed = compose(view, selected, s2_items, projection, config.compose)
    latency = (time.perf_counter() - start) * 1000
    answer, model_tokens = "", project.stats.tokens
    t1 = time.perf_counter()
    if config.answer_question:
        if use_chat is not None:
            answer, used = answer_chat(projection, composed.context, use_chat, config.answer)
            model_tokens += used
        else:
            answer = answer_rules(projection, composed.evidence, config.answer)
    return QueryResult(question, answer or NO_INFO if config.answer_question else "", projection,
                       composed.evidence, composed.context, composed.tokens, latency,
                       (time.perf_counter() - t1) * 1000, model_tokens, dict(project.stats.extra))



ANSWERS_SCHEMA = pa.schema([("question", pa.string()), ("answer", pa.string()), ("cited_ids", pa.list_(pa.string())),
                            ("context_tokens", pa.int64()), ("latency_ms", pa.float64())])


@register
class AnswerQuestions(Operator):
    """``question`` table -> one answer row per question (answer, cited message ids in composed
    order, context tokens, latency). Needs ``ctx.store``; ``ctx.backends["chat"]`` is used when
    the config's ``backend`` is ``chat``. The config is a :class:`QueryConfig`."""

    name = "answer_questions"
    consumes = ("question",)
    produces = ANSWERS_SCHEMA
    Config = QueryConfig

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        rows = []
        for question in table["question"].to_pylist():
            res = answer_question(ctx.store, question, self.config, chat=ctx.backends.get("chat"))
            self.stats.tokens += res.model_tokens
            rows.append({"question": question, "answer": res.answer, "cited_ids": res.cited_ids(),
                         "context_tokens": res.tokens, "latency_ms": res.latency_ms})
        return pa.Table.from_pylist(rows, schema=ANSWERS_SCHEMA)

"""Judge-free evaluation: evidence recall@B, token-F1, latency and context size per system.

:func:`run_eval` ingests the data into a store home (a temp folder unless ``home`` is
given), runs the rules Writer for ``speakerflow``, caches message embeddings (ingest-time
work, timed separately), then answers every usable question and measures:

- ``evidence_recall``: mean recall@B of the gold evidence among the first B distinct cited
  message ids (keys ``"5"``, ``"10"``, ``"20"``), overall and ``by_category``;
- ``token_f1``: the paper's set-based token-F1 of the answer (in [0, 1]);
- ``latency_ms``: p50/p95 per question of projection + retrieval + composition (the
  question embedding included; message embeddings are cached beforehand);
- ``context_tokens``: mean tokens of the composed context;
- ``by_group``: questions and ``evidence_recall`` per conversation / network;
- ``splits`` (LoCoMo): the halves named ``dev`` (conv-26..43) and ``test`` (conv-44..50),
  each with its groups, questions, ``evidence_recall`` and ``by_category``. Both halves are
  dev data (the query path was tuned looking at both); the split is a diagnostic of how much
  recall moves between conversations, not a held-out estimate.

With an ablation beside the full system, :func:`~.eval_report.ablation_gain` says how sure
the ablated part's gain is: paired by question, resampled by group (a held-out set is new
groups). The Markdown summary, plot and files are written by :mod:`.eval_report`.

``groups`` (CLI ``--groups``) restricts the run to some conversations/networks (``dev`` and
``test`` name the LoCoMo halves); only those groups are ingested.

Systems: ``bm25`` (flat BM25, Tantivy with its English stemmer), ``bm25-plain`` (flat BM25
without stemming, the pure-Python :class:`~speakerflow.graphs.InMemoryIndex`: the setting of
the independent bm25s baseline), ``dense`` (MiniLM), ``hybrid`` (BM25 + MiniLM,
reciprocal-rank fusion) and ``speakerflow`` (the full query path, rules backend). The
baselines rank single messages and answer with the same extractive answerer.
For recall@20 to be measurable the System 1 top-k is raised to ``max(k)`` (the first
10 cited ids are the same as with top-k 10, since the list is cut only at the end).
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from typing import Any

import numpy as np
from tqdm import tqdm

from speakerflow.graphs import Home, InMemoryIndex
from speakerflow.ops.query.answer import answer_rules
from speakerflow.ops.query.channels import RecallConfig
from speakerflow.ops.query.compose import count_tokens
from speakerflow.ops.query.group_view import GroupView
from speakerflow.ops.query.judge import evidence_recall, token_f1
from speakerflow.ops.query.project import project_rules
from speakerflow.ops.query.recall import recall, warm_message_embeddings
from speakerflow.ops.query.record_view import warm_record_embeddings
from speakerflow.ops.text.embed import clear_query_memo
from speakerflow.pipelines.query_path import ABLATIONS, QueryConfig, answer_question, embedder_for
from speakerflow.schemas import EvidenceItem
from speakerflow.words import ENGLISH_STOPWORDS

from .eval_report import ablation_gain, ablation_line, markdown_summary, write_outputs
from .percentiles import pct
from .qa_data import LOCOMO_SPLITS, QAData, load_qa

#: the report helpers live in :mod:`.eval_report`; these names stay importable from here
__all__ = [
    "SYSTEMS",
    "ablation_gain",
    "ablation_line",
    "markdown_summary",
    "run_eval",
    "summarise",
    "write_outputs",
]

SYSTEMS = ("speakerflow", "bm25", "bm25-plain", "dense", "hybrid")
LEXICAL = ("bm25", "bm25-plain")  # systems that need no embedder
BASELINE_WEIGHTS = {
    "bm25": {"bm25": 1.0},
    "dense": {"dense": 1.0},
    "hybrid": {"bm25": 1.0, "dense": 1.0},
}


_PLAIN_INDEX: dict[str, tuple[InMemoryIndex, dict[str, int]]] = {}
#: The common English stopword list (NLTK's), as bm25s uses for ``stopwords="en"``.
_WORD2 = re.compile(r"(?u)\b\w\w+\b")


def _bm25s_terms(text: str) -> list[str]:
    """bm25s's default analysis: lower-case, words of two or more characters, no stopwords."""
    return [w for w in _WORD2.findall(text.lower()) if w not in ENGLISH_STOPWORDS]


def _plain_bm25(view: GroupView, question: str, depth: int) -> list[tuple[int, float]]:
    """Unstemmed flat BM25 over one group's messages: (row, score) pairs, best first."""
    key = str(view.store.root)
    if key not in _PLAIN_INDEX:
        index = InMemoryIndex(k1=1.5, b=0.75, tokenize=_bm25s_terms)  # bm25s defaults
        index.add(
            [{"doc_id": mid, "text": text} for mid, text in zip(view.ids, view.texts, strict=True)]
        )
        _PLAIN_INDEX[key] = (index, {mid: i for i, mid in enumerate(view.ids)})
    index, row_of = _PLAIN_INDEX[key]
    return [(row_of[h.doc_id], h.score) for h in index.search(question, depth)]


def _baseline(store, question: str, system: str, depth: int, config: QueryConfig):
    """Rank single messages with one baseline; returns (answer, cited ids, context tokens)."""
    view = GroupView.of(store)
    if system == "bm25-plain":
        ranked = _plain_bm25(view, question, depth)
    else:
        rc = RecallConfig(pool=depth, weights=BASELINE_WEIGHTS[system])
        result = recall(view, question, rc, embedder_for(config) if "dense" in rc.weights else None)
        ranked = [(r, float(result.fused[r])) for r in result.pool]
    evidence = [
        EvidenceItem(
            rank=i,
            kind="excerpt",
            text=view.texts[r],
            msg_ids=[view.ids[r]],
            speaker=view.speakers[r],
            ts=view.ts[r],
            score=score,
        )
        for i, (r, score) in enumerate(ranked)
    ]
    projection = project_rules(question, store.roster(), store.aliases())
    context = "\n".join(f"[{e.msg_ids[0]}] {e.speaker}: {e.text}" for e in evidence)
    return (
        answer_rules(projection, evidence),
        [e.msg_ids[0] for e in evidence],
        count_tokens(context),
    )


def _prepare(
    data: QAData,
    home: Home,
    system: str,
    config: QueryConfig,
    progress: bool = False,
    writer: Any = "rules",
) -> dict[str, float]:
    """Ingest, write (speakerflow, with ``writer``) and cache embeddings; returns seconds per
    step."""
    seconds = {"ingest": 0.0, "write": 0.0, "embed": 0.0}
    embedder = embedder_for(config) if system not in LEXICAL else None
    for gid, table in tqdm(
        data.groups, desc=f"{system}: prepare", unit="group", file=sys.stderr, disable=not progress
    ):
        t0 = time.perf_counter()
        with home.open(gid, writable=True) as store:
            store.append_messages(table)
            t1 = time.perf_counter()
            if system == "speakerflow":
                from speakerflow.pipelines.write_path import write_group

                write_group(store, writer, progress=False)
            t2 = time.perf_counter()
            if embedder is not None:
                warm_message_embeddings(
                    store, embedder, config.recall if system == "speakerflow" else None
                )
                if system == "speakerflow":
                    warm_record_embeddings(store, embedder)
            t3 = time.perf_counter()
        seconds["ingest"] += t1 - t0
        seconds["write"] += t2 - t1
        seconds["embed"] += t3 - t2
    return {k: round(v, 2) for k, v in seconds.items()}


def run_eval(
    data,
    fmt: str,
    system: str = "speakerflow",
    ablate: str | None = None,
    k=(5, 10, 20),
    out=None,
    home=None,
    embedder: str = "minilm",
    limit: int | None = None,
    config: QueryConfig | None = None,
    groups=None,
    progress: bool = False,
    writer: Any = "rules",
) -> dict:
    """Evaluate one system on a QA set (see the module doc); returns the report dict.

    Parameters
    ----------
    data : path of a file or folder (or a loaded :class:`QAData`).
    fmt : ``locomo`` or ``socialmem``.
    ablate : ``s1``, ``s2``, ``s2-group`` or ``s2-person`` (speakerflow only).
    out : when given, the report JSON is written there, plus ``<out>.md`` (a Markdown
        summary) and ``<out>.png`` (recall@k curve).
    home : store home to ingest into (default: a temporary folder, removed afterwards).
    limit : evaluate only the first ``limit`` questions (smoke runs).
    progress : tqdm bars on stderr (groups prepared, questions answered).
    writer : the Writer of ``speakerflow``'s records: a name for
        :func:`~speakerflow.ops.write.writer.registry.make_writer` (``rules``, ``local``, ...)
        or a WriterBackend.
    groups : only these groups (a comma list or a list of ids; ``dev``/``test`` expand to the
        LoCoMo halves of :data:`~speakerflow.benchmarks.qa_data.LOCOMO_SPLITS`).
    config : query settings for ``speakerflow`` (default :class:`QueryConfig()`; the
        embedder, ablation and System 1 top-k are set from the other arguments).
    """
    _check_system(system, ablate)
    ks = tuple(sorted({int(b) for b in k}))
    qa = data if isinstance(data, QAData) else load_qa(data, fmt)
    if groups:
        qa = qa.only(groups)
    questions = qa.questions[:limit] if limit else qa.questions
    tmp = None if home is not None else tempfile.TemporaryDirectory(prefix="speakerflow-eval-")
    home_obj = (
        home if isinstance(home, Home) else Home(home or (tmp.name if tmp is not None else ""))
    )
    config = _query_config(config, system, embedder, ablate, ks)
    try:
        seconds = _prepare(qa, home_obj, system, config, progress, writer)
        clear_query_memo(embedder_for(config))  # every run encodes its questions itself
        rows = _answer_all(home_obj, questions, system, config, ks, progress)
    finally:
        if tmp is not None:
            tmp.cleanup()
    report = summarise(rows, ks, LOCOMO_SPLITS if fmt == "locomo" else None)
    report.update(
        {
            "groups": [gid for gid, _ in qa.groups] if groups else None,
            "system": system,
            "format": fmt,
            "data": str(data) if not isinstance(data, QAData) else fmt,
            "ablate": ablate,
            "writer": (writer if isinstance(writer, str) else getattr(writer, "name", "custom"))
            if system == "speakerflow"
            else None,
            "embedder": config.embedder,
            "skipped": dict(qa.skipped),
            "prepare_seconds": seconds,
            "per_question": rows,
        }
    )
    if out is not None:
        write_outputs(report, out)
    return report


def _check_system(system: str, ablate: str | None) -> None:
    """Refuse an unknown system, or an ablation of another system than ``speakerflow``."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; choose one of {SYSTEMS}")
    if ablate is not None and (system != "speakerflow" or ablate not in ABLATIONS):
        raise ValueError(
            f"--ablate {ablate!r} applies to --system speakerflow only, with one of {ABLATIONS}"
        )


def _query_config(
    config: QueryConfig | None, system: str, embedder: str, ablate: str | None, ks: tuple
) -> QueryConfig:
    """``config`` (default :class:`QueryConfig()`) with the run's embedder (none for a lexical
    system), ablation and a System 1 top-k of the largest budget (at least 10)."""
    base = config or QueryConfig()
    return base.model_copy(
        update={
            "embedder": embedder if system not in LEXICAL else "none",
            "ablate": ablate,
            "select": base.select.model_copy(update={"top_k": max(max(ks), 10)}),
        }
    )


def _answer_all(
    home: Home, questions, system: str, config: QueryConfig, ks, progress: bool = False
) -> list[dict]:
    rows = []
    by_group: dict[str, list] = {}
    for q in questions:
        by_group.setdefault(q.group, []).append(q)
    bar = tqdm(
        total=len(questions),
        desc=f"{system}: questions",
        unit="q",
        file=sys.stderr,
        disable=not progress,
    )
    for gid, qs in by_group.items():
        with home.open(gid) as store:
            for q in qs:
                bar.update(1)
                t0 = time.perf_counter()
                if system == "speakerflow":
                    res = answer_question(store, q.question, config)
                    answer, cited, tokens, latency = (
                        res.answer,
                        res.cited_ids(max(ks)),
                        res.tokens,
                        res.latency_ms,
                    )
                else:
                    answer, cited, tokens = _baseline(store, q.question, system, max(ks), config)
                    latency = (time.perf_counter() - t0) * 1000
                rows.append(
                    {
                        "qid": q.qid,
                        "group": gid,
                        "category": q.category,
                        "recall": {str(b): evidence_recall(cited, q.evidence, b) for b in ks},
                        "token_f1": token_f1(answer, q.answer),
                        "latency_ms": round(latency, 3),
                        "context_tokens": tokens,
                        "answer": answer,
                        "cited": cited[: max(ks)],
                        "gold": list(q.evidence),
                    }
                )
    bar.close()
    return rows


def _recall_means(rows: list[dict], ks) -> dict[str, float]:
    return {
        str(b): round(float(np.mean([r["recall"][str(b)] for r in rows])), 4) if rows else 0.0
        for b in ks
    }


def _by_category(rows: list[dict], ks) -> dict[str, dict]:
    cats = sorted({r["category"] for r in rows})
    return {
        c: {
            "questions": sum(r["category"] == c for r in rows),
            "evidence_recall": _recall_means([r for r in rows if r["category"] == c], ks),
            "token_f1": round(
                float(np.mean([r["token_f1"] for r in rows if r["category"] == c])), 4
            ),
        }
        for c in cats
    }


def summarise(rows: list[dict], ks, splits: dict[str, tuple[str, ...]] | None = None) -> dict:
    """Means over questions: overall, ``by_category``, ``by_group`` and (when ``splits`` name
    groups present in ``rows``) per split, e.g. the two LoCoMo halves."""
    lat = [r["latency_ms"] for r in rows] or [0.0]
    groups = [g for g in dict.fromkeys(r.get("group") for r in rows) if g is not None]
    by_split = {}
    for name, members in (splits or {}).items():
        part = [r for r in rows if r.get("group") in members]
        if part:
            by_split[name] = {
                "groups": [g for g in members if g in groups],
                "questions": len(part),
                "evidence_recall": _recall_means(part, ks),
                "by_category": _by_category(part, ks),
            }
    return {
        "questions": len(rows),
        "evidence_recall": _recall_means(rows, ks),
        "by_category": _by_category(rows, ks),
        "by_group": {
            g: {
                "questions": sum(r.get("group") == g for r in rows),
                "evidence_recall": _recall_means([r for r in rows if r.get("group") == g], ks),
            }
            for g in groups
        },
        "splits": by_split,
        "token_f1": round(float(np.mean([r["token_f1"] for r in rows])), 4) if rows else 0.0,
        "latency_ms": {
            "p50": pct(lat, 50, 2),
            "p95": pct(lat, 95, 2),
        },
        "context_tokens": {
            "mean": round(float(np.mean([r["context_tokens"] for r in rows])), 1) if rows else 0.0
        },
    }

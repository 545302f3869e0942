"""Training pairs for the answer reader (:mod:`speakerflow.ops.query.answer_reader`).

Each question of a QA set (LoCoMo or SocialMemBench, :func:`~speakerflow.benchmarks.qa_data`
shapes) with gold evidence ids and a gold answer becomes one SFT pair: the prompt is
:func:`~speakerflow.ops.query.answer_reader.reader_chat` over :data:`MAX_LINES` messages of its
conversation, the completion the gold answer. The messages stand in for what the query path
composes: the conversation's messages ranked by MiniLM cosine to the question, the gold
evidence put in where the ranking left it out (in place of the lowest-ranked), kept in ranked
order. So the reader learns to find the answer among near misses, as at inference, and every
prompt holds what its answer rests on.

Split by whole conversation: :func:`reader_pairs` takes the groups to train on; the
conversations reported on are never among them (:func:`split_groups`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from speakerflow.ops.query.answer_reader import MAX_LINES, evidence_line, reader_chat
from speakerflow.training.sft import SFTSettings

#: the reader's SFT settings (the shipped adapter's; ``train reader`` flags override some)
READER_SFT = SFTSettings(epochs=1, lr=3e-4, grad_accum=2, max_length=640, lora_r=16, lora_layers=12)


def split_groups(groups: Iterable[str], heldout: Sequence[str]) -> tuple[list[str], list[str]]:
    """(train, held out): every group not named in ``heldout`` trains."""
    names = list(groups)
    unknown = sorted(set(heldout) - set(names))
    if unknown:
        raise ValueError(f"held-out groups {unknown} are not in the data ({sorted(names)})")
    return [g for g in names if g not in heldout], [g for g in names if g in heldout]


def _messages(table: Any) -> list[dict[str, Any]]:
    return table.select(["msg_id", "speaker", "text", "ts"]).to_pylist()


def reader_pairs(
    qa: Any, groups: Sequence[str], embedder: Any, lines: int = MAX_LINES, seed: int = 0
) -> list[dict[str, Any]]:
    """Conversational prompt-completion pairs for the questions of ``groups`` (module doc).
    ``qa`` is a :class:`~speakerflow.benchmarks.qa_data.QAData`-shaped object (``groups`` as
    ``(group_id, table)`` pairs, ``questions`` with ``group``, ``question``, ``answer``,
    ``evidence``); ``embedder`` encodes texts to unit vectors."""
    rng = random.Random(seed)
    tables = dict(qa.groups)
    out: list[dict[str, Any]] = []
    for gid in groups:
        msgs = _messages(tables[gid])
        if not msgs:
            continue
        index = {m["msg_id"]: i for i, m in enumerate(msgs)}
        vecs = embedder.encode([f"{m['speaker']}: {m['text']}" for m in msgs])
        asked = [q for q in qa.questions if q.group == gid and str(q.answer).strip()]
        if not asked:
            continue
        qvecs = embedder.encode([q.question for q in asked])
        for q, qv in zip(asked, qvecs, strict=True):
            gold = [index[e] for e in q.evidence if e in index][:lines]
            if not gold:
                continue
            sims = np.asarray(vecs @ qv)
            ranked = [int(i) for i in np.argsort(-sims)]
            shown = [i for i in ranked if i not in gold][: lines - len(gold)] + gold
            shown.sort(key=lambda i: (-float(sims[i]), rng.random()))
            text_lines = [
                evidence_line(msgs[i]["speaker"], msgs[i]["ts"], msgs[i]["text"]) for i in shown
            ]
            out.append(
                {
                    "prompt": reader_chat(q.question, text_lines),
                    "completion": [{"role": "assistant", "content": str(q.answer).strip()}],
                    "group": gid,
                    "category": q.category,
                    "question_id": q.qid,
                }
            )
    return out


def train_reader(
    sources: Sequence[tuple[str, Any]],
    heldout: Sequence[str],
    out_dir: str | Path,
    base: str = "smollm2-135m",
    settings: SFTSettings = READER_SFT,
    embedder: Any = None,
) -> dict[str, Any]:
    """SFT a LoRA reader adapter over ``base`` on the questions of ``sources`` (``(name,
    data)`` pairs, each QAData-shaped as :func:`reader_pairs` reads), every group in
    ``heldout`` left out; the pooled pairs are shuffled with ``settings.seed``. Writes the
    adapter, ``curve.json`` and ``reader_report.json`` (data, split, settings, figures) in
    ``out_dir`` and returns the report."""
    from speakerflow.ops.text.embed import shared_embedder
    from speakerflow.training.sft import train_sft

    embedder = embedder or shared_embedder("minilm")
    pairs: list[dict[str, Any]] = []
    used: dict[str, dict[str, Any]] = {}
    named = {g for _, data in sources for g, _ in data.groups}
    missing = sorted(set(heldout) - named)
    if missing:
        raise ValueError(f"held-out groups {missing} are in none of the data given")
    for name, data in sources:
        groups = [g for g, _ in data.groups]
        train, held = split_groups(groups, [h for h in heldout if h in groups])
        got = reader_pairs(data, train, embedder, seed=settings.seed)
        used[name] = {"train_groups": train, "heldout_groups": held, "pairs": len(got)}
        pairs += got
    if not pairs:
        raise ValueError("no training pair: every group is held out or has no usable question")
    random.Random(settings.seed).shuffle(pairs)
    report = train_sft(base, pairs, out_dir, settings)
    report.pop("curve", None)
    report = {"base": base, "sources": used, "settings": settings.model_dump(), **report}
    (Path(out_dir) / "reader_report.json").write_text(json.dumps(report, indent=1) + "\n")
    return report

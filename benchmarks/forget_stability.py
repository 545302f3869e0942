"""Forget stability: do other speakers' answers stay the same after ``forget --speaker``?

:func:`run` ingests each group (rules Writer, message and record embeddings), picks the
person to forget (:func:`first_speaker`: the speaker of the group's first message, unless
one is given), and asks every question whose gold evidence holds none of that person's
messages (:func:`other_questions`) twice: before the forget and after
:func:`~speakerflow.pipelines.forget.forget_group` (rules Writer re-deriving); with
``never=True`` also of a group ingested without the person's messages (the counterfactual
"they never spoke"). :func:`compare` counts, over those questions:

* ``answer``: the same answer text;
* ``own`` / ``own_same``: the answers that did not quote the forgotten person before
  (:func:`quotes_any`: no 3- to 5-word run of one of their messages), and how many of those
  read the same after -- an answer that quoted the person must change;
* ``cited``: the same first 10 cited message ids, in order; ``cited_kept``: the other
  speakers' ids among the first 10 before are all still among the first 10 after, in the
  same order (the forgotten person's ids necessarily leave);
* ``gold_before`` / ``gold_kept``: answers that contained the gold answer before
  (:func:`has_gold`: the gold answer's words in order, or a 5-word run of a gold evidence
  message) and how many still do;
* ``causes`` of each changed answer: ``quoted`` (it quoted the forgotten person),
  ``retrieval`` (a message it quoted is no longer in the evidence), ``answerer`` (every
  message it quoted is still in the evidence; the answerer picked another sentence), or
  ``other`` (it quoted no message, e.g. "no information").

``channels`` (with ``channels=True``): per recall channel, the share of questions whose
top 5 messages of other speakers keep their order after the forget (before's top 5 without
the forgotten ids == after's top 5): which ranking signals move when text leaves.

``explain=True`` prints each changed answer with both cited lists (speaker of each id).

Commands (the figures in docs/reliability.md)::

    .venv/bin/python -m speakerflow.benchmarks.forget_stability --format locomo \\
        --groups conv-26 --never --channels --out forget_locomo.json
    .venv/bin/python -m speakerflow.benchmarks.forget_stability --format socialmem \\
        --never --channels --out forget_socialmem.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc

from speakerflow.graphs import Home
from speakerflow.pipelines.forget import forget_group
from speakerflow.pipelines.query_path import QueryConfig, answer_question, embedder_for
from speakerflow.pipelines.write_path import write_group

from .qa_data import QAData, QAItem, load_qa

_WORD = re.compile(r"[a-z0-9]+")
TOP = 10
#: the top of each recall channel whose order ``channels`` compares
CHANNEL_TOP = 5
#: ``../shared/data`` beside the checkout (``SPEAKERFLOW_SHARED_DATA`` overrides)
SHARED_DATA = Path(
    os.environ.get(
        "SPEAKERFLOW_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"
    )
)


def first_speaker(table) -> str:
    """The speaker of the group's first message (LoCoMo: ``speaker_a``)."""
    return str(table["speaker"][0].as_py())


def other_questions(questions: Sequence[QAItem], gone: set[str]) -> list[QAItem]:
    """The questions whose gold evidence holds none of the ``gone`` message ids."""
    return [q for q in questions if not gone.intersection(q.evidence)]


def _words(text: str) -> list[str]:
    return _WORD.findall((text or "").lower())


def _norm(text: str) -> str:
    return " " + " ".join(_words(text)) + " "


def grams(text: str, n: int = 5) -> set[str]:
    """Word ``n``-grams of ``text`` (a text of 3 to ``n`` words is one gram)."""
    w = _words(text)
    if len(w) < n:
        return {" ".join(w)} if len(w) >= 3 else set()
    return {" ".join(w[i : i + n]) for i in range(len(w) - n + 1)}


def quotes_any(answer: str, runs: set[str], n: int = 5) -> bool:
    """Whether ``answer`` holds one of ``runs`` (word runs of :func:`grams`, 3 to ``n``
    words)."""
    w = _words(answer)
    return any(" ".join(w[i : i + k]) in runs for k in {3, 4, n} for i in range(len(w) - k + 1))


def has_gold(answer: str, gold: str, evidence_texts: Sequence[str], n: int = 5) -> bool:
    """Whether ``answer`` contains the gold answer (its words in order) or a run of ``n``
    words of a gold evidence message."""
    text = _norm(answer)
    g = _norm(gold)
    if g.strip() and g in text:
        return True
    return any(f" {run} " in text for ev in evidence_texts for run in grams(ev, n))


def ask_all(store, questions: Sequence[QAItem], config: QueryConfig) -> list[dict[str, Any]]:
    """One answer per question: its text, the first :data:`TOP` cited ids and every message
    id of its evidence."""
    out = []
    for q in questions:
        r = answer_question(store, q.question, config)
        out.append(
            {
                "answer": r.answer,
                "cited": r.cited_ids(TOP),
                "evidence": sorted({m for e in r.evidence for m in e.msg_ids}),
            }
        )
    return out


def channel_tops(store, questions: Sequence[QAItem], config: QueryConfig) -> list[dict]:
    """Per question, each recall channel's top message ids (best first, score > 0)."""
    from speakerflow.ops.query.group_view import GroupView
    from speakerflow.ops.query.recall import recall

    view = GroupView.of(store)
    embedder = embedder_for(config)
    out = []
    for q in questions:
        res = recall(view, q.question, config.recall, embedder)
        tops = {}
        for name, scores in res.channels.items():
            order = np.lexsort((np.arange(len(scores)), -scores))
            tops[name] = [view.ids[i] for i in order[: 4 * CHANNEL_TOP] if scores[i] > 0]
        tops["fused"] = [view.ids[r] for r in res.pool[: 4 * CHANNEL_TOP]]
        out.append(tops)
    return out


def channels_kept(before: Sequence[dict], after: Sequence[dict], gone: set[str]) -> Counter:
    """Per channel, the questions whose top :data:`CHANNEL_TOP` other speakers' messages
    keep their order."""
    kept: Counter = Counter()
    for b, a in zip(before, after, strict=True):
        for name, ids in b.items():
            mine = [m for m in ids if m not in gone][:CHANNEL_TOP]
            kept[name] += a.get(name, [])[: len(mine)] == mine
    return kept


def compare(
    before: Sequence[dict],
    after: Sequence[dict],
    questions: Sequence[QAItem],
    gone: set[str],
    texts: dict[str, str],
) -> dict[str, Any]:
    """The counts of this module's doc, for answers ``before`` and ``after``."""
    n = len(questions)
    same = [b["answer"] == a["answer"] for b, a in zip(before, after, strict=True)]
    cited = [b["cited"] == a["cited"] for b, a in zip(before, after, strict=True)]
    kept = []
    for b, a in zip(before, after, strict=True):
        mine = [m for m in b["cited"] if m not in gone]
        pos = [a["cited"].index(m) for m in mine if m in a["cited"]]
        kept.append(len(pos) == len(mine) and pos == sorted(pos))
    gone_runs = set().union(*(grams(texts.get(m, "")) for m in gone)) if gone else set()
    quoting = [quotes_any(b["answer"], gone_runs) for b in before]
    runs_of = {m: grams(t) for m, t in texts.items() if m not in gone}
    causes: Counter = Counter()
    for i, (b, a) in enumerate(zip(before, after, strict=True)):
        if same[i]:
            continue
        if quoting[i]:
            causes["quoted"] += 1
            continue
        mine = _words(b["answer"])
        said = {" ".join(mine[j : j + k]) for k in (3, 4, 5) for j in range(len(mine) - k + 1)}
        sources = [m for m, r in runs_of.items() if r and not r.isdisjoint(said)]
        if not sources:
            causes["other"] += 1
        elif all(m in a.get("evidence", ()) for m in sources):
            causes["answerer"] += 1
        else:
            causes["retrieval"] += 1
    gold_before = gold_after = 0
    for q, b, a in zip(questions, before, after, strict=True):
        ev = [texts.get(m, "") for m in q.evidence]
        if has_gold(b["answer"], q.answer, ev):
            gold_before += 1
            gold_after += has_gold(a["answer"], q.answer, ev)
    own = [i for i in range(n) if not quoting[i]]

    counts = {
        "questions": n,
        "answer": sum(same),
        "own": len(own),
        "own_same": sum(same[i] for i in own),
        "cited": sum(cited),
        "cited_kept": sum(kept),
        "gold_before": gold_before,
        "gold_kept": gold_after,
        "causes": dict(causes),
    }
    return {**_with_shares(counts), "changed": [i for i, s in enumerate(same) if not s]}


def _with_shares(counts: dict[str, Any]) -> dict[str, Any]:
    def share(a: int, b: int) -> float | None:
        return round(a / b, 3) if b else None

    c = counts
    return {
        **c,
        "share": {
            "answer": share(c["answer"], c["questions"]),
            "own": share(c["own_same"], c["own"]),
            "cited": share(c["cited"], c["questions"]),
            "cited_kept": share(c["cited_kept"], c["questions"]),
            "gold": share(c["gold_kept"], c["gold_before"]),
        },
    }


def pooled(parts: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The counts of several groups' :func:`compare` summed (message ids are only unique
    within a group, so groups are compared one by one and added up)."""
    if not parts:
        return None
    keys = ("questions", "answer", "own", "own_same", "cited", "cited_kept")
    total: dict[str, Any] = {k: sum(p[k] for p in parts) for k in keys}
    total["gold_before"] = sum(p["gold_before"] for p in parts)
    total["gold_kept"] = sum(p["gold_kept"] for p in parts)
    causes: Counter = Counter()
    for p in parts:
        causes.update(p["causes"])
    total["causes"] = dict(causes)
    return _with_shares(total)


def _prepare(store, table, config: QueryConfig) -> None:
    from speakerflow.ops.query.recall import warm_message_embeddings
    from speakerflow.ops.query.record_view import warm_record_embeddings

    store.append_messages(table)
    write_group(store, "rules", progress=False)
    embedder = embedder_for(config)
    if embedder is not None:
        warm_message_embeddings(store, embedder, config.recall)
        warm_record_embeddings(store, embedder)


def _explain(speaker_of: dict, q: QAItem, b: dict, a: dict) -> None:
    print(f"\nQ [{q.qid}] {q.question}  (gold: {q.answer[:80]!r}, evidence {list(q.evidence)})")
    print(f"  before: {b['answer'][:200]!r}")
    print(f"  after:  {a['answer'][:200]!r}")
    for tag, d in (("before", b), ("after", a)):
        ids = ", ".join(f"{m}({speaker_of.get(m, '?')[:3]})" for m in d["cited"])
        print(f"  cited {tag}: {ids}")


def run(
    data: QAData,
    home: str | Path,
    config: QueryConfig | None = None,
    speaker: Callable[[Any], str] | str | None = None,
    never: bool = False,
    channels: bool = False,
    explain: bool = False,
) -> dict[str, Any]:
    """Forget one person per group of ``data`` and compare the other speakers' answers
    before / after (with ``never``, also against a group that never had the person; with
    ``channels``, the order of each recall channel's top messages)."""
    config = config or QueryConfig(embedder="hashing")
    home = Path(home)
    per_group: dict[str, Any] = {}
    chan: Counter = Counter()
    by_group = data.by_group()
    t0 = time.perf_counter()
    for gid, table in data.groups:
        name = speaker(table) if callable(speaker) else speaker or first_speaker(table)
        ids = table["msg_id"].to_pylist()
        gone = {m for m, s in zip(ids, table["speaker"].to_pylist(), strict=True) if s == name}
        qs = other_questions(by_group.get(gid, []), gone)
        texts = dict(zip(ids, table["text"].to_pylist(), strict=True))
        with Home(home / "forget").open(gid, writable=True) as store:
            _prepare(store, table, config)
            before = ask_all(store, qs, config)
            tops_before = channel_tops(store, qs, config) if channels else []
            report = forget_group(store, speaker=name, writer="rules")
            after = ask_all(store, qs, config)
            tops_after = channel_tops(store, qs, config) if channels else []
        chan.update(channels_kept(tops_before, tops_after, gone))
        cmp = compare(before, after, qs, gone, texts)
        entry: dict[str, Any] = {
            "speaker_messages": len(gone),
            "messages": table.num_rows,
            "records_deleted": report.records_deleted,
            "records_rederived": getattr(report, "records_rederived", 0),
            "after": cmp,
        }
        nev: list[dict] | None = None
        if never:
            keep = pc.not_equal(table["speaker"], name)
            with Home(home / "never").open(gid, writable=True) as store:
                _prepare(store, table.filter(keep), config)
                nev = ask_all(store, qs, config)
            entry["never"] = compare(before, nev, qs, gone, texts)
            entry["after_equals_never"] = sum(
                a["answer"] == x["answer"] for a, x in zip(after, nev, strict=True)
            )
        if explain:
            speaker_of = dict(zip(ids, table["speaker"].to_pylist(), strict=True))
            for i in cmp["changed"]:
                _explain(speaker_of, qs[i], before[i], after[i])
        entry["rows"] = [
            {"qid": q.qid, "before": b, "after": a, "never": nev[i] if nev else None}
            for i, (q, b, a) in enumerate(zip(qs, before, after, strict=True))
        ]
        per_group[gid] = entry

    after_all = pooled([e["after"] for e in per_group.values()])
    n = after_all["questions"] if after_all else 0
    return {
        "format": data.fmt,
        "embedder": config.embedder,
        "groups": per_group,
        "after": after_all,
        "never": pooled([e["never"] for e in per_group.values() if "never" in e]),
        "after_equals_never": sum(e.get("after_equals_never", 0) for e in per_group.values())
        if never
        else None,
        "channels": {k: round(v / n, 3) for k, v in sorted(chan.items())}
        if channels and n
        else None,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def summary(report: dict[str, Any]) -> str:
    """A few lines for a terminal."""
    lines = [f"{report['format']} ({report['embedder']} embedder), {report['seconds']} s"]
    for tag in ("after", "never"):
        c = report.get(tag)
        if c:
            lines.append(
                f"  {tag:6s}: {c['questions']} questions; same answer {c['answer']} "
                f"({c['share']['answer']}); not quoting the person before: {c['own_same']}/"
                f"{c['own']} same ({c['share']['own']}); same cited top-{TOP} {c['cited']}; "
                f"other speakers' cited kept in order {c['cited_kept']}; gold kept "
                f"{c['gold_kept']}/{c['gold_before']}; changed: {c['causes']}"
            )
    if report.get("after_equals_never") is not None:
        lines.append(f"  after forget == never had: {report['after_equals_never']}")
    if report.get("channels"):
        lines.append(f"  recall channels, top {CHANNEL_TOP} order kept: {report['channels']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--data", default=None, help="LoCoMo file / SocialMem folder")
    p.add_argument("--format", choices=["locomo", "socialmem"], default="locomo")
    p.add_argument("--groups", default=None, help="e.g. conv-26 (default: LoCoMo conv-26)")
    p.add_argument("--speaker", default=None, help="forget this speaker (default: the first)")
    p.add_argument("--embedder", default="hashing", choices=["hashing", "minilm", "none"])
    p.add_argument("--never", action="store_true", help="also ask a group that never had them")
    p.add_argument("--channels", action="store_true", help="order kept per recall channel")
    p.add_argument("--explain", action="store_true", help="print each changed answer")
    p.add_argument("--home", default=None)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    sub = "locomo/locomo10.json" if args.format == "locomo" else "socialmem/training"
    data = load_qa(args.data or SHARED_DATA / sub, args.format)
    groups = args.groups or ("conv-26" if args.format == "locomo" else None)
    if groups:
        data = data.only(groups)
    report = run(
        data,
        args.home or tempfile.mkdtemp(prefix="forget-stability-"),
        QueryConfig(embedder=args.embedder),
        speaker=args.speaker,
        never=args.never,
        channels=args.channels,
        explain=args.explain,
    )
    print(summary(report), file=sys.stderr)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""Forget stability: do other speakers' answers stay the same after ``forget --speaker``?

:func:`run` ingests each group (rules Writer, message and record embeddings), picks the
person to forget (:func:`first_speaker`: the speaker of the group's first message, unless
one is given), and asks every question whose gold evidence holds none of that person's
messages (:func:`other_questions`) three times: before the forget, after
:func:`~speakerflow.pipelines.forget.forget_group` (rules Writer re-deriving), and -- with
``never=True`` -- of a group ingested without the person's messages (the counterfactual "they
never spoke"). :func:`compare` reports, over those questions, the share with

* ``answer``: the same answer text;
* ``cited``: the same first 10 cited message ids, in order;
* ``cited_kept``: the first 10 cited ids of *other* speakers before are all still among the
  first 10 after, in the same order (the forgotten person's ids necessarily leave);
* ``gold``: of the answers that contained the gold answer before, the share that still do
  (:func:`has_gold`: the gold answer string, or a 5-word run of a gold evidence message).

``explain=True`` prints, for each changed answer, both answers and both cited lists with
the speaker of each id and its fused recall score.

Command (the figures in docs/reliability.md)::

    .venv/bin/python -m speakerflow.benchmarks.forget_stability --format locomo \\
        --groups conv-26 --never --out forget_locomo.json
    .venv/bin/python -m speakerflow.benchmarks.forget_stability --format socialmem \\
        --never --out forget_socialmem.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from speakerflow.graphs import Home
from speakerflow.pipelines.forget import forget_group
from speakerflow.pipelines.query_path import QueryConfig, answer_question, embedder_for
from speakerflow.pipelines.write_path import write_group

from .qa_data import QAData, QAItem, load_qa

_WORD = re.compile(r"[a-z0-9]+")
TOP = 10
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


def _norm(text: str) -> str:
    return " " + " ".join(_WORD.findall((text or "").lower())) + " "


def has_gold(answer: str, gold: str, evidence_texts: Sequence[str], n: int = 5) -> bool:
    """Whether ``answer`` contains the gold answer (its words in order) or a run of ``n``
    words of a gold evidence message."""
    text = _norm(answer)
    g = _norm(gold)
    if g.strip() and g in text:
        return True
    for ev in evidence_texts:
        w = _WORD.findall(ev.lower())
        for i in range(max(len(w) - n + 1, 1 if len(w) >= 3 else 0)):
            if " " + " ".join(w[i : i + n]) + " " in text:
                return True
    return False


def _grams(text: str, n: int = 5) -> set[str]:
    w = _WORD.findall((text or "").lower())
    if len(w) < n:
        return {" ".join(w)} if len(w) >= 3 else set()
    return {" ".join(w[i : i + n]) for i in range(len(w) - n + 1)}


def quotes_any(answer: str, grams: set[str], n: int = 5) -> bool:
    """Whether ``answer`` holds one of ``grams`` (word runs of :func:`_grams`)."""
    w = _WORD.findall((answer or "").lower())
    return any(" ".join(w[i : i + k]) in grams for k in {3, 4, n} for i in range(len(w) - k + 1))


def ask_all(store, questions: Sequence[QAItem], config: QueryConfig) -> list[dict[str, Any]]:
    """One answer per question: text, first cited ids, the fused score of each cited id."""
    out = []
    for q in questions:
        r = answer_question(store, q.question, config)
        out.append({"answer": r.answer, "cited": r.cited_ids(TOP)})
    return out


def compare(
    before: Sequence[dict],
    after: Sequence[dict],
    questions: Sequence[QAItem],
    gone: set[str],
    texts: dict[str, str],
) -> dict[str, Any]:
    """The shares of :mod:`this module's <speakerflow.benchmarks.forget_stability>` doc."""
    n = len(questions)
    same = [b["answer"] == a["answer"] for b, a in zip(before, after, strict=True)]
    cited = [b["cited"] == a["cited"] for b, a in zip(before, after, strict=True)]
    kept = []
    for b, a in zip(before, after, strict=True):
        mine = [m for m in b["cited"] if m not in gone]
        pos = [a["cited"].index(m) for m in mine if m in a["cited"]]
        kept.append(len(pos) == len(mine) and pos == sorted(pos))
    # answers that did not quote the forgotten person before: what "unchanged" can promise
    gone_grams = set().union(*(_grams(texts.get(m, "")) for m in gone)) if gone else set()
    own = [i for i, b in enumerate(before) if not quotes_any(b["answer"], gone_grams)]
    gold_before = gold_after = 0
    for q, b, a in zip(questions, before, after, strict=True):
        ev = [texts.get(m, "") for m in q.evidence]
        if has_gold(b["answer"], q.answer, ev):
            gold_before += 1
            gold_after += has_gold(a["answer"], q.answer, ev)
    return {
        "questions": n,
        "answer": sum(same),
        "cited": sum(cited),
        "cited_kept": sum(kept),
        "not_quoting": len(own),
        "not_quoting_same": sum(same[i] for i in own),
        "gold_before": gold_before,
        "gold_kept": gold_after,
        "share": {
            "answer": round(sum(same) / n, 3) if n else None,
            "cited": round(sum(cited) / n, 3) if n else None,
            "cited_kept": round(sum(kept) / n, 3) if n else None,
            "gold": round(gold_after / gold_before, 3) if gold_before else None,
            "not_quoting": round(sum(same[i] for i in own) / len(own), 3) if own else None,
        },
        "changed": [i for i, s in enumerate(same) if not s],
    }


def _prepare(store, table, config: QueryConfig) -> None:
    from speakerflow.ops.recall import warm_message_embeddings
    from speakerflow.ops.resolve import warm_record_embeddings

    store.append_messages(table)
    write_group(store, "rules", progress=False)
    embedder = embedder_for(config)
    if embedder is not None:
        warm_message_embeddings(store, embedder, config.recall)
        warm_record_embeddings(store, embedder)


def _explain(store_before: dict, store_after: dict, q: QAItem, b: dict, a: dict) -> None:
    print(f"\nQ [{q.qid}] {q.question}  (gold: {q.answer[:80]!r}, evidence {list(q.evidence)})")
    print(f"  before: {b['answer'][:200]!r}")
    print(f"  after:  {a['answer'][:200]!r}")
    for tag, d, spk in (("before", b, store_before), ("after", a, store_after)):
        print(f"  cited {tag}: " + ", ".join(f"{m}({spk.get(m, '?')[:3]})" for m in d["cited"]))


def run(
    data: QAData,
    home: str | Path,
    config: QueryConfig | None = None,
    speaker: Callable[[Any], str] | str | None = None,
    never: bool = False,
    explain: bool = False,
) -> dict[str, Any]:
    """Forget one person per group of ``data`` and compare the other speakers' answers
    before / after (and with ``never``, against a group that never had the person)."""
    config = config or QueryConfig(embedder="hashing")
    home = Path(home)
    per_group: dict[str, Any] = {}
    totals: dict[str, list] = {"after": [], "never": []}
    by_group = data.by_group()
    t0 = time.perf_counter()
    for gid, table in data.groups:
        name = speaker(table) if callable(speaker) else speaker or first_speaker(table)
        gone = set(
            pc.filter(table["msg_id"], pc.equal(table["speaker"], name)).to_pylist()  # type: ignore[attr-defined]
        )
        qs = other_questions(by_group.get(gid, []), gone)
        texts = dict(zip(table["msg_id"].to_pylist(), table["text"].to_pylist(), strict=True))
        spk = dict(zip(table["msg_id"].to_pylist(), table["speaker"].to_pylist(), strict=True))
        with Home(home / "forget").open(gid, writable=True) as store:
            _prepare(store, table, config)
            before = ask_all(store, qs, config)
            report = forget_group(store, speaker=name, writer="rules")
            after = ask_all(store, qs, config)
        cmp = compare(before, after, qs, gone, texts)
        entry: dict[str, Any] = {
            "speaker_messages": len(gone),
            "messages": table.num_rows,
            "records_deleted": report.records_deleted,
            "records_rederived": getattr(report, "records_rederived", 0),
            "after": cmp,
        }
        totals["after"].append((before, after, qs, gone, texts))
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
            totals["never"].append((before, nev, qs, gone, texts))
        if explain:
            for i in cmp["changed"]:
                _explain(spk, spk, qs[i], before[i], after[i])
        entry["rows"] = [
            {"qid": q.qid, "before": b, "after": a, "never": nev[i] if nev else None}
            for i, (q, b, a) in enumerate(zip(qs, before, after, strict=True))
        ]
        per_group[gid] = entry

    def pooled(rows: list) -> dict[str, Any] | None:
        if not rows:
            return None
        b = [x for r in rows for x in r[0]]
        a = [x for r in rows for x in r[1]]
        q = [x for r in rows for x in r[2]]
        gone = set().union(*(r[3] for r in rows))
        texts = {k: v for r in rows for k, v in r[4].items()}
        out = compare(b, a, q, gone, texts)
        out.pop("changed")
        return out

    return {
        "format": data.fmt,
        "embedder": config.embedder,
        "groups": per_group,
        "after": pooled(totals["after"]),
        "never": pooled(totals["never"]),
        "seconds": round(time.perf_counter() - t0, 1),
    }


def summary(report: dict[str, Any]) -> str:
    lines = [f"{report['format']} ({report['embedder']} embedder), {report['seconds']} s"]
    for tag in ("after", "never"):
        c = report.get(tag)
        if c:
            lines.append(
                f"  {tag:6s}: {c['questions']} questions; same answer {c['answer']} "
                f"({c['share']['answer']}), same cited top-{TOP} {c['cited']} "
                f"({c['share']['cited']}), other speakers' cited kept {c['cited_kept']} "
                f"({c['share']['cited_kept']}), gold kept {c['gold_kept']}/{c['gold_before']}; "
                f"not quoting the person before: {c['not_quoting_same']}/{c['not_quoting']} same"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None, help="LoCoMo file / SocialMem folder")
    p.add_argument("--format", choices=["locomo", "socialmem"], default="locomo")
    p.add_argument("--groups", default=None, help="e.g. conv-26 (default: LoCoMo conv-26)")
    p.add_argument("--speaker", default=None, help="forget this speaker (default: the first)")
    p.add_argument("--embedder", default="hashing", choices=["hashing", "minilm", "none"])
    p.add_argument("--never", action="store_true", help="also ask a group that never had them")
    p.add_argument("--explain", action="store_true", help="print each changed answer")
    p.add_argument("--home", default=None)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    sub = "locomo/locomo10.json" if args.format == "locomo" else "socialmem/training"
    path = args.data or str(SHARED_DATA / sub)
    data = load_qa(path, args.format)
    groups = args.groups or ("conv-26" if args.format == "locomo" else None)
    if groups:
        data = data.only(groups)
    home = args.home or tempfile.mkdtemp(prefix="forget-stability-")
    report = run(
        data,
        home,
        QueryConfig(embedder=args.embedder),
        speaker=args.speaker,
        never=args.never,
        explain=args.explain,
    )
    print(summary(report), file=sys.stderr)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

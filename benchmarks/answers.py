"""Answer accuracy on a frozen answer set, through the path ``speakerflow ask --json`` takes.

For a set folder laid out like ``tests/data/answers_v2`` (``conversations/*.jsonl``,
``questions.json``, optionally ``changes.json``) it

1. ingests every conversation into its own group of a temporary store home as
   ``speakerflow ingest`` does (the real Parquet track, Kuzu graph and Tantivy index, the
   rules Writer, the message embeddings of the default embedder);
2. asks every question with :func:`~speakerflow.pipelines.query_path.answer_question` and a
   :class:`~speakerflow.pipelines.query_path.QueryConfig` (what ``speakerflow ask`` runs),
   once per *variant*: a name and the :class:`~speakerflow.ops.query.answer.AnswerConfig`
   fields it changes (``old={"picker": "old"}`` keeps the old answer picker runnable beside
   the new one in the same run, on the same stores);
3. scores each answer with the set's rule (:func:`is_correct`: ``expect`` groups, in order when
   ``ordered``, no ``forbid`` string, and for ``per_person`` a line per person holding one of
   theirs), and whether the gold msg_ids are among the cited ids (all of them in the first 10,
   any of them in the first 10);
4. counts the update chains the Writer formed against ``changes.json``: a change is *formed*
   when a chain (oldest state first) has a version citing its ``before_msg`` followed by a later
   version citing its ``after_msg``.

Shares are reported overall, by question type and by conversation (with the spread over
conversations: a held-out set is new conversations)::

    .venv/bin/python -m speakerflow.benchmarks.answers tests/data/answers_v2 \
        --variant old='{"picker": "old"}' --variant new='{}' --out /tmp/answers.json -v
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

DEFAULT_SET = Path(__file__).resolve().parents[1] / "tests" / "data" / "answers_v2"


# --- the set's scoring rule --------------------------------------------------------------------


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u2013", "-").replace("\u2019", "'")).strip().lower()


def _find(text: str, alternatives: list[str], start: int = 0) -> int:
    """Index of the first alternative found in ``text`` at or after ``start`` (-1 if none)."""
    hits = [i for a in alternatives if (i := text.find(_norm(a), start)) >= 0]
    return min(hits) if hits else -1


def is_correct(answer: str, q: dict) -> bool:
    """The rule of the answer sets (their ``about``): every ``expect`` group has an alternative
    in the answer (in order when ``ordered``), no ``forbid`` string is in it, and every
    ``per_person`` name starts a line holding one of its alternatives (case-insensitive)."""
    text = _norm(answer)
    pos = 0
    for group in q.get("expect", []):
        i = _find(text, group, pos if q.get("ordered") else 0)
        if i < 0:
            return False
        if q.get("ordered"):
            pos = i + 1
    if any(_norm(f) in text for f in q.get("forbid", [])):
        return False
    lines = [_norm(line) for line in answer.splitlines()]
    for person, alternatives in q.get("per_person", {}).items():
        mine = [line for line in lines if line.startswith(person.lower())]
        if not any(_find(line, alternatives) >= 0 for line in mine):
            return False
    return True


# --- the set -----------------------------------------------------------------------------------


def load_set(folder: str | Path) -> dict[str, Any]:
    """The set's conversations (paths by name), questions and changes; raises ``ValueError``
    when the folder is not an answer set."""
    root = Path(folder)
    convs = {p.stem: p for p in sorted((root / "conversations").glob("*.jsonl"))}
    qpath = root / "questions.json"
    if not convs or not qpath.is_file():
        raise ValueError(f"{root}: an answer set needs conversations/*.jsonl and questions.json")
    questions = json.loads(qpath.read_text(encoding="utf-8"))["questions"]
    unknown = sorted({q["data"] for q in questions} - set(convs))
    if unknown:
        raise ValueError(f"{qpath}: questions name conversations that are absent: {unknown}")
    cpath = root / "changes.json"
    changes = json.loads(cpath.read_text(encoding="utf-8")) if cpath.is_file() else []
    readme = root / "README.md"
    errata = ""
    if readme.is_file():
        tail = readme.read_text(encoding="utf-8").partition("## Errata")[2].strip()
        errata = "" if tail.lower().startswith("none") else tail
    return {"conversations": convs, "questions": questions, "changes": changes, "errata": errata}


def ingest(home, path: Path, embedder: str, writer: Any = "rules") -> str:
    """One conversation into ``home`` as ``speakerflow ingest`` does (``writer``: a Writer
    kind or backend, default the rules Writer); returns its group id."""
    from speakerflow.ops.loaders import load
    from speakerflow.ops.query.recall import warm_message_embeddings
    from speakerflow.ops.text.embed import shared_embedder
    from speakerflow.pipelines.write_path import write_group

    [(gid, table)] = load(path, "jsonl")
    with home.open(gid, writable=True) as store:
        store.append_messages(table)
        write_group(store, writer, progress=False)
    if embedder != "none":
        with home.open(gid) as store:
            warm_message_embeddings(store, shared_embedder(embedder))
    return gid


def formed_changes(store, changes: list[dict]) -> tuple[list[bool], int]:
    """Per change of ``changes``: whether one of the group's update chains holds it (a version
    citing ``before_msg``, then a later version citing ``after_msg``); and how many chains of
    two or more states the Writer formed in all."""
    from speakerflow.graphs.records import chains

    found = [c for c in chains(store) if len(c) >= 2]
    out = []
    for change in changes:
        hit = False
        for chain in found:
            cites = [set(r["from_ids"] or []) for r in chain]
            hit = hit or any(
                change["before_msg"] in cites[i]
                and change["after_msg"] not in cites[i]
                and any(change["after_msg"] in later for later in cites[i + 1 :])
                for i in range(len(cites))
            )
        out.append(hit)
    return out, len(found)


# --- the run -----------------------------------------------------------------------------------


def _share(flags: list[bool]) -> float:
    return round(sum(flags) / len(flags), 3) if flags else 0.0


def summarise(rows: list[dict], key: str) -> dict[str, Any]:
    """Share of ``rows[key]`` overall, by type and by conversation (with min/max over them)."""
    by_type: dict[str, list[bool]] = defaultdict(list)
    by_conv: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        by_type[r["type"]].append(r[key])
        by_conv[r["data"]].append(r[key])
    convs = {c: _share(v) for c, v in sorted(by_conv.items())}
    return {
        "all": _share([r[key] for r in rows]),
        "by_type": {t: _share(v) for t, v in sorted(by_type.items())},
        "by_conversation": convs,
        "conversation_spread": [min(convs.values()), max(convs.values())] if convs else [],
    }


def _answer_row(q: dict, conversation: str, res: Any) -> dict[str, Any]:
    """One question's line under a variant: the answer, whether it is right, the gold in the
    first 10 cited ids."""
    cited = res.cited_ids(10)
    return {
        "id": q["id"],
        "data": conversation,
        "type": q["type"],
        "question": q["question"],
        "answer": res.answer,
        "correct": is_correct(res.answer, q),
        "gold_all_10": set(q["gold"]) <= set(cited),
        "gold_any_10": bool(set(q["gold"]) & set(cited)),
        "cited": cited,
    }


def _report(
    folder: str | Path,
    embedder: str,
    data: dict[str, Any],
    convs: dict[str, Any],
    questions: list[dict],
    variants: dict[str, dict],
    results: dict[str, list[dict]],
    changes: list[dict],
    chains_formed: dict[str, int],
    seconds: float,
) -> dict[str, Any]:
    """The report: the set, each variant's scores and answers, the Writer's change chains."""
    report: dict[str, Any] = {
        "set": str(folder),
        "embedder": embedder,
        "questions": len(questions),
        "conversations": len(convs),
        "errata": data["errata"] or None,
        "variants": {},
        "writer": {
            "changes": len(changes),
            "formed": sum(c["formed"] for c in changes),
            "chains_formed": chains_formed,
            "by_conversation": {
                c: [
                    sum(x["formed"] for x in changes if x["data"] == c),
                    len([x for x in changes if x["data"] == c]),
                ]
                for c in convs
            },
        },
        "seconds": round(seconds, 1),
    }
    for name, rows in results.items():
        report["variants"][name] = {
            "fields": variants[name],
            "accuracy": summarise(rows, "correct"),
            "gold_all_10": summarise(rows, "gold_all_10"),
            "gold_any_10": summarise(rows, "gold_any_10"),
            "answers": rows,
        }
    report["missed_changes"] = [
        {k: c[k] for k in ("data", "speaker", "before_msg", "after_msg")}
        for c in changes
        if not c["formed"]
    ]
    return report


def run(
    folder: str | Path = DEFAULT_SET,
    variants: dict[str, dict] | None = None,
    embedder: str = "minilm",
    only: list[str] | None = None,
    progress: bool = True,
    writer: str = "rules",
) -> dict[str, Any]:
    """Ingest the set, answer every question once per variant, score; see the module doc.
    ``only``: restrict to these conversations; ``writer``: the Writer of the records, a spec
    as ``speakerflow eval --writer`` takes (``rules``, ``local@extract:FOLDER`` ...)."""
    from speakerflow.graphs import Home
    from speakerflow.ops.query.answer import AnswerConfig
    from speakerflow.ops.write.writer.registry import writer_from_spec
    from speakerflow.pipelines.query_path import QueryConfig, answer_question

    data = load_set(folder)
    variants = variants or {"default": {}}
    configs = {
        name: QueryConfig(embedder=embedder, answer=AnswerConfig(**fields))
        for name, fields in variants.items()
    }
    convs = {c: p for c, p in data["conversations"].items() if not only or c in only}
    questions = [q for q in data["questions"] if q["data"] in convs]
    results: dict[str, list[dict]] = {name: [] for name in configs}
    changes: list[dict] = []
    chains_formed: dict[str, int] = {}
    start = time.perf_counter()
    backend = writer if writer in ("rules", "none") else writer_from_spec(writer)
    with tempfile.TemporaryDirectory(prefix="speakerflow-answers-") as tmp:
        home = Home(tmp)
        for i, (name, path) in enumerate(convs.items()):
            t0 = time.perf_counter()
            gid = ingest(home, path, embedder, backend)
            mine = [q for q in questions if q["data"] == name]
            with home.open(gid) as store:
                for variant, config in configs.items():
                    for q in mine:
                        res = answer_question(store, q["question"], config)
                        results[variant].append(_answer_row(q, name, res))
                expected = [c for c in data["changes"] if c["data"] == name]
                hits, chains_formed[name] = formed_changes(store, expected)
                changes += [{**c, "formed": h} for c, h in zip(expected, hits, strict=True)]
            if progress:
                print(
                    f"[{i + 1}/{len(convs)}] {name}: {len(mine)} question(s) x {len(configs)} "
                    f"variant(s) in {time.perf_counter() - t0:.1f}s",
                    file=sys.stderr,
                    flush=True,
                )
    report = _report(
        folder,
        embedder,
        data,
        convs,
        questions,
        variants,
        results,
        changes,
        chains_formed,
        time.perf_counter() - start,
    )
    report["writer"]["name"] = getattr(backend, "name", backend)
    return report


def failures(report: dict[str, Any], variant: str) -> str:
    """The wrong answers of ``variant`` by question type: each with whether its gold messages
    were cited (all / any in the first 10) and the other variants that answered it right, so
    a picking loss (gold cited, answer wrong) reads apart from a recall loss."""
    rows = report["variants"][variant]["answers"]
    right = {
        name: {r["id"] for r in v["answers"] if r["correct"]}
        for name, v in report["variants"].items()
        if name != variant
    }
    by_type: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        if not r["correct"]:
            by_type[r["type"]].append(r)
    out = []
    for qtype, wrong in sorted(by_type.items()):
        total = sum(r["type"] == qtype for r in rows)
        cited = sum(r["gold_any_10"] for r in wrong)
        out.append(f"## {qtype}: {len(wrong)} of {total} wrong ({cited} with gold cited)")
        for r in wrong:
            gold = "all" if r["gold_all_10"] else "any" if r["gold_any_10"] else "none"
            others = [name for name, ids in right.items() if r["id"] in ids]
            out.append(
                f"- {r['id']} [gold cited: {gold}]"
                + (f" [right in: {', '.join(others)}]" if others else "")
                + f" {r['question']}\n    "
                + r["answer"].replace("\n", "\n    ")
            )
    return "\n".join(out)


def _variant(text: str) -> tuple[str, dict]:
    name, _, fields = text.partition("=")
    try:
        parsed = json.loads(fields or "{}")
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(
            f"--variant {text!r}: the fields are not JSON ({exc})"
        ) from exc
    if not name or not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError(f"--variant {text!r}: use NAME='{{\"field\": value}}'")
    return name, parsed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("folder", nargs="?", default=str(DEFAULT_SET), help="the answer set folder")
    p.add_argument(
        "--variant",
        action="append",
        type=_variant,
        default=[],
        help="NAME='{AnswerConfig fields}' (repeatable; default: one variant, the defaults)",
    )
    p.add_argument("--embedder", default="minilm", choices=["minilm", "hashing", "none"])
    p.add_argument(
        "--writer",
        default="rules",
        help="the Writer of the records: rules (default), none, local, local@extract:FOLDER ...",
    )
    p.add_argument("--only", nargs="*", default=None, help="conversations to run (default all)")
    p.add_argument("--out", default=None, help="write the full report (every answer) here")
    p.add_argument("-v", action="store_true", help="print every wrong answer of each variant")
    p.add_argument(
        "--failures",
        metavar="VARIANT",
        default=None,
        help="print VARIANT's wrong answers by question type, with whether the gold was cited "
        "and which other variants answered them right",
    )
    args = p.parse_args(argv)
    try:
        report = run(
            args.folder, dict(args.variant) or None, args.embedder, args.only, writer=args.writer
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    if args.failures:
        if args.failures not in report["variants"]:
            print(f"error: --failures {args.failures!r}: no such variant", file=sys.stderr)
            return 2
        print(failures(report, args.failures))
    for name, v in report["variants"].items():
        if args.v:
            for r in v["answers"]:
                if not r["correct"]:
                    print(
                        f"BAD [{name}] {r['id']} [{r['type']}] {r['question']}\n    "
                        + r["answer"].replace("\n", "\n    ")
                    )
        print(
            json.dumps(
                {
                    "variant": name,
                    "accuracy": v["accuracy"],
                    "gold_all_10": v["gold_all_10"]["all"],
                    "gold_any_10": v["gold_any_10"]["all"],
                }
            )
        )
    print(json.dumps({"writer": report["writer"], "seconds": report["seconds"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

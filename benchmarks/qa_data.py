"""Question sets with gold evidence for judge-free evaluation (LoCoMo, SocialMemBench).

:func:`load_qa` returns the messages of every group (through the regular loaders) and the
questions whose gold evidence resolves to stored message ids, with the reason each
skipped question was dropped.

- LoCoMo: group = ``sample_id``; message ids are dia_ids (``D3:12``); category 5
  (adversarial) is skipped; malformed evidence strings are normalised
  (``'D8:6; D9:17'`` -> two ids, ``'D:11:26'`` -> ``D11:26``, ``'D30:05'`` -> ``D30:5``,
  ``'D'`` -> dropped); a question keeps only evidence ids that exist in its conversation
  and is skipped when none does.
- SocialMemBench: group = ``meta.network_id``; message ids are turn ids; evidence is the
  ``turn_id`` of each ``evidence_anchors`` entry that resolves.

>>> normalise_locomo_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D"])
['D8:6', 'D9:17', 'D11:26', 'D30:5']
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from speakerflow.ops.loaders import load

LOCOMO_CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
#: The LoCoMo dev/test halves: tune on ``dev`` (and the SocialMem training networks) only;
#: ``test`` is reported untouched by tuning.
LOCOMO_SPLITS: dict[str, tuple[str, ...]] = {
    "dev": ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43"),
    "test": ("conv-44", "conv-47", "conv-48", "conv-49", "conv-50"),
}
_DIA = re.compile(r"D:?(\d+):0*(\d+)")


@dataclass(frozen=True)
class QAItem:
    """One question: ``evidence`` are the gold message ids (resolved, in the given order)."""

    qid: str
    group: str
    question: str
    answer: str
    category: str
    evidence: tuple[str, ...]


@dataclass
class QAData:
    """Messages per group and the usable questions; ``skipped`` counts dropped questions by
    reason."""

    fmt: str
    groups: list[tuple[str, pa.Table]]
    questions: list[QAItem]
    skipped: Counter = field(default_factory=Counter)

    def only(self, groups) -> QAData:
        """The same data restricted to ``groups`` (ids; ``dev``/``test`` name a LoCoMo half);
        unknown ids raise ``ValueError`` naming the known ones."""
        wanted = parse_groups(groups)
        known = [gid for gid, _ in self.groups]
        unknown = [g for g in wanted if g not in known]
        if unknown:
            raise ValueError(f"unknown group(s) {unknown}; this data has {known}")
        return QAData(
            self.fmt,
            [(gid, t) for gid, t in self.groups if gid in wanted],
            [q for q in self.questions if q.group in wanted],
            Counter(self.skipped),
        )

    def by_group(self) -> dict[str, list[QAItem]]:
        out: dict[str, list[QAItem]] = {}
        for q in self.questions:
            out.setdefault(q.group, []).append(q)
        return out


def parse_groups(groups) -> list[str]:
    """``"conv-26,conv-30"`` or a list -> group ids; ``dev`` / ``test`` expand to a LoCoMo half.

    >>> parse_groups("dev,conv-44")[-1], len(parse_groups("test"))
    ('conv-44', 5)
    """
    items = groups.split(",") if isinstance(groups, str) else list(groups)
    out: list[str] = []
    for item in (i.strip() for i in items):
        for gid in LOCOMO_SPLITS.get(item, (item,)) if item else ():
            if gid not in out:
                out.append(gid)
    return out


def normalise_locomo_evidence(raw: list[str]) -> list[str]:
    """Split and repair LoCoMo evidence strings into ``D<session>:<turn>`` ids (order kept)."""
    out: list[str] = []
    for item in raw:
        for m in _DIA.finditer(str(item)):
            dia = f"D{int(m.group(1))}:{int(m.group(2))}"
            if dia not in out:
                out.append(dia)
    return out


def _files(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.suffix == ".json") if path.is_dir() else [path]


def _locomo_questions(path: Path, known: dict[str, set[str]], skipped: Counter) -> list[QAItem]:
    out = []
    for f in _files(path):
        for conv in json.loads(f.read_text(encoding="utf-8")):
            gid = conv["sample_id"]
            for i, qa in enumerate(conv.get("qa", [])):
                category = LOCOMO_CATEGORIES.get(qa.get("category"), str(qa.get("category")))
                if category == "adversarial":
                    skipped["adversarial (category 5)"] += 1
                    continue
                ids = [
                    e
                    for e in normalise_locomo_evidence(qa.get("evidence") or [])
                    if e in known.get(gid, ())
                ]
                if not ids:
                    skipped["evidence does not resolve"] += 1
                    continue
                out.append(
                    QAItem(
                        f"{gid}#{i}",
                        gid,
                        qa["question"],
                        str(qa.get("answer", "")),
                        category,
                        tuple(ids),
                    )
                )
    return out


def _socialmem_questions(path: Path, known: dict[str, set[str]], skipped: Counter) -> list[QAItem]:
    out = []
    for f in _files(path):
        data = json.loads(f.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or "sessions" not in data:
            continue
        gid = (data.get("meta") or {}).get("network_id") or f.stem.removeprefix("social_")
        for i, qa in enumerate(data.get("qa_pairs", [])):
            ids = []
            for anchor in qa.get("evidence_anchors") or []:
                tid = anchor.get("turn_id")
                if tid in known.get(gid, ()) and tid not in ids:
                    ids.append(tid)
            if not ids:
                skipped["evidence does not resolve"] += 1
                continue
            answer = qa.get("answer") or qa.get("correct_option") or ""
            out.append(
                QAItem(
                    qa.get("id") or f"{gid}#{i}",
                    gid,
                    qa["question"],
                    str(answer),
                    qa.get("category", "?"),
                    tuple(ids),
                )
            )
    return out


def answer_set_target(q: dict) -> str:
    """The short answer an answer-set question (``tests/data/answers_v*``) asks for: the
    first alternative of each ``expect`` group (``"X, then Y"`` when ``ordered``), and a
    ``Name: value`` line per ``per_person`` entry."""
    firsts = [str(group[0]) for group in q.get("expect", []) if group]
    head = (", then " if q.get("ordered") else ", ").join(firsts)
    people = [f"{name}: {alts[0]}" for name, alts in q.get("per_person", {}).items() if alts]
    return "\n".join(([head] if head else []) + people)


def load_answer_set(folder: str | Path) -> QAData:
    """An answer set (``conversations/*.jsonl`` + ``questions.json``) as QA data: its
    questions' answers are :func:`answer_set_target`, their evidence the ``gold`` ids."""
    root = Path(folder)
    groups: list[tuple[str, pa.Table]] = []
    for path in sorted((root / "conversations").glob("*.jsonl")):
        groups += load(path, "jsonl")
    raw = json.loads((root / "questions.json").read_text(encoding="utf-8"))["questions"]
    questions = [
        QAItem(q["id"], q["data"], q["question"], answer_set_target(q), q["type"], tuple(q["gold"]))
        for q in raw
    ]
    return QAData("answers", groups, questions)


def load_qa(path: str | Path, fmt: str) -> QAData:
    """Load messages and usable questions from a file or a folder of network files."""
    path = Path(path)
    if fmt not in ("locomo", "socialmem"):
        raise ValueError(f"unknown QA format {fmt!r}; use locomo or socialmem")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # folder loads warn about non-network files
        groups = load(path, fmt)
    known = {gid: set(table["msg_id"].to_pylist()) for gid, table in groups}
    skipped: Counter = Counter()
    reader = _locomo_questions if fmt == "locomo" else _socialmem_questions
    questions = reader(path, known, skipped)
    return QAData(fmt, groups, questions, skipped)

"""Read a short answer from the composed evidence with a small local language model
(``AnswerConfig(reader=SPEC)``, off by default).

The extractive answerer writes a whole sentence of a message; many questions want a few
words ("adoption agencies", "7 May 2023"). The reader is SmolLM2-135M-Instruct with a LoRA
adapter fine-tuned for this one job (:mod:`speakerflow.training.reader`): it is shown the
question and the first :data:`MAX_LINES` messages of the composed evidence, each as
``[day] speaker: text`` with relative time words followed by the day they mean (the same
:func:`~.answer_text.annotate` the extractive lines use), and writes the answer in a few
words, greedy. The extractive line is kept as the answer's quote
(:attr:`~.answer_text.Answered.quote`), and the cited ids do not change: the reader only
rewords, it never adds evidence.

The same :func:`reader_chat` builds the prompts of training and of inference, so what the
adapter saw is what it is shown. A model that cannot load warns once and leaves the
extractive answer as it is.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from speakerflow.ops.query.answer_text import annotate
from speakerflow.ops.query.answer_units import terms

#: the reader adapter shipped in the repository (over the PyPI SmolLM2 base), and its name
SHIPPED_READER = Path(__file__).with_name("smollm2_reader")
READER_NAME = "smollm2-reader"
SYSTEM = "Answer the question in a few words, using only the messages."
#: evidence messages shown, and the words kept of each
MAX_LINES = 5
LINE_WORDS = 60
#: new tokens of a reply (a per-person answer is a line per person)
MAX_NEW_TOKENS = 48
MAX_REPLY_LINES = 8


def evidence_line(speaker: str | None, ts: datetime | None, text: str) -> str:
    """``[7 May 2023] Caroline: text`` (relative days annotated, long texts clipped)."""
    words = " ".join(text.split()).split(" ")
    if len(words) > LINE_WORDS:
        text = " ".join(words[:LINE_WORDS]) + " ..."
    text = annotate(text, ts)
    day = f"[{ts.day} {ts:%B %Y}] " if ts is not None else ""
    return f"{day}{speaker or 'note'}: {text}"


def evidence_lines(evidence: Sequence[Any], view: Any = None, limit: int = MAX_LINES) -> list[str]:
    """The first ``limit`` distinct messages of the composed ``evidence``, in its order, as
    :func:`evidence_line` writes them: an excerpt is its message; a record gives the messages
    it rests on when ``view`` (a GroupView) holds them, else its own text."""
    seen: set[str] = set()
    out: list[str] = []
    for item in evidence:
        if item.kind not in ("excerpt", "record"):
            continue
        if item.kind == "record" and view is not None:
            rows = [view.pos[m] for m in item.msg_ids if m in view.pos]
            found = [(view.ids[r], view.speakers[r], view.ts[r], view.texts[r]) for r in rows]
        else:
            key = item.msg_ids[0] if item.msg_ids else f"{item.kind}:{item.rank}"
            found = [(key, item.speaker, item.ts, item.text)]
        for key, speaker, ts, text in found:
            if key in seen:
                continue
            seen.add(key)
            out.append(evidence_line(speaker, ts, text))
            if len(out) >= limit:
                return out
    return out


def reader_chat(question: str, lines: Sequence[str]) -> list[dict[str, str]]:
    """The reader's chat messages (system + user) for ``question`` over evidence ``lines``."""
    body = "\n".join(lines[:MAX_LINES])
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Messages:\n{body}\nQuestion: {question.strip()}"},
    ]


class Reader:
    """``read_batch([(question, lines), ...])``: one short answer per question."""

    def __init__(self, spec: str, device: str = "auto"):
        from speakerflow.ops.backends.transformers import TransformersChat

        folder = SHIPPED_READER if spec == READER_NAME else spec
        self.backend = TransformersChat(model_dir=folder, device=device, max_batch=8)

    def read_batch(self, items: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
        chats = [reader_chat(q, lines) for q, lines in items]
        results = self.backend.chat_batch(chats, max_tokens=MAX_NEW_TOKENS, temperature=0.0)
        return [clean(r.text) for r in results]


def clean(text: str) -> str:
    """The reply's non-empty lines (at most :data:`MAX_REPLY_LINES`: one per person asked
    about), each stripped of surrounding quotes and spaces."""
    lines = [line.strip().strip('"').strip() for line in text.splitlines()]
    return "\n".join([line for line in lines if line][:MAX_REPLY_LINES])


def grounded_share(reply: str, lines: Sequence[str]) -> float:
    """The share of the reply's content words (stemmed, :func:`~.answer_units.terms`) that
    the evidence lines hold; 1.0 for a reply with none (a bare number or date is checked by
    its digits being in the lines)."""
    words = terms(reply)
    evidence = " ".join(lines)
    if not words:
        digits = [t for t in reply.replace(",", " ").split() if any(c.isdigit() for c in t)]
        return sum(d.strip(".") in evidence for d in digits) / len(digits) if digits else 1.0
    return len(words & terms(evidence)) / len(words)


@functools.cache
def shared_reader(spec: str) -> Reader | None:
    """The process's reader for ``spec``; ``None``, with a warning, when it cannot load."""
    try:
        return Reader(spec)
    except Exception as exc:  # noqa: BLE001 - a missing model only loses the short answer
        warnings.warn(
            f"answer reader: model {spec!r} did not load ({exc}); answers stay extractive",
            stacklevel=2,
        )
        return None

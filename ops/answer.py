"""Answer: the frozen answerer over composed evidence.

- ``rules`` (no model): extractive. Every sentence of the evidence (excerpts and records)
  is scored by the issue words it contains (weighted by rarity within the evidence) plus
  a small prior from the item's rank; the best sentence is the answer, attributed to its
  speaker ("Caroline: ..."). A "when" question appends the time the sentence was said.
  When the projection spans several people, each person row gets its own line (a person
  with an explicit empty row is reported as "no record"). A question about change (tense
  ``full``) gets the two best distinct statements, oldest first, with their times. When no
  sentence shares an issue word, the answer is :data:`NO_INFO`.
- a chat model: the evidence context plus rules for attribution, per-person coverage,
  head/history use and empty rows; the reply is used as given (stripped).

:class:`Answer` is the operator (Compose's ``evidence`` and ``context`` -> ``answer``).
"""
from __future__ import annotations

import math
import re
from collections import Counter

import pyarrow as pa

from speakerflow.graphs import query_terms
from speakerflow.schemas import EvidenceItem, Projection

from .base import Context, Operator, OperatorConfig, put_columns
from .project import is_rollup
from .query_tables import PROJECTION_COLUMNS, evidence_items, projections, schema_of
from .registry import register

NO_INFO = "There is no information available in the conversation to answer this question."
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WHEN = re.compile(r"^\s*(when|what (date|day|time|year|month))\b", re.I)

ANSWER_PROMPT = """Answer a question about a multi-party group conversation using ONLY the material below.
[RAW EXCERPTS] are verbatim messages tagged with speaker and time: use them for exact values.
[MEMORY SLICE] is memory by person: "* current" is the latest state, "- history" older states,
"(none)" means the person has no record on this matter.
Rules: attribute every fact to the right person; when several people are listed, answer for each;
never replace a person's own view with the group's outcome; use history only for questions about
change; for "who never ..." the answer is the people marked (none); if the material does not
contain the answer, reply exactly: {no_info}
Be concise."""


class AnswerConfig(OperatorConfig):
    """``backend``: ``rules`` or ``chat`` (uses the given ChatBackend); ``max_tokens`` for chat."""

    backend: str = "rules"
    max_tokens: int = 200
    max_sentences_per_row: int = 1


def _sentences(item: EvidenceItem) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(item.text) if s.strip()]


def answer_rules(projection: Projection, evidence: list[EvidenceItem], config: AnswerConfig | None = None) -> str:
    """The extractive answer (see the module doc)."""
    config = config or AnswerConfig()
    words = set(query_terms(projection.issue)) or set(query_terms(projection.question))
    cands: list[tuple[float, EvidenceItem, str]] = []
    df: Counter = Counter()
    split = [(item, _sentences(item)) for item in evidence if item.kind != "empty_row"]
    for _, sents in split:
        for s in sents:
            df.update(words & set(query_terms(s)))
    n = sum(len(s) for _, s in split) or 1
    for item, sents in split:
        for s in sents:
            hit = words & set(query_terms(s))
            if not hit:
                continue
            score = sum(math.log(1 + n / df[w]) for w in hit) + 1.0 / (1 + item.rank)
            if projection.source and item.speaker == projection.source:
                score += 1.0  # "what does A think of B": A's own words about B first
            cands.append((score, item, s))
    if not cands:
        return NO_INFO
    cands.sort(key=lambda c: -c[0])
    when = bool(_WHEN.search(projection.question))
    person_rows = [r for r in dict.fromkeys(e.row for e in evidence) if r not in (None, "GROUP")]
    if len(person_rows) < 2 or not is_rollup(projection):
        if projection.tense == "full":
            return _change_line(cands)
        return _line(cands[0][1], cands[0][2], when)
    lines = []
    for row in person_rows:
        mine = [c for c in cands if c[1].row == row or (c[1].row is None and c[1].speaker == row)]
        # no issue word in this person's evidence: their best-ranked item still speaks for them
        top = next((e for e in evidence if e.row == row and e.kind != "empty_row" and e.text), None)
        if mine:
            lines.extend(_line(c[1], c[2], when) for c in mine[: config.max_sentences_per_row])
        elif top is not None:
            lines.append(_line(top, _sentences(top)[0], when))
        else:
            lines.append(f"{row}: no record on this matter")
    return "\n".join(lines)


def _change_line(cands: list[tuple[float, EvidenceItem, str]]) -> str:
    """For "how did it change" questions: the two best distinct statements, oldest first."""
    picked: list[tuple[float, EvidenceItem, str]] = []
    for c in cands:
        if all(c[2] != p[2] for p in picked):
            picked.append(c)
        if len(picked) == 2:
            break
    picked.sort(key=lambda c: (c[1].ts is None, c[1].ts))
    parts = [_line(item, sentence, True) for _, item, sentence in picked]
    return parts[0] if len(parts) == 1 else f"earlier: {parts[0]}; later: {parts[1]}"


def _line(item: EvidenceItem, sentence: str, when: bool) -> str:
    who = item.row if item.kind == "record" and item.row else item.speaker
    if item.kind == "record" and item.speaker and item.row not in (None, "GROUP") and item.speaker != item.row:
        who = f"{item.speaker} about {item.row}"
    text = f"{who}: {sentence}" if who else sentence
    if when and item.ts is not None:
        text += f" ({item.ts.day} {item.ts:%B %Y})"
    return text


def answer_chat(projection: Projection, context: str, chat, config: AnswerConfig | None = None) -> tuple[str, int]:
    """Ask a chat model; returns (answer, tokens used)."""
    config = config or AnswerConfig()
    result = chat.chat([{"role": "system", "content": ANSWER_PROMPT.format(no_info=NO_INFO)},
                        {"role": "user", "content": f"Question: {projection.question}\n{context}\n"
                                                    "Answer using the material above."}],
                       max_tokens=config.max_tokens, temperature=0.0)
    return result.text.strip() or NO_INFO, result.tokens


@register
class Answer(Operator):
    """Compose's ``evidence`` and ``context`` + the projection -> ``answer`` (never empty:
    :data:`NO_INFO` when nothing answers). With ``backend="chat"`` it asks
    ``ctx.backends["answer"]`` (model calls and tokens metered)."""

    name = "answer"
    consumes = ("question_id", *PROJECTION_COLUMNS, "evidence", "context")
    produces = schema_of(("answer", pa.string()))
    passthrough = True
    Config = AnswerConfig

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        chat = ctx.backends.get("answer")
        if self.config.backend == "chat" and chat is None:
            raise ValueError("Answer(backend='chat') needs ctx.backends['answer'] = <a ChatBackend>; "
                             "or use backend='rules'")
        answers = []
        for projection, evidence, context in zip(projections(table), evidence_items(table),
                                                 table["context"].to_pylist(), strict=True):
            if self.config.backend == "chat":
                answer, used = answer_chat(projection, context, chat, self.config)
                self.stats.count_model_call(used)
            else:
                answer = answer_rules(projection, evidence, self.config)
            answers.append(answer or NO_INFO)
        return put_columns(table, {"answer": answers}, self.produces)

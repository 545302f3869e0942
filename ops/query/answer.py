"""Answer: the frozen answerer over composed evidence.

- ``rules`` (no model): extractive. ``AnswerConfig.picker`` chooses how the answer is picked
  from the evidence: ``"old"`` is the first picker (:mod:`.answer_old`); the units both read
  are in :mod:`.answer_units`, the question types in :mod:`.answer_intent` and the writing
  of a line (dates beside relative words, the reason, the clause) in :mod:`.answer_text`.
- a chat model: the evidence context plus rules for attribution, per-person coverage,
  head/history use and empty rows; the reply is used as given (stripped).

When nothing in the evidence answers the question the answer is :data:`NO_INFO`.
:class:`Answer` is the operator (Compose's ``evidence`` and ``context`` -> ``answer``).
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from speakerflow.ops.core.base import Batch, Context, Operator
from speakerflow.ops.core.registry import register
from speakerflow.ops.query.answer_config import AnswerConfig
from speakerflow.ops.query.answer_intent import question_type
from speakerflow.ops.query.answer_old import answer_old
from speakerflow.ops.query.answer_pick import answer_learned, answer_scored
from speakerflow.ops.query.answer_reader import evidence_lines, grounded_share, shared_reader
from speakerflow.ops.query.answer_text import NO_INFO, Answered, annotate
from speakerflow.ops.query.answer_units import Messages, TextMemo, build_units, stem
from speakerflow.ops.query.group_view import GroupView
from speakerflow.ops.query.query_tables import (
    ANSWER_QUOTE,
    ANSWER_SAID,
    ANSWERS,
    COMPOSED,
    PROJECTION,
    PROJECTION_COLUMNS,
    schema_of,
)
from speakerflow.schemas import EvidenceItem, Projection

__all__ = [
    "NO_INFO",
    "Answer",
    "AnswerConfig",
    "Answered",
    "Messages",
    "annotate",
    "answer_chat",
    "answer_line",
    "answer_rules",
    "question_type",
    "stem",
]

ANSWER_PROMPT = """Answer a question about a multi-party group conversation using ONLY the material below.
[RAW EXCERPTS] are verbatim messages tagged with speaker and time: use them for exact values.
[MEMORY SLICE] is memory by person: "* current" is the latest state, "- history" older states,
"(none)" means the person has no record on this matter.
Rules: attribute every fact to the right person; when several people are listed, answer for each;
never replace a person's own view with the group's outcome; use history only for questions about
change; for "who never ..." the answer is the people marked (none); if the material does not
contain the answer, reply exactly: {no_info}
Be concise."""  # noqa: E501


def answer_rules(
    projection: Projection,
    evidence: list[EvidenceItem],
    config: AnswerConfig | None = None,
    view=None,
    embedder=None,
    roster: list[str] | None = None,
) -> str:
    """The extractive answer line (:func:`answer_line`'s text)."""
    return answer_line(projection, evidence, config, view, embedder, roster).text


def answer_line(
    projection: Projection,
    evidence: list[EvidenceItem],
    config: AnswerConfig | None = None,
    view=None,
    embedder=None,
    roster: list[str] | None = None,
) -> Answered:
    """The extractive answer and the day its message was said when a date answer means
    another (:class:`Answered`). ``view`` (a GroupView) lets records answer with their
    messages' own words; ``embedder`` adds the question-message cosine; ``roster`` names the
    people (default: the view's speakers, else those of the evidence)."""
    config = config or AnswerConfig()
    if config.picker not in PICKERS:
        raise ValueError(f"AnswerConfig.picker={config.picker!r}: use one of {sorted(PICKERS)}")
    messages = Messages(view) if view is not None else None
    names = sorted(
        set(roster or [])
        | set(messages.roster if messages else [])
        | {e.speaker for e in evidence if e.speaker}
        | {e.row for e in evidence if e.row not in (None, "GROUP", "ALL")}
    )
    memo = TextMemo.of(view) if view is not None else TextMemo()
    units = build_units(evidence, messages, memo)
    if not units:
        return Answered(NO_INFO)
    pick = PICKERS[config.picker]
    got = pick(projection, evidence, units, names, messages, embedder, config, memo)
    if isinstance(got, Answered):
        return got if got.text else Answered(NO_INFO)
    return Answered(got or NO_INFO)


#: the rules answer pickers by name (``AnswerConfig.picker``)
PICKERS: dict[str, Callable[..., str | Answered | None]] = {
    "old": answer_old,
    "scored": answer_scored,
    "learned": answer_learned,
}


def answer_chat(
    projection: Projection, context: str, chat, config: AnswerConfig | None = None
) -> tuple[str, int]:
    """Ask a chat model; returns (answer, tokens used)."""
    config = config or AnswerConfig()
    result = chat.chat(
        [
            {"role": "system", "content": ANSWER_PROMPT.format(no_info=NO_INFO)},
            {
                "role": "user",
                "content": f"Question: {projection.question}\n{context}\n"
                "Answer using the material above.",
            },
        ],
        max_tokens=config.max_tokens,
        temperature=0.0,
    )
    return result.text.strip() or NO_INFO, result.tokens


def read_short(
    config: AnswerConfig, items: list[tuple[int, str, list[str]]], answers: list, quotes: list
) -> int:
    """Put the reader's short answers (:mod:`.answer_reader`) in ``answers`` at the items'
    indexes, the extractive lines they replace in ``quotes``; an empty reply, or one whose
    words the evidence does not hold (``config.reader_grounded``), keeps the line. Returns
    the questions the model read (0 when it did not load)."""
    reader = shared_reader(config.reader) if config.reader else None
    if reader is None:
        return 0
    replies = reader.read_batch([(q, lines) for _, q, lines in items])
    for (i, _, lines), reply in zip(items, replies, strict=True):
        if reply and grounded_share(reply, lines) >= config.reader_grounded:
            quotes[i] = quotes[i] or answers[i]
            answers[i] = reply
    return len(items)


@register
class Answer(Operator):
    """Compose's ``evidence`` and ``context`` + the projection -> ``answer`` (never empty:
    :data:`NO_INFO` when nothing answers) and ``answer_said`` (the day the answering message
    was said when a date answer means another day, else null) and ``answer_quote`` (the whole
    line a short answer was taken from, else null). With ``backend="chat"`` it asks
    ``ctx.backends["answer"]`` (model calls and tokens metered). The rules answerer reads
    the messages of ``ctx.store`` (when there is one) and ``ctx.backends["embedder"]``."""

    name = "answer"
    consumes = ("question_id", *PROJECTION_COLUMNS, "evidence", "context")
    produces = schema_of(
        ("answer", pa.string()), ("answer_said", pa.string()), ("answer_quote", pa.string())
    )
    passthrough = True
    Config = AnswerConfig
    config: AnswerConfig

    def run_batch(self, batch: Batch, ctx: Context) -> Batch:
        chat = ctx.backends.get("answer")
        if self.config.backend == "chat" and chat is None:
            raise ValueError(
                "Answer(backend='chat') needs ctx.backends['answer'] = <a ChatBackend>; "
                "or use backend='rules'"
            )
        view = None
        if self.config.backend != "chat" and ctx.store is not None:
            view = GroupView.of(ctx.store)
        answers: list[str] = []
        said: list[str | None] = []
        quotes: list[str | None] = []
        to_read: list[tuple[int, str, list[str]]] = []
        for projection, composed in zip(batch.get(PROJECTION), batch.get(COMPOSED), strict=True):
            evidence, context = composed.evidence, composed.context
            if self.config.backend == "chat":
                answer, used = answer_chat(projection, context, chat, self.config)
                self.stats.count_model_call(used)
                line = Answered(answer)
            else:
                line = answer_line(
                    projection, evidence, self.config, view, ctx.backends.get("embedder")
                )
            answers.append(line.text or NO_INFO)
            said.append(line.said)
            quotes.append(line.quote)
            if self._reads(projection, answers[-1]):
                lines = evidence_lines(evidence, view)
                if lines:
                    to_read.append((len(answers) - 1, projection.question, lines))
        read = read_short(self.config, to_read, answers, quotes) if to_read else 0
        for _ in range(read):  # one model call a question the reader read
            self.stats.count_model_call(0)
        return batch.put(ANSWERS, answers).put(ANSWER_SAID, said).put(ANSWER_QUOTE, quotes)

    def _reads(self, projection: Projection, answer: str) -> bool:
        """Whether the reader (``AnswerConfig.reader``) rewrites this rules answer."""
        c = self.config
        kind = question_type(projection)
        return bool(
            c.reader
            and c.backend != "chat"
            and answer != NO_INFO
            and kind not in c.reader_skip
            and (not c.reader_only or kind in c.reader_only)
        )

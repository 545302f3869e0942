"""Judge: token-F1, evidence recall@B, and model judges when a chat backend is configured.

- :func:`token_f1` follows the SpeakerMem-R1 definition exactly: lower-case, strip
  surrounding whitespace and a trailing period, split on whitespace (repeated whitespace
  collapses), turn both sides into token *sets*; precision = |A & G| / |A|, recall =
  |A & G| / |G|, F1 = 2pr / (p + r); 0.0 when either set or the intersection is empty.
  The value is in [0, 1] (reports multiply by 100 only when they say so).
- :func:`evidence_recall`: the share of gold evidence ids among the first ``budget``
  distinct cited ids (cited order is the composed order).
- :func:`llm_judge` (binary, "Final: Correct/Incorrect") and :func:`rubric_score`
  (SocialMemBench 0.0-1.0 rubric), both through any ChatBackend; output is parsed and
  validated, unusable output raises ``ValueError`` naming what was wrong.

>>> token_f1("The cat sat.", "the cat")
0.8
>>> evidence_recall(["a", "b", "a", "c"], ["c", "x"], 3)
0.5
"""

from __future__ import annotations

import json
import re
from typing import Any

import pyarrow as pa

from speakerflow.ops.core.base import Context, Operator, OperatorConfig
from speakerflow.ops.core.registry import register
from speakerflow.schemas import JUDGMENT_SCHEMA, Judgment, to_table


def _token_set(text: str) -> set[str]:
    text = str(text).lower().strip()
    if text.endswith("."):
        text = text[:-1]
    return set(text.split())


def token_f1(prediction: str, gold: str) -> float:
    """Set-based token F1 of ``prediction`` against ``gold`` (see the module doc)."""
    pred, ref = _token_set(prediction), _token_set(gold)
    common = len(pred & ref)
    if not pred or not ref or not common:
        return 0.0
    p, r = common / len(pred), common / len(ref)
    return 2 * p * r / (p + r)


def evidence_recall(cited: list[str], gold: list[str] | tuple[str, ...], budget: int) -> float:
    """Share of ``gold`` among the first ``budget`` distinct ids of ``cited`` (0.0 for no gold)."""
    gold_set = set(gold)
    if not gold_set:
        return 0.0
    first: list[str] = []
    for mid in cited:
        if mid not in first:
            first.append(mid)
            if len(first) >= budget:
                break
    return len(gold_set & set(first)) / len(gold_set)


JUDGE_PROMPT = """You are a strict judge of whether an agent's answer matches the gold answer to a question.
Paraphrases with the same meaning count as correct. Give a short reasoning paragraph, then the
verdict on its own last line as: Final: Correct  or  Final: Incorrect"""  # noqa: E501

RUBRIC_PROMPT = """You grade answers about social group conversations on factual correctness, 0.0 to 1.0.
A concise correct answer scores the same as a verbose one. Attributing a fact to the wrong person
scores at most 0.3. "NOT ENOUGH INFORMATION" scores 0.0. 1.0: core fact and attribution correct;
0.7-0.9: one minor part missing; 0.4-0.6: right direction, wrong or missing key detail;
0.0-0.3: wrong attribution, wrong fact, contradiction or no answer. For per-person questions the
score is the fraction of members recalled correctly. Output JSON only: {"score": 0.0, "rationale": "..."}"""  # noqa: E501

_FINAL = re.compile(r"final\s*:\s*(correct|incorrect)", re.I)


def _ask(chat, system: str, user: str, max_tokens: int):
    """One greedy (temperature 0) reply of ``chat`` to a system prompt and a user turn."""
    return chat.chat(
        [{"role": "system", "content": system}, {"role": "user", "content": user}],
        max_tokens=max_tokens,
        temperature=0.0,
    )


def llm_judge(chat, question: str, gold: str, answer: str, question_id: str = "") -> Judgment:
    """Binary verdict (1.0 correct, 0.0 incorrect) from a chat model; ``ValueError`` if it gives
    none."""
    reply = _ask(
        chat,
        JUDGE_PROMPT,
        f"Question: {question}\nGold Answer: {gold}\nAgent Answer: {answer}",
        max_tokens=300,
    )
    verdicts = _FINAL.findall(reply.text)
    if not verdicts:
        raise ValueError(
            f"judge reply for {question_id or question!r} has no 'Final: Correct/Incorrect' line"
        )
    value = 1.0 if verdicts[-1].lower() == "correct" else 0.0
    return Judgment(
        question_id=question_id, metric="llm_judge", value=value, detail=reply.text[-500:]
    )


def rubric_score(chat, question: str, gold: str, answer: str, question_id: str = "") -> Judgment:
    """SocialMemBench rubric score in [0, 1] from a chat model; ``ValueError`` on unusable
    output."""
    reply = _ask(
        chat,
        RUBRIC_PROMPT,
        f"Question: {question}\nGold answer: {gold}\nGenerated answer: {answer}",
        max_tokens=200,
    )
    match = re.search(r"\{.*\}", reply.text, re.S)
    try:
        data: Any = json.loads(match.group(0)) if match else None
        score = float(data["score"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        raise ValueError(
            f"rubric reply for {question_id or question!r} is not JSON with a numeric 'score'"
        ) from None
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"rubric score {score} for {question_id or question!r} is outside [0, 1]")
    return Judgment(
        question_id=question_id,
        metric="rubric",
        value=score,
        detail=str(data.get("rationale", ""))[:500],
    )


class JudgeConfig(OperatorConfig):
    """Budgets for evidence recall; ``llm`` adds the binary model judge
    (``ctx.backends["judge"]``)."""

    budgets: tuple[int, ...] = (5, 10, 20)
    llm: bool = False


@register
class Judge(Operator):
    """Answers vs gold -> judgments (one row per question and metric).

    Consumes ``question_id``, ``question``, ``answer``, ``gold`` (the gold answer),
    ``cited_ids`` (composed order) and ``gold_ids`` (gold evidence); produces
    :data:`~speakerflow.schemas.JUDGMENT_SCHEMA` rows: ``token_f1``, ``recall@B`` per budget,
    and ``llm_judge`` when configured. A judge reply without a verdict is a reject (counted),
    not a score.
    """

    name = "judge"
    consumes = ("question_id", "question", "answer", "gold", "cited_ids", "gold_ids")
    produces = JUDGMENT_SCHEMA
    Config = JudgeConfig
    config: JudgeConfig

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        chat = ctx.backends.get("judge") if self.config.llm else None
        out: list[Judgment] = []
        for row in table.to_pylist():
            qid = row["question_id"]
            out.append(
                Judgment(
                    question_id=qid, metric="token_f1", value=token_f1(row["answer"], row["gold"])
                )
            )
            for b in self.config.budgets:
                out.append(
                    Judgment(
                        question_id=qid,
                        metric=f"recall@{b}",
                        value=evidence_recall(row["cited_ids"], row["gold_ids"], b),
                    )
                )
            if chat is not None:
                try:
                    out.append(llm_judge(chat, row["question"], row["gold"], row["answer"], qid))
                    self.stats.model_calls += 1
                except ValueError:
                    self.stats.rejects += 1
        return to_table(out, Judgment)

"""Rerank the scoring picker's best sentences by how well each one *predicts the question*
under a small local language model (``AnswerConfig(rerank="smollm2-135m")``).

The score of a sentence is the mean log-probability of the question's tokens given the
sentence, ``log P(question | "Passage: speaker: sentence ... Question:")``: query likelihood,
as in unsupervised passage reranking (Sachan et al. 2022, "Improving Passage Retrieval with
Zero-Shot Question Generation"). The question is the same for every candidate, so the scores
compare across candidates without any length correction, and no labelled data or threshold
is involved. The ``rerank_top`` best units of :func:`~.answer_score.score_units` get
``rerank_weight`` x the z-score of their likelihood among them added to their score; the rest
keep theirs.

The model is loaded once per process (torch, CPU or CUDA) by the Writer's local backend
(:class:`~speakerflow.ops.backends.transformers.TransformersChat`: the same model specs). A
model that cannot load warns once and leaves the ranking as it is.
"""

from __future__ import annotations

import functools
import warnings
from collections import OrderedDict

from speakerflow.ops.query.answer_units import Unit

PROMPT = "Passage: {passage}\nPlease write a question based on this passage.\nQuestion:"
#: tokens of a passage kept (its end), and of the question
PASSAGE_TOKENS = 200
QUESTION_TOKENS = 64


class QueryLikelihood:
    """``score(question, passages)``: mean log P(question tokens | passage prompt) for each
    passage, memoised per (question, passage)."""

    def __init__(self, spec: str, device: str = "auto", memo: int = 20000):
        from speakerflow.ops.backends.transformers import TransformersChat

        # the Writer's local backend loads it: model specs, adapters merged, device checked
        backend = TransformersChat(model_dir=spec, device=device)
        self.tokenizer, self.model, self.device = backend.tokenizer, backend.model, backend.device
        self._memo: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._size = memo

    def score(self, question: str, passages: list[str]) -> list[float]:
        todo = list(dict.fromkeys(p for p in passages if (question, p) not in self._memo))
        if todo:
            for passage, value in zip(todo, self._batch(question, todo), strict=True):
                self._memo[(question, passage)] = value
            while len(self._memo) > self._size:
                self._memo.popitem(last=False)
        return [self._memo[(question, p)] for p in passages]

    def _batch(self, question: str, passages: list[str]) -> list[float]:
        import torch

        tok = self.tokenizer
        q_ids = tok(" " + question.strip(), add_special_tokens=False)["input_ids"][:QUESTION_TOKENS]
        if not q_ids:
            return [0.0] * len(passages)
        seqs = []
        for passage in passages:
            prompt = tok(PROMPT.format(passage=passage.strip()), add_special_tokens=False)
            seqs.append(prompt["input_ids"][-PASSAGE_TOKENS:] + q_ids)
        width = max(len(s) for s in seqs)
        ids = torch.zeros((len(seqs), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, seq in enumerate(seqs):  # right padding: the question's positions stay exact
            ids[i, : len(seq)] = torch.tensor(seq)
            mask[i, : len(seq)] = 1
        with torch.no_grad():
            logits = self.model(
                input_ids=ids.to(self.device), attention_mask=mask.to(self.device)
            ).logits.float()
        logp = logits.log_softmax(-1).cpu()
        out = []
        n = len(q_ids)
        for i, seq in enumerate(seqs):
            start = len(seq) - n
            target = ids[i, start : len(seq)].unsqueeze(1)
            out.append(float(logp[i, start - 1 : len(seq) - 1].gather(1, target).mean()))
        return out


@functools.cache
def shared_scorer(spec: str) -> QueryLikelihood | None:
    """The process's scorer for model ``spec``; ``None``, with a warning, when it cannot load."""
    try:
        return QueryLikelihood(spec)
    except Exception as exc:  # noqa: BLE001 - a missing model only loses the rerank
        warnings.warn(
            f"answer rerank: model {spec!r} did not load ({exc}); answers are picked without it",
            stacklevel=2,
        )
        return None


def rerank(
    ranked: list[tuple[float, Unit]], question: str, spec: str, weight: float, top: int
) -> list[tuple[float, Unit]]:
    """``ranked`` (score, unit), best first, with the ``top`` best rescored by query
    likelihood (module doc); unchanged when there is one candidate or no model."""
    head = ranked[:top]
    if len(head) < 2 or weight <= 0:
        return ranked
    scorer = shared_scorer(spec)
    if scorer is None:
        return ranked
    likely = scorer.score(question, [f"{u.speaker or 'note'}: {u.text}" for _, u in head])
    mean = sum(likely) / len(likely)
    spread = (sum((x - mean) ** 2 for x in likely) / len(likely)) ** 0.5 or 1.0
    # a question predicts a question: a sentence that asks is never lifted by it
    lift = [(x - mean) / spread for x in likely]
    lift = [min(z, 0.0) if u.asks else z for (_, u), z in zip(head, lift, strict=True)]
    new = [(s + weight * z, u) for (s, u), z in zip(head, lift, strict=True)]
    new.sort(key=lambda su: (-su[0], su[1].rank))
    return new + ranked[top:]

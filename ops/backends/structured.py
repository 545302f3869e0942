"""Structured decoding over a cached prompt: choose among given texts, or generate freely
until a stop string, with one encoding of the prompt per reply.

:class:`CachedDecoder` holds the token ids of ``prompt + text`` (the reply written so far)
in a ``transformers`` KV cache (:class:`~transformers.DynamicCache`) and the logits after
its last token. Writing text (:meth:`~CachedDecoder.set_text`) re-tokenises the whole string
and keeps the cache up to the longest common token prefix with what it holds (``crop``),
feeding only the tokens after it; so a text is always fed as the tokenizer splits it as a
whole, never as the concatenation of separately tokenised pieces.

:meth:`~CachedDecoder.choose` scores each option as the log-probability of the token ids of
``text + option`` from the first token position where any option's ids depart from those held
(the same start for every option, so a boundary token that merges the end of the text
with an option's opening is scored alike for all), then writes the best option.
:meth:`~CachedDecoder.generate` decodes greedily until a stop string, a token cap or a
repeated n-gram and returns the text (without writing it).

Only the ``transformers`` (torch) backend offers the cache this needs; see
:func:`decoder_for`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from speakerflow.ops.backends.errors import BackendConfigError, BackendRequestError


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token id lists."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass(frozen=True)
class Choice:
    """The result of :meth:`CachedDecoder.choose`: the index of the option written and the
    log-probability of every option (same order as given)."""

    index: int
    logprobs: tuple[float, ...]


class CachedDecoder:
    """A prompt plus a growing reply ``text`` over a KV cache (see the module docstring).

    ``forwards`` counts model calls (one per fed chunk), ``fed`` the tokens fed, so callers
    can see what re-encoding was avoided.
    """

    def __init__(self, model: Any, tokenizer: Any, prompt: str):
        import torch
        from transformers import DynamicCache

        self._torch = torch
        self.model, self.tokenizer, self.prompt = model, tokenizer, prompt
        self.text = ""
        self.forwards = self.fed = 0
        self.cache = DynamicCache()
        self.ids: list[int] = []
        self.last: Any = None  # logits after the last id in the cache
        ids = self._encode("")
        if not ids:
            raise BackendRequestError("structured decoding: the prompt is empty")
        limit = getattr(model.config, "max_position_embeddings", None)
        if limit and len(ids) >= limit:
            raise BackendRequestError(
                f"structured decoding: the prompt has {len(ids)} tokens but the model takes at "
                f"most {limit}; use smaller windows or a longer-context model"
            )
        self.limit = limit or 10**9
        self._advance(ids)

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(self.prompt + text, add_special_tokens=False)["input_ids"]

    def _feed(self, ids: Sequence[int]) -> Any:
        """Feed ``ids`` after the cache; returns their logits (one row per fed id)."""
        torch = self._torch
        device = self.model.device
        with torch.no_grad():
            out = self.model(
                input_ids=torch.tensor([list(ids)], device=device),
                past_key_values=self.cache,
                use_cache=True,
            )
        self.forwards += 1
        self.fed += len(ids)
        return out.logits[0].float()

    def _advance(self, ids: list[int], start: int | None = None) -> Any:
        """Make the cache hold ``ids``: crop to ``start`` (default: the common prefix with
        what it holds, less one when nothing new would be fed) and feed the rest. Returns the
        logits of the fed ids (their first row predicts ``ids[start + 1]``)."""
        if len(ids) >= self.limit:
            raise BackendRequestError(
                f"structured decoding: the reply reaches the model's {self.limit} tokens"
            )
        keep = common_prefix(self.ids, ids)
        if start is None:
            start = min(keep, len(ids) - 1)
        start = min(start, keep)
        self.cache.crop(start)
        logits = self._feed(ids[start:])
        self.ids, self.last = list(ids), logits[-1]
        return logits

    def set_text(self, text: str) -> None:
        """Make ``text`` the reply so far (extending, shortening or rewriting it)."""
        ids = self._encode(text)
        if ids != self.ids:
            self._advance(ids)
        self.text = text

    def score(self, options: Sequence[str], per_token: bool = False) -> list[float]:
        """Log-probability of each ``text + option`` from the first position where any
        option's token ids depart from those held (the cache is left on the last option);
        ``per_token``: divided by the number of tokens scored (options of unlike lengths)."""
        if not options:
            raise BackendRequestError("structured decoding: no option to choose from")
        encoded = [self._encode(self.text + o) for o in options]
        start = min(common_prefix(self.ids, ids) for ids in encoded)
        start = min(start, *(len(ids) - 1 for ids in encoded))
        if start < 1:
            raise BackendRequestError("structured decoding: an option rewrites the whole prompt")
        scores = []
        for ids in encoded:
            if len(ids) <= start:
                scores.append(0.0)
                continue
            logits = self._advance(ids, start=start - 1)
            logp = logits[:-1].log_softmax(dim=-1)
            target = self._torch.tensor(ids[start:], device=logp.device)
            total = float(logp.gather(1, target[:, None]).sum())
            scores.append(total / len(target) if per_token else total)
        return scores

    def choose(
        self,
        options: Sequence[str],
        per_token: bool = False,
        temperature: float = 0.0,
        rng: random.Random | None = None,
        bias: Sequence[float] | None = None,
    ) -> Choice:
        """Write the option of highest log-probability (first on ties), or with
        ``temperature`` > 0 and ``rng`` one drawn from the softmax of the scores divided by
        the temperature (sampled walks for GRPO); ``bias`` is added to the options' scores
        first (a calibrated preference); see :meth:`score`."""
        scores = self.score(options, per_token)
        if bias is not None:
            scores = [x + b for x, b in zip(scores, bias, strict=True)]
        if temperature > 0 and rng is not None:
            top = max(scores)
            weights = [math.exp((x - top) / temperature) for x in scores]
            best = rng.choices(range(len(options)), weights=weights)[0]
        else:
            best = max(range(len(options)), key=lambda i: (scores[i], -i))
        self.set_text(self.text + options[best])
        return Choice(best, tuple(scores))

    def next_token_prob(self, text: str) -> float:
        """Probability of the first token of ``text`` right after the current ids."""
        ids = self._encode(self.text + text)
        if common_prefix(self.ids, ids) != len(self.ids) or len(ids) == len(self.ids):
            raise BackendRequestError(f"structured decoding: {text!r} does not start a token")
        return float(self.last.softmax(dim=-1)[ids[len(self.ids)]])

    def _best_token(self, new: list[int], stop: str, allow_stop: bool) -> int:
        """The argmax token, or (``allow_stop`` False) the best of the top 32 that neither
        ends the sequence nor brings ``stop``."""
        if allow_stop:
            return int(self.last.argmax())
        for token in self.last.topk(32).indices.tolist():
            if token != self.tokenizer.eos_token_id and stop not in self.tokenizer.decode(
                new + [token]
            ):
                return int(token)
        return int(self.last.argmax())

    def generate(
        self, stop: str, max_tokens: int, repeat_ngram: int = 4, min_tokens: int = 0
    ) -> tuple[str, str]:
        """Greedy text after the current one, up to (not including) ``stop``; returns it and
        why it ended: ``stop``, ``cap`` (``max_tokens`` reached), ``repeat`` (an n-gram of
        ``repeat_ngram`` tokens came again: the text ends before its second occurrence) or
        ``eos``. Before ``min_tokens`` tokens, ``stop`` and the end token are not allowed (the
        best other token among the top 32 is taken). The text is not written (the cache holds
        the generated tokens, so writing it with :meth:`set_text` costs little)."""
        eos = self.tokenizer.eos_token_id
        base = list(self.ids)
        new: list[int] = []
        seen: set[tuple[int, ...]] = set()
        for _ in range(max_tokens):
            token = self._best_token(new, stop, len(new) >= min_tokens)
            if token == eos:
                return self.tokenizer.decode(new), "eos"
            piece = self.tokenizer.decode(new + [token])
            if stop in piece:
                return piece[: piece.index(stop)], "stop"
            new.append(token)
            if repeat_ngram and len(new) >= repeat_ngram:
                gram = tuple(new[-repeat_ngram:])
                if gram in seen:
                    return self.tokenizer.decode(new[:-repeat_ngram]), "repeat"
                seen.add(gram)
            self._advance(base + new)
        return self.tokenizer.decode(new), "cap"


def decoder_for(backend: Any, chat: Sequence[Any], opening: str = "") -> CachedDecoder:
    """A :class:`CachedDecoder` on ``backend``'s model for ``chat`` (its chat template with
    the generation prompt), with ``opening`` already written as the start of the reply.

    Raises :class:`BackendConfigError` for a backend without a torch model and KV cache
    (the ``onnx`` backend: use free decoding there)."""
    model = getattr(backend, "model", None)
    if getattr(backend, "name", "") != "transformers" or model is None:
        raise BackendConfigError(
            f"structured decoding needs the transformers (torch) backend, not "
            f"{getattr(backend, 'name', type(backend).__name__)!r}; use decoding='free' there"
        )
    decoder = CachedDecoder(model, backend.tokenizer, backend.render(chat))
    if opening:
        decoder.set_text(opening)
    return decoder

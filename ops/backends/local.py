"""Shared machinery of the local chat backends (``transformers`` and ``onnx``).

Both render the chat with the folder's tokenizer chat template, generate with the
Hugging Face ``generate`` loop (greedy at temperature 0, otherwise sampling with
``top_p``; KV cache on), decode the new tokens and count prompt and completion tokens.
Subclasses only say how to load the model and where its inputs must live.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from speakerflow.ops.backends.base import ChatMessage, ChatResult
from speakerflow.ops.backends.errors import BackendConfigError, BackendRequestError


class LocalModelConfig(BaseModel):
    """Settings shared by local backends.

    ``model_dir`` (also accepted as ``model``, the name the CLI's ``--model`` uses) is a
    folder saved with ``save_pretrained`` (tokenizer included), or for ``transformers`` any
    spec of :func:`~.models.resolve_model` (``smollm2-135m``, a ``.gguf`` file, a LoRA adapter
    folder over a base); ``max_batch`` bounds how many chats :meth:`chat_batch` pads together;
    ``device`` ``auto`` picks CUDA when available; ``top_p`` applies when sampling
    (temperature > 0); ``seed`` seeds torch's global generator once when the backend is
    built, so successive sampled calls differ but a whole run repeats (None: not seeded).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())

    model_dir: Path = Field(validation_alias=AliasChoices("model_dir", "model"))
    max_batch: int = Field(default=8, ge=1, description="chats generated together by chat_batch")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    top_p: float = Field(default=0.95, gt=0, le=1)
    seed: int | None = None


def tokenizer_folder(base: Path, adapters: Sequence[Path]) -> Path:
    """Where the tokenizer is: the last adapter that carries one, else the base folder (an
    adapter that adds no tokens ships none)."""
    return next((a for a in reversed(adapters) if (a / "tokenizer_config.json").is_file()), base)


def resolve_device(device: str) -> str:
    """``cpu`` or ``cuda``: ``auto`` means CUDA when torch sees a GPU."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise BackendConfigError(
            "device='cuda' was asked for, but torch sees no CUDA device; use device='auto' or 'cpu'"
        )
    return device


class LocalChatBackend:
    """Base class: loads the tokenizer, delegates model loading to :meth:`_load_model`.

    Attributes after construction: ``tokenizer``, ``model``, ``device`` (``cpu``/``cuda``).
    """

    name = "local"
    Config: type[LocalModelConfig] = LocalModelConfig
    #: A file whose presence marks a usable model folder, with a hint when it is missing.
    marker: tuple[str, str] = ("config.json", "save the model with save_pretrained()")

    def __init__(self, config: LocalModelConfig | None = None, **overrides: Any):
        if config is None:
            config = self.Config(**overrides)
        elif overrides:
            config = self.Config(**{**config.model_dump(), **overrides})
        self.config = config
        folder, self.adapters = self._resolve_folder(config.model_dir)
        if not (folder / self.marker[0]).is_file():
            raise BackendConfigError(
                f"{self.name} backend: {folder} has no {self.marker[0]}; {self.marker[1]}"
            )
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder(folder, self.adapters))
        self.tokenizer.padding_side = "left"  # batched generation continues every row's end
        if not self.tokenizer.chat_template:
            raise BackendConfigError(
                f"{self.name} backend: the tokenizer in {folder} has no chat template; use a "
                "chat/instruct model folder (or set tokenizer.chat_template and save it)"
            )
        self.device = self._resolve_device(config.device)
        self.model = self._load_model(folder)
        if config.seed is not None:  # once, so calls differ but a run repeats exactly
            import torch

            torch.manual_seed(config.seed)

    def _resolve_folder(self, spec: Path) -> tuple[Path, list[Path]]:
        """(model folder, LoRA adapters over it); the ONNX backend takes folders only."""
        return Path(spec), []

    def _resolve_device(self, device: str) -> str:
        return resolve_device(device)

    def _load_model(self, folder: Path) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _input_device(self) -> Any:
        return self.model.device

    def render(self, messages: Sequence[ChatMessage]) -> str:
        """The prompt text for ``messages`` (chat template, generation prompt appended)."""
        return self.tokenizer.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=True
        )

    def _gen_args(self, max_tokens: int, temperature: float) -> dict[str, Any]:
        pad = self.tokenizer.pad_token_id
        gen: dict[str, Any] = {
            "max_new_tokens": max(1, max_tokens),
            "pad_token_id": pad if pad is not None else self.tokenizer.eos_token_id,
            "eos_token_id": self.tokenizer.eos_token_id,
            "use_cache": True,
        }
        if temperature > 0:
            gen.update(do_sample=True, temperature=temperature, top_p=self.config.top_p)
        else:
            gen.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        return gen

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> ChatResult:
        """Generate up to ``max_tokens`` new tokens; greedy when ``temperature`` is 0."""
        return self.chat_batch([messages], max_tokens=max_tokens, temperature=temperature)[0]

    def chat_batch(
        self,
        chats: Sequence[Sequence[ChatMessage]],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        prefix: str = "",
        gate: tuple[str, float] | None = None,
    ) -> list[ChatResult]:
        """One completion per chat, ``max_batch`` chats per ``generate`` call (left-padded,
        KV cache on); greedy decoding gives each chat the text it gets alone, up to float
        rounding of the padded batch. ``prefix`` starts every reply (constrained decoding of
        its first tokens, e.g. ``{"actions": [``); the returned texts include it.

        ``gate`` ``(text, min_p)``: the first token of ``text`` (after ``prefix``) may open a
        reply only where the model gives it a probability of at least ``min_p`` there; below,
        decoding takes the best other token (a calibrated threshold instead of the argmax
        for one decision, e.g. NOOP or not: see :mod:`speakerflow.training.noop_gate`)."""
        out: list[ChatResult] = []
        step = self.config.max_batch
        for i in range(0, len(chats), step):
            out += self._generate(chats[i : i + step], max_tokens, temperature, prefix, gate)
        return out

    def first_token(self, prefix: str, text: str) -> int:
        """The id of the first token of ``text`` when it follows ``prefix`` (as generation
        sees it: the prefix tokenised alone, then ``text`` continuing it)."""
        head = self.tokenizer(prefix, add_special_tokens=False)["input_ids"]
        full = self.tokenizer(prefix + text, add_special_tokens=False)["input_ids"]
        if full[: len(head)] != head or len(full) == len(head):
            raise BackendRequestError(
                f"{self.name} backend: {text!r} does not start a new token after {prefix!r}"
            )
        return int(full[len(head)])

    def _generate(
        self,
        chats: Sequence[Sequence[ChatMessage]],
        max_tokens: int,
        temperature: float,
        prefix: str = "",
        gate: tuple[str, float] | None = None,
    ) -> list[ChatResult]:
        import torch

        texts = [self.render(m) + prefix for m in chats]
        enc = self.tokenizer(texts, return_tensors="pt", add_special_tokens=False, padding=True)
        enc = {k: v.to(self._input_device()) for k, v in enc.items()}
        lengths = enc["attention_mask"].sum(dim=1).tolist()
        width = int(enc["input_ids"].shape[1])
        limit = getattr(self.model.config, "max_position_embeddings", None)
        if limit and width >= limit:
            raise BackendRequestError(
                f"{self.name} backend: the prompt has {max(lengths)} tokens but the model takes "
                f"at most {limit}; use smaller segments (window) or a longer-context model"
            )
        gen = self._gen_args(min(max_tokens, (limit or 10**9) - width), temperature)
        if gate is not None:
            token = self.first_token(prefix, gate[0])
            from transformers import LogitsProcessorList

            gen["logits_processor"] = LogitsProcessorList([FirstTokenGate(token, gate[1], width)])
        with torch.no_grad():
            generated = self.model.generate(**enc, **gen)
        eos = self.tokenizer.eos_token_id
        results = []
        for row, n_prompt in zip(generated[:, width:].tolist(), lengths, strict=True):
            if eos in row:
                row = row[: row.index(eos) + 1]
            pad = gen["pad_token_id"]
            while row and row[-1] == pad and pad != eos:
                row.pop()
            text = prefix + self.tokenizer.decode(row, skip_special_tokens=True)
            results.append(ChatResult(text, int(n_prompt), len(row)))
        return results


class FirstTokenGate:
    """A ``generate`` logits processor: on the opening generated token (input width ``start``),
    ``token`` stays possible only in the rows that give it a probability of at least
    ``min_p`` (under the scores decoding sees); elsewhere it is masked out."""

    def __init__(self, token: int, min_p: float, start: int):
        if not 0.0 <= min_p <= 1.0:
            raise BackendConfigError(f"gate min_p must be in [0, 1], got {min_p}")
        self.token, self.min_p, self.start = token, min_p, start

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if input_ids.shape[1] != self.start:
            return scores
        low = scores.float().softmax(dim=-1)[:, self.token] < self.min_p
        scores[low, self.token] = float("-inf")
        return scores

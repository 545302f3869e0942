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
    folder saved with ``save_pretrained`` (tokenizer included);
    ``device`` ``auto`` picks CUDA when available; ``top_p`` applies when sampling
    (temperature > 0); ``seed`` seeds torch's global generator once when the backend is
    built, so successive sampled calls differ but a whole run repeats (None: not seeded).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())

    model_dir: Path = Field(validation_alias=AliasChoices("model_dir", "model"))
    device: Literal["auto", "cpu", "cuda"] = "auto"
    top_p: float = Field(default=0.95, gt=0, le=1)
    seed: int | None = None


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
        folder = Path(config.model_dir)
        if not (folder / self.marker[0]).is_file():
            raise BackendConfigError(
                f"{self.name} backend: {folder} has no {self.marker[0]}; {self.marker[1]}"
            )
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(folder)
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

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> ChatResult:
        """Generate up to ``max_tokens`` new tokens; greedy when ``temperature`` is 0."""
        import torch

        enc = self.tokenizer(self.render(messages), return_tensors="pt", add_special_tokens=False)
        enc = {k: v.to(self._input_device()) for k, v in enc.items()}
        n_prompt = int(enc["input_ids"].shape[1])
        limit = getattr(self.model.config, "max_position_embeddings", None)
        if limit and n_prompt >= limit:
            raise BackendRequestError(
                f"{self.name} backend: the prompt has {n_prompt} tokens but the model takes at "
                f"most {limit}; use smaller segments (window) or a longer-context model"
            )
        gen: dict[str, Any] = {
            "max_new_tokens": max(1, min(max_tokens, (limit or 10**9) - n_prompt)),
            "pad_token_id": (
                self.tokenizer.pad_token_id
                if self.tokenizer.pad_token_id is not None
                else self.tokenizer.eos_token_id
            ),
            "eos_token_id": self.tokenizer.eos_token_id,
            "use_cache": True,
        }
        if temperature > 0:
            gen.update(do_sample=True, temperature=temperature, top_p=self.config.top_p)
        else:
            gen.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with torch.no_grad():
            out = self.model.generate(**enc, **gen)
        new = out[0, n_prompt:]
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        return ChatResult(text, prompt_tokens=n_prompt, completion_tokens=int(new.shape[0]))

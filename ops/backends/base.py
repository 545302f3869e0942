"""The chat-model backend interface shared by every stage that may use a language model
(Writer, Project, Select/ASK, Answer, Judge).

Real backends (``openai``, ``transformers``, ``onnx``) live in sibling modules and import
their heavy libraries lazily. :class:`ScriptedChat` replays canned replies for tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

ChatMessage = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": "..."}


@dataclass(frozen=True)
class ChatResult:
    """One completion: its text and the tokens it cost (prompt + completion)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@runtime_checkable
class ChatBackend(Protocol):
    """Anything that turns a chat into a completion."""

    name: str

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> ChatResult: ...


class ScriptedChat:
    """A test double: returns the scripted replies in order (or ``fn(messages)``), and
    records every call in ``calls``."""

    name = "scripted"

    def __init__(self, replies: Sequence[str] | Callable[[Sequence[ChatMessage]], str]):
        self._replies = replies if callable(replies) else list(replies)
        self.calls: list[list[ChatMessage]] = []

    def chat(self, messages, *, max_tokens=512, temperature=0.0) -> ChatResult:
        self.calls.append(list(messages))
        if callable(self._replies):
            text = self._replies(messages)
        else:
            if not self._replies:
                raise RuntimeError("ScriptedChat ran out of scripted replies")
            text = self._replies.pop(0)
        prompt = sum(len(m["content"].split()) for m in messages)
        return ChatResult(text, prompt_tokens=prompt, completion_tokens=len(text.split()))

"""Interfaces of the Writer: what a backend sees (a :class:`Segment`) and what it returns
(a :class:`WriterOutput` of raw, *unvalidated* action dicts).

Every backend, rule-based or model-based, goes through the same ``Validate`` operator
before anything touches the store: model output is never trusted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

#: ``ctx.state`` key: ids of messages the Writer handed to its backend and that no Upsert has
#: yet added to the watermark (Upsert marks them written after it has written their records).
PENDING_KEY = "writer_pending_msg_ids"


@dataclass(frozen=True)
class Segment:
    """One writing position: messages of a window plus the memory state before it.

    ``messages`` are dicts with at least ``msg_id``, ``speaker``, ``text``, ``ts``,
    ``session_id``, ``turn``; ``heads`` are the current head records (dicts with
    ``entry_id``, ``layer``, ``owner``, ``source``, ``utype``, ``content``, ``event``);
    ``max_actions`` = max(8, 2 * len(messages)). ``history`` are earlier messages of the
    group (same dict shape, oldest first): a Writer may cite them in ``from_ids`` beside at
    least one message of the segment, so a record can span sessions (a thread, a decision
    argued out before the window, the "before" side of a change). Model Writers are not
    shown them.
    """

    segment_id: str
    group_id: str
    roster: tuple[str, ...]
    messages: tuple[dict[str, Any], ...]
    heads: tuple[dict[str, Any], ...] = ()
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    history: tuple[dict[str, Any], ...] = ()

    @property
    def max_actions(self) -> int:
        return max(8, 2 * len(self.messages))

    @property
    def msg_ids(self) -> frozenset[str]:
        return frozenset(m["msg_id"] for m in self.messages)

    @property
    def history_ids(self) -> frozenset[str]:
        return frozenset(m["msg_id"] for m in self.history)


@dataclass
class WriterOutput:
    """Raw proposals from a backend. ``actions`` are plain dicts (validated later);
    ``parse_error`` is set when the model's text was not usable JSON (the whole output is
    then a reject); ``raw_text`` keeps the model's words for audit."""

    actions: list[dict[str, Any]]
    raw_text: str | None = None
    parse_error: str | None = None
    tokens: int = 0
    model_calls: int = 0


@runtime_checkable
class WriterBackend(Protocol):
    """Proposes actions for one segment."""

    name: str

    def propose(self, segment: Segment) -> WriterOutput: ...

"""A small group chat as the answerer reads it, for unit tests: an in-memory store's view and
one excerpt per message."""

from __future__ import annotations

from datetime import datetime, timedelta

from speakerflow.graphs import GroupStore
from speakerflow.ops.query.recall import GroupView
from speakerflow.schemas import EvidenceItem, Message, to_table


def chat(turns: list[tuple[int, str, str]], t0: datetime) -> tuple[GroupView, list[EvidenceItem]]:
    """``turns`` as (day, speaker, text), one session a day, a minute apart within it."""
    store = GroupStore("/nonexistent", "g", in_memory=True)
    rows = [
        Message(
            msg_id=f"m{i}",
            group_id="g",
            session_id=f"s{day}",
            turn=i,
            ts=t0 + timedelta(days=day, minutes=i),
            speaker=who,
            text=text,
        )
        for i, (day, who, text) in enumerate(turns)
    ]
    store.append_messages(to_table(rows, Message))
    evidence = [
        EvidenceItem(
            rank=i, kind="excerpt", text=m.text, msg_ids=[m.msg_id], speaker=m.speaker, ts=m.ts
        )
        for i, m in enumerate(rows)
    ]
    return GroupView.of(store), evidence

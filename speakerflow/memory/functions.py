"""Functions on one open store or read snapshot of a group (the CLI calls these too): the
messages a caller gives, checked; search, cited messages, update chains, injection."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from speakerflow.graphs import GroupStore, SearchFilter, check_group_id
from speakerflow.graphs.records import chains
from speakerflow.memory.snapshot import ReadSnapshot
from speakerflow.schemas import KnowledgeItem, Message


class GroupNotFoundError(LookupError):
    """The group has no store under this home (ingest first)."""


class UnknownSpeakerError(ValueError):
    """A speaker/owner name that is not in the group's roster; the message lists the roster."""


class SearchHit(Message):
    """A message found by BM25 search, with its ``score``."""

    score: float


@dataclass
class AddResult:
    """What :meth:`Memory.add` did: messages ``ingested`` and ``already_stored`` (skipped by
    ``msg_id``), speakers new to the roster, and the write-path report (``None`` when the
    Writer did not run)."""

    group_id: str
    ingested: int
    already_stored: int
    new_speakers: list[str] = field(default_factory=list)
    write: Any = None

    def as_dict(self) -> dict[str, Any]:
        out = {
            "group": self.group_id,
            "ingested": self.ingested,
            "already_stored": self.already_stored,
            "new_speakers": self.new_speakers,
        }
        if self.write is not None:
            out["write"] = self.write.summary()
        return out


# -- functions on one open store (the CLI calls these too) --------------------------------
def messages_table(group: str, messages: Iterable[dict] | str | Path) -> pa.Table:
    """A validated message table for ``group`` from JSONL-format dicts (docs/formats.md), a
    JSONL string, or the path of a ``.jsonl`` file (a ``Path``, or a string naming a file).
    ``group_id`` in the dicts may be left out; one
    naming another group is an error (a store only takes its own messages)."""
    from speakerflow.ops.loaders import LoadError, load
    from speakerflow.ops.loaders.jsonl import messages_from_objects

    check_group_id(group)
    if (
        isinstance(messages, str)
        and not messages.lstrip().startswith("{")
        and Path(messages).is_file()
    ):
        messages = Path(messages)
    if isinstance(messages, Path):
        loaded = load(messages, "jsonl", group=group)
    else:
        if isinstance(messages, str):
            items = []
            for lineno, line in enumerate(messages.splitlines(), start=1):
                if line.strip():
                    try:
                        items.append(json.loads(line))
                    except ValueError as exc:
                        raise LoadError(f"messages: line {lineno}: invalid JSON ({exc})") from None
        else:
            items = list(messages)
        if not items:
            raise LoadError("no messages given")
        items = [
            {**obj, "group_id": obj.get("group_id") or group} if isinstance(obj, dict) else obj
            for obj in items
        ]
        loaded = messages_from_objects(enumerate(items), "messages", None, unit="item")
    others = sorted({g for g, _ in loaded if g != group})
    if others:
        raise LoadError(f"messages for group {group!r} name other group(s): {', '.join(others)}")
    return pa.concat_tables([t for _, t in loaded])


def check_speaker(
    store: GroupStore | ReadSnapshot, name: str | None, allow_group: bool = False
) -> None:
    """Raise :class:`UnknownSpeakerError` (listing the roster) when ``name`` is not in it."""
    if name is None or (allow_group and name == "GROUP") or name in store.roster():
        return
    roster = ", ".join(store.roster()) or "nobody yet"
    raise UnknownSpeakerError(
        f"{name!r} is not in the roster of {store.group_id!r}: "
        f"{roster}{' or GROUP' if allow_group else ''}"
    )


def search_messages(
    store: GroupStore | ReadSnapshot, query: str, speaker: str | None = None, k: int = 10
) -> list[SearchHit]:
    """BM25 over the group's messages (optionally one ``speaker``'s), best first."""
    check_speaker(store, speaker)
    hits = store.search(query, k, SearchFilter(kind="message", speaker=speaker))
    by_id = message_rows(store)
    return [
        SearchHit(**by_id[h.doc_id], score=round(h.score, 3)) for h in hits if h.doc_id in by_id
    ]


def message_rows(store: GroupStore | ReadSnapshot) -> dict[str, dict]:
    """The group's messages as dicts by ``msg_id`` (cached on the store until it changes)."""
    table = store.messages()
    cached = getattr(store, "_rows_by_id", None)
    if cached is None or cached[0] is not table:
        cached = (table, {r["msg_id"]: r for r in table.to_pylist()})
        setattr(store, "_rows_by_id", cached)  # noqa: B010 - a memo on the store object, not a declared field
    return cached[1]


def message_objects(store: GroupStore | ReadSnapshot, ids: Iterable[str]) -> list[Message]:
    """The :class:`Message` of each id the group holds, in the order given. Messages are
    frozen records: each is validated once per store table and shared by later asks."""
    table = store.messages()
    memo: tuple[pa.Table, dict[str, Message]] | None = getattr(store, "_message_objects", None)
    if memo is None or memo[0] is not table:
        memo = (table, {})
        setattr(store, "_message_objects", memo)  # noqa: B010 - a memo on the store object
    rows, made = message_rows(store), memo[1]
    out = []
    for m in ids:
        msg = made.get(m)
        if msg is None:
            row = rows.get(m)
            if row is None:
                continue
            msg = made[m] = Message(**row)
        out.append(msg)
    return out


def memory_chains(
    store: GroupStore | ReadSnapshot,
    owner: str | None = None,
    layer: str | None = None,
    history: bool = False,
) -> list[list[KnowledgeItem]]:
    """Derived records as update chains (oldest state first, head last); without
    ``history`` each chain is just its head."""
    check_speaker(store, owner, allow_group=True)
    selected = chains(store, owner, layer)
    if not history:
        selected = [[c[-1]] for c in selected]
    return [[KnowledgeItem(**rec) for rec in chain] for chain in selected]


def parse_event(event: dict | str) -> tuple[str, datetime, str | None]:
    """(text, time, source) of an event: a dict with ``content`` (and optional ``ts`` ISO
    time, ``source``), a JSON string of one, or plain text (time: now)."""
    if isinstance(event, str):
        try:
            event = json.loads(event)
        except ValueError:
            event = {"content": event}
    if not isinstance(event, dict) or not isinstance(event.get("content"), str):
        raise ValueError(
            'an event is JSON with a "content" field, e.g. {"content": "fees on XBT?"}'
        )
    ts = event.get("ts")
    try:
        now = datetime.fromisoformat(ts) if ts else datetime.now(UTC)
    except (TypeError, ValueError):
        raise ValueError(f"event 'ts' {ts!r} is not an ISO-8601 time") from None
    return event["content"], (now if now.tzinfo else now.replace(tzinfo=UTC)), event.get("source")


def inject_context(
    knowledge: tuple, event: dict | str, user: str | None = None, budget: int = 600, hops: int = 2
):
    """The working context passive injection builds for ``event`` from a group's loaded
    ``knowledge`` (:func:`speakerflow.ops.knowledge.load.load_knowledge`); read-only
    (reuse counts are not recorded)."""
    from speakerflow.ops.inject import InjectConfig, PassiveInjector

    text, now, source = parse_event(event)
    fg, canon, det = knowledge
    inj = PassiveInjector(
        fg, canon, det, config=InjectConfig(budget=budget, hops=hops, record_use=False)
    )
    return inj.inject(text, now, user or source)

"""The Writer prompt: the chat messages a model-based Writer sees for one :class:`Segment`.

The system message states the contract (the four derived layers, owner versus source,
GROUP decisions and norms, one matter = one entry, UPDATE for any progress on a matter,
NOOP, atomic records, recurring behaviour, the JSON output schema). The user message
carries the segment: roster (with aliases), session and time, the current heads with their
entry ids, and the new messages with their ids and speakers. The wording is ours; the
method follows SpeakerMem-R1 (sections 3.1-3.2, appendices A, B and I.2).

The same builder serves inference (chat backends) and training (SFT prompts, helper G);
:func:`render_actions` gives the canonical assistant text for a list of actions.

>>> seg = Segment("s1#0", "g", ("Ana", "Ben"),
...               ({"msg_id": "m1", "speaker": "Ana", "text": "Let's go with Porto.",
...                 "ts": "2026-03-02T09:00:00Z", "session_id": "s1", "turn": 0},))
>>> msgs = build_writer_messages(seg)
>>> [m["role"] for m in msgs]
['system', 'user']
>>> "[m1]" in msgs[1]["content"] and "Ana" in msgs[1]["content"]
True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from speakerflow.ops.backends.base import ChatMessage
from speakerflow.ops.write.interfaces import Segment
from speakerflow.schemas.records import GROUP_OWNER, LAYERS

#: Bumped whenever the prompt text changes, so that SFT data and runs can record it.
PROMPT_VERSION = "sf-writer-1"

#: Record types a model may give in ``utype`` (the paper's five plus norm and preference).
WRITER_UTYPES: tuple[str, ...] = (
    "fact",
    "stance",
    "observation",
    "decision",
    "relation",
    "norm",
    "preference",
)

#: JSON schema of the Writer's reply, e.g. for an endpoint's ``response_format``.
ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["actions"],
    "properties": {
        "actions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["action"],
                "properties": {
                    "action": {"enum": ["ADD", "UPDATE", "NOOP"]},
                    "owner": {"type": "string"},
                    "source": {"type": "string"},
                    "layer": {"enum": list(LAYERS)},
                    "utype": {"enum": list(WRITER_UTYPES)},
                    "content": {"type": "string"},
                    "entry_id": {"type": "string"},
                    "from_ids": {"type": "array", "items": {"type": "string"}},
                },
            },
        }
    },
}

SYSTEM_PROMPT = f"""You keep the long-term memory of a group conversation with several people.
Every message is already stored word for word. Your task is to add derived records on top
of it, so that later questions about a person, a relationship, a decision or a change over
time can be answered. Write only what the messages support; never guess.

LAYERS (pick exactly one per record)
- per_speaker_core: a person's own stable facts, identity, firm stances, preferences and
  recurring behaviour (habits, roles they keep taking, topics they avoid).
- per_speaker_profile: what someone says or observes about ANOTHER person, or how the group
  sees that person.
- group_interaction: events between people, relations, and decisions taken for the group.
- group_insight: norms, rules, shared expectations and consensus of the group, and members
  who visibly depart from a norm (only when the messages show it).

OWNER AND SOURCE
- owner is whom the record is about: a name from the roster, or {GROUP_OWNER}.
- source is who said or showed it: always a name from the roster.
- If A says something about B, then owner = B and source = A (layer per_speaker_profile).
- A decision announced by one person for everyone ("we'll go with X", "that's settled",
  "we agreed", "final call") belongs to the group: owner = {GROUP_OWNER}, source = the speaker,
  layer = group_interaction, utype = decision. "I'd rather X" is a personal preference.
- Norms ("we always ...", "everyone should ...", "the rule is ...") have owner = {GROUP_OWNER},
  layer = group_insight, utype = norm.

ACTIONS
- ADD: a matter that nothing in CURRENT MEMORY covers yet.
  {{"action": "ADD", "owner": ..., "source": ..., "layer": ..., "utype": ..., "content": ...,
   "from_ids": [ids of the messages it rests on]}}
- UPDATE: a matter already in CURRENT MEMORY has moved on (a number, date, status, plan or
  stance changed, or a recurring behaviour happened again). Give the entry_id from CURRENT
  MEMORY and only the new state; owner, source and layer are kept from that entry.
  {{"action": "UPDATE", "entry_id": ..., "content": ..., "from_ids": [...]}}
- NOOP: nothing worth recording (greetings, thanks, agreement with what is already stored).
  {{"action": "NOOP"}}

RULES
- One matter = one entry. Check CURRENT MEMORY (and your own earlier actions in this reply)
  before every ADD; if the matter is there, UPDATE it when its state changed, else skip it.
- An UPDATE must change the content substantively; if nothing changed, use NOOP.
- Different people disagreeing are separate ADDs, one per person; not an UPDATE.
- One record = one atomic fact, stance or observation; split what someone said into parts.
- Record behaviour, not only stated facts, and describe what happened, not motives.
- Do not copy messages verbatim; write short plain statements in the language of the chat.
- utype is one of: {", ".join(WRITER_UTYPES)}.
- from_ids must be ids of messages in NEW MESSAGES.

OUTPUT: JSON only, nothing before or after it: {{"actions": [ ... ]}}"""


def _date(value: Any) -> str:
    """A compact date/time string for a timestamp given as datetime or ISO text."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value or "").replace("T", " ").removesuffix("Z")[:16]


def format_roster(roster: Sequence[str], aliases: Mapping[str, Sequence[str]]) -> str:
    """``Ana, Ben (also: Benny, @ben)`` - roster names with their known aliases."""
    parts = []
    for name in roster:
        extra = [a for a in aliases.get(name, ()) if a != name]
        parts.append(f"{name} (also: {', '.join(extra)})" if extra else name)
    return ", ".join(parts)


def format_heads(heads: Iterable[Mapping[str, Any]]) -> str:
    """One line per current head: ``<entry_id> [layer|owner by source @date] content``."""
    lines = []
    for h in heads:
        when = _date(h.get("valid_at") or h.get("ts") or "")
        stamp = f" @{when[:10]}" if when else ""
        lines.append(
            f"{h['entry_id']} [{h['layer']}|{h['owner']} by {h['source']}{stamp}] "
            f"({h.get('utype') or 'fact'}) {h['content']}"
        )
    return "\n".join(lines) if lines else "(empty: nothing recorded yet)"


def format_messages(messages: Iterable[Mapping[str, Any]]) -> str:
    """One line per message: ``[msg_id] date speaker: text`` (plus the replied-to id)."""
    lines = []
    for m in messages:
        reply = f" (reply to {m['reply_to']})" if m.get("reply_to") else ""
        lines.append(f"[{m['msg_id']}] {_date(m.get('ts'))} {m['speaker']}{reply}: {m['text']}")
    return "\n".join(lines)


def select_heads(segment: Segment, limit: int | None) -> tuple[list[Mapping[str, Any]], int]:
    """At most ``limit`` heads to show, and how many were left out.

    Heads owned by GROUP or by someone who speaks or is named in the segment come first,
    newest (``valid_at``, then list position) first within each group; the kept heads are
    returned in their original order. ``limit=None`` keeps every head (as in the paper).
    """
    heads: list[Mapping[str, Any]] = list(segment.heads)
    if limit is None or len(heads) <= limit:
        return heads, 0
    text = " ".join(str(m.get("text", "")).lower() for m in segment.messages)
    present = {m.get("speaker") for m in segment.messages} | {GROUP_OWNER}
    present |= {name for name in segment.roster if name.lower() in text}

    def rank(i: int) -> tuple[bool, str, int]:
        h = heads[i]
        return (h.get("owner") in present, str(h.get("valid_at") or ""), i)

    keep = sorted(sorted(range(len(heads)), key=rank, reverse=True)[:limit])
    return [heads[i] for i in keep], len(heads) - len(keep)


def build_user_prompt(segment: Segment, *, max_heads: int | None = None) -> str:
    """The user turn for ``segment``: roster, session/time, current memory, new messages.

    ``max_heads`` bounds the CURRENT MEMORY list (see :func:`select_heads`); a note says
    how many entries were left out.
    """
    first = segment.messages[0] if segment.messages else {}
    heads, hidden = select_heads(segment, max_heads)
    note = (
        f"\n({hidden} less related entries not shown: people absent here, older first)"
        if hidden
        else ""
    )
    return (
        f"ROSTER: {format_roster(segment.roster, segment.aliases)}\n"
        f"GROUP OWNER NAME: {GROUP_OWNER}\n"
        f"SESSION: {first.get('session_id', '')}   TIME: {_date(first.get('ts'))}\n\n"
        f"CURRENT MEMORY (latest state of each entry):\n{format_heads(heads)}{note}\n\n"
        f"NEW MESSAGES:\n{format_messages(segment.messages)}\n\n"
        f"Return at most {segment.max_actions} actions, never repeat one, and close the JSON "
        'right after the last new action: {"actions": [...]}'
    )


def build_writer_messages(segment: Segment, *, max_heads: int | None = None) -> list[ChatMessage]:
    """The full chat (system + user) that a chat-model Writer answers for ``segment``.

    ``max_heads`` (None: all) bounds the current-memory list, for long-running groups whose
    heads would not fit the model's context.
    """
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": build_user_prompt(segment, max_heads=max_heads)},
    ]


_ACTION_KEYS = ("action", "entry_id", "owner", "source", "layer", "utype", "content", "from_ids")


def render_actions(actions: Iterable[Mapping[str, Any]]) -> str:
    """Canonical assistant text for ``actions``: ``{"actions": [...]}`` on one line.

    Only Writer fields are kept (in a fixed order); coordinates filled by code (session,
    time, write order, ids of created records) are dropped, as the model never writes them.
    """
    clean = [{k: a[k] for k in _ACTION_KEYS if a.get(k) not in (None, "", [])} for a in actions]
    return json.dumps({"actions": clean}, ensure_ascii=False)

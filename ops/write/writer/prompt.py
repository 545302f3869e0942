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
from dataclasses import dataclass
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


# -- the compact prompt of small local Writers (ops/write/writer/local.py) ----------------

#: Version of the compact wording (recorded in training data and adapter cards).
COMPACT_PROMPT_VERSION = "sf-writer-compact-1"

#: The opening forced before a local Writer's reply (inference and GRPO sampling).
#: Every :func:`render_actions` target starts with it, and it ends on a token boundary of
#: those targets (``' [{'``, ``'"'``, ``'action'``, ``'":'``, ``' "'`` in SmolLM2's
#: tokenizer), so the forced tokens are exactly the ones SFT trained on; ``{"actions": [``
#: would end on ``' ['``, a token no target contains.
REPLY_OPENING = '{"actions": [{"action": "'

COMPACT_SYSTEM_PROMPT = f"""You write the memory of a group chat. For the NEW MESSAGES return JSON
{{"actions": [...]}} with one action per new atomic fact, stance, decision, relation or norm.
ADD: {{"action": "ADD", "owner": whom it is about (a roster name or {GROUP_OWNER}), "source": who \
said it, "layer": ..., "utype": ..., "content": a short statement}}
UPDATE: {{"action": "UPDATE", "entry_id": an E id of MEMORY, "content": its new state}}
Nothing new: {{"actions": [{{"action": "NOOP"}}]}}
Layers: per_speaker_core (the speaker's own facts, stances, habits), per_speaker_profile \
(what someone says about another person), group_interaction (events, group decisions; owner \
{GROUP_OWNER}), group_insight (group norms; owner {GROUP_OWNER}).
utype: {", ".join(WRITER_UTYPES)}. Write only what the messages say. JSON only."""


@dataclass(frozen=True)
class CompactPrompt:
    """The chat of one window and the short ids it uses: ``messages[i]`` is the message id
    behind ``[i+1]``, ``entries["E3"]`` the entry id behind ``E3``."""

    chat: list[ChatMessage]
    messages: tuple[str, ...]
    entries: dict[str, str]


def _clip(text: Any, limit: int) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def build_compact_messages(
    segment: Segment,
    *,
    max_heads: int | None = 8,
    head_chars: int = 80,
    message_chars: int = 300,
) -> CompactPrompt:
    """The compact chat for ``segment`` (meant for a few messages: one window).

    Messages are numbered ``[1]..[n]`` and heads ``E1..Ek`` (at most ``max_heads``, chosen by
    :func:`select_heads`); long texts are clipped to ``head_chars`` / ``message_chars``. A
    reply's ids are mapped back with :func:`unalias_actions`.
    """
    heads, _ = select_heads(segment, max_heads)
    entries = {f"E{i + 1}": str(h["entry_id"]) for i, h in enumerate(heads)}
    memory = [
        f"E{i + 1} [{h['layer']}|{h['owner']} by {h['source']}] {_clip(h['content'], head_chars)}"
        for i, h in enumerate(heads)
    ]
    number = {m["msg_id"]: i + 1 for i, m in enumerate(segment.messages)}
    lines = []
    for m in segment.messages:
        reply = f" (to [{number[m['reply_to']]}])" if m.get("reply_to") in number else ""
        text = _clip(m["text"], message_chars)
        lines.append(f"[{number[m['msg_id']]}] {m['speaker']}{reply}: {text}")
    first = segment.messages[0] if segment.messages else {}
    user = (
        f"ROSTER: {', '.join(segment.roster)}\n"
        f"MEMORY:\n{chr(10).join(memory) if memory else '(empty)'}\n"
        f"NEW MESSAGES ({_date(first.get('ts'))[:10]}):\n" + "\n".join(lines)
    )
    chat: list[ChatMessage] = [
        {"role": "system", "content": COMPACT_SYSTEM_PROMPT},
        {"role": "user", "content": user},
    ]
    return CompactPrompt(chat, tuple(m["msg_id"] for m in segment.messages), entries)


def alias_actions(actions: Iterable[Mapping[str, Any]], prompt: CompactPrompt) -> list[dict]:
    """Writer actions in the compact prompt's short ids (for training targets)."""
    numbers = {mid: i + 1 for i, mid in enumerate(prompt.messages)}
    short = {eid: alias for alias, eid in prompt.entries.items()}
    out = []
    for a in actions:
        b = dict(a)
        if b.get("entry_id") is not None:
            b["entry_id"] = short.get(str(b["entry_id"]), b["entry_id"])
        if b.get("from_ids"):
            b["from_ids"] = [numbers.get(str(i), i) for i in b["from_ids"]]
        out.append(b)
    return out


def unalias_actions(actions: Iterable[Any], prompt: CompactPrompt) -> list[Any]:
    """A reply's actions with ``E<k>`` entry ids and ``[n]`` message numbers mapped back to
    the real ids (anything unknown is left as written, for Validate to judge)."""
    out: list[Any] = []
    for a in actions:
        if not isinstance(a, dict):
            out.append(a)
            continue
        b = dict(a)
        eid = b.get("entry_id")
        if isinstance(eid, str) and eid.strip() in prompt.entries:
            b["entry_id"] = prompt.entries[eid.strip()]
        cited = b.get("from_ids")
        if isinstance(cited, list):
            mapped = []
            for c in cited:
                text = str(c).strip().strip("[]")
                k = int(text) if text.isdigit() else 0
                mapped.append(prompt.messages[k - 1] if 1 <= k <= len(prompt.messages) else c)
            b["from_ids"] = mapped
        out.append(b)
    return out

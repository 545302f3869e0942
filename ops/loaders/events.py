"""Agent event streams (InKH): JSONL, one event per line (see ``docs/formats.md``).

``{"event_id", "group_id"?, "session_id"?, "ts", "source_type", "source", "content",
"source_ref"?, "trust_tier"?, "reply_to"?}`` (``reply_to``: the event id it answers, which
tells the reader who "you" is) where ``source_type`` is one of user_turn,
tool_observation, market_update, portfolio_change, risk_signal. Events become System 1
rows: ``event_id`` -> msg_id, ``source`` -> speaker, ``content`` -> text (immutable).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from speakerflow.ops.loaders.common import Loaded, LoadError, iter_jsonl, loader, to_message_table
from speakerflow.schemas import SOURCE_TYPES


@loader("events")
def load_events(path: Path, group: str | None = None) -> Loaded:
    rows: dict[str, list[dict]] = defaultdict(list)
    lines: dict[str, list[int]] = defaultdict(list)
    for lineno, obj in iter_jsonl(path):
        gid = group or obj.get("group_id")
        if not gid:
            raise LoadError(f"{path}: line {lineno}: field 'group_id' is missing (or pass --group)")
        if group is not None and obj.get("group_id") not in (None, group):
            raise LoadError(
                f"{path}: line {lineno}: field 'group_id' is {str(obj['group_id'])[:60]!r} but "
                "--group is "
                f"{group!r}; an event may not write another group"
            )
        stype = obj.get("source_type")
        if stype not in SOURCE_TYPES:
            raise LoadError(
                f"{path}: line {lineno}: field 'source_type' is {stype!r}; use one of "
                f"{SOURCE_TYPES[1:]}"
            )
        session = obj.get("session_id", "events")
        rows[gid].append(
            {
                "msg_id": obj.get("event_id"),
                "group_id": gid,
                "session_id": session,
                "turn": obj.get("turn", len(rows[gid])),
                "ts": obj.get("ts"),
                "speaker": obj.get("source"),
                "text": obj.get("content"),
                "source_type": stype,
                "source_ref": obj.get("source_ref"),
                "trust_tier": obj.get("trust_tier", 1),
                "reply_to": obj.get("reply_to"),
            }
        )
        lines[gid].append(lineno)
    if not rows:
        raise LoadError(f"{path}: no events in file")
    return [
        (gid, to_message_table(r, str(path), lines[gid], require_zone=True))
        for gid, r in rows.items()
    ]

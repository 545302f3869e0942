"""The speakerflow JSONL message format (see ``docs/formats.md``).

One object per line::

    {"msg_id": "m1", "session_id": "s1", "ts": "2026-05-01T10:00:00Z",
     "speaker": "Ana", "text": "Let's go with Lisbon.", "reply_to": null,
     "group_id": "team-a", "turn": 0}

``group_id`` may come from ``--group`` instead; ``turn`` defaults to the order of lines
within the session; ``source_type``, ``source_ref`` and ``trust_tier`` are optional.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from speakerflow.ops.loaders.common import Loaded, LoadError, iter_jsonl, loader, to_message_table

OPTIONAL = ("reply_to", "source_type", "source_ref", "trust_tier")


@loader("jsonl")
def load_jsonl(path: Path, group: str | None = None) -> Loaded:
    return messages_from_objects(iter_jsonl(path), str(path), group, require_zone=True)


def messages_from_objects(
    objs: Iterable[tuple[int, dict]],
    where: str,
    group: str | None = None,
    unit: str = "line",
    require_zone: bool = False,
) -> Loaded:
    """(group id, message table) pairs from numbered JSONL-format objects (the file's lines,
    or the items of a JSON list sent to the HTTP API); errors name ``where``, the ``unit``
    number and the field. ``require_zone``: a time without a zone is an error (files),
    else it is taken as UTC."""
    rows: dict[str, list[dict]] = defaultdict(list)
    lines: dict[str, list[int]] = defaultdict(list)
    turns: dict[tuple[str, str], int] = defaultdict(int)
    path = where
    for lineno, obj in objs:
        if not isinstance(obj, dict):
            raise LoadError(
                f"{path}: {unit} {lineno}: expected a JSON object, got {type(obj).__name__}"
            )
        gid = group or obj.get("group_id")
        if not gid:
            raise LoadError(
                f"{path}: {unit} {lineno}: field 'group_id' is missing (or pass --group)"
            )
        if group is not None and obj.get("group_id") not in (None, group):
            raise LoadError(
                f"{path}: {unit} {lineno}: field 'group_id' is {str(obj['group_id'])[:60]!r} but "
                "--group "
                f"is {group!r}; a line may not write another group"
            )
        session = obj.get("session_id", "s1")
        if not isinstance(session, str):
            raise LoadError(
                f"{path}: {unit} {lineno}: field 'session_id' should be str, got "
                f"{type(session).__name__}"
            )
        turn = obj.get("turn", turns[(gid, session)])
        turns[(gid, session)] = (turn if isinstance(turn, int) else 0) + 1
        row = {
            "msg_id": obj.get("msg_id"),
            "group_id": gid,
            "session_id": session,
            "turn": turn,
            "ts": obj.get("ts"),
            "speaker": obj.get("speaker"),
            "text": obj.get("text"),
        }
        row.update({k: obj[k] for k in OPTIONAL if k in obj})
        rows[gid].append(row)
        lines[gid].append(lineno)
    if not rows:
        raise LoadError(f"{path}: no messages in file")
    return [
        (gid, to_message_table(r, f"{path}", lines[gid], unit=unit, require_zone=require_zone))
        for gid, r in rows.items()
    ]

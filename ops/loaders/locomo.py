"""LoCoMo (``locomo10.json``): one group per conversation (``sample_id``).

Turns carry no time of their own: each gets its session's time plus one minute per turn,
so that time order equals dialogue order. Image turns keep their caption in the text
(``[shares a photo: ...]``), as the speaker's listeners saw it. The generated summaries
and observations are never read: they are not memory input.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from speakerflow.graphs import StoreError, check_group_id
from speakerflow.ops.loaders.common import (
    Loaded,
    LoadError,
    field,
    loader,
    read_json,
    to_message_table,
)

_SESSION = re.compile(r"^session_(\d+)$")


def parse_locomo_time(text: str, where: str) -> datetime:
    """Parse ``"1:56 pm on 8 May, 2023"`` as UTC."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        raise LoadError(
            f"{where}: cannot read date-time {text!r} (expected '1:56 pm on 8 May, 2023')"
        ) from None


@loader("locomo")
def load_locomo(path: Path, group: str | None = None) -> Loaded:
    data = read_json(path)
    if not isinstance(data, list):
        raise LoadError(f"{path}: expected a list of conversations")
    out: Loaded = []
    for ci, conv in enumerate(data):
        where = f"{path}: record {ci}"
        if not isinstance(conv, dict):
            raise LoadError(f"{where}: expected an object")
        gid = group or field(conv, "sample_id", where)
        try:
            check_group_id(gid)
        except StoreError as exc:
            raise LoadError(f"{where}: field 'sample_id': {exc}") from None
        body = field(conv, "conversation", where, dict)
        rows = []
        names = []
        sessions = sorted((int(m.group(1)), k) for k in body if (m := _SESSION.match(k)))
        for num, key in sessions:
            turns = body[key]
            if not isinstance(turns, list):
                raise LoadError(f"{where}: field 'conversation.{key}' should be a list")
            start = parse_locomo_time(
                field(body, f"{key}_date_time", where),
                f"{where}: field 'conversation.{key}_date_time'",
            )
            for ti, turn in enumerate(turns):
                twhere = f"{where} {key}[{ti}]"
                if not isinstance(turn, dict):
                    raise LoadError(f"{twhere}: expected an object")
                text = field(turn, "text", twhere)
                if turn.get("blip_caption"):
                    text = f"{text} [shares a photo: {turn['blip_caption']}]"
                rows.append(
                    {
                        "msg_id": field(turn, "dia_id", twhere),
                        "group_id": gid,
                        "session_id": f"S{num}",
                        "turn": ti,
                        "ts": start + timedelta(minutes=ti),
                        "speaker": field(turn, "speaker", twhere),
                        "text": text,
                        "source_ref": f"{path.name}#{gid}/{turn['dia_id']}",
                    }
                )
                names.append(f"conversation.{key}[{ti}]")
        if not rows:
            raise LoadError(f"{where}: conversation has no sessions")
        out.append((gid, to_message_table(rows, where, names, unit="turn")))
    return out

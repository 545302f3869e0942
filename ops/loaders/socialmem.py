"""SocialMemBench networks in the SpeakerMem-R1 release format: one group per network.

A network has ``speakers``, ``sessions`` (each with ``turns``: ``turn`` id, ``speaker``,
``content``, ``ts``, ``reply_to``), ``qa_pairs`` and ``meta``. The group id is
``meta.network_id`` (else the file name without ``social_``). Files without ``sessions``
(Writer trajectories) are refused with a clear message.
"""

from __future__ import annotations

from pathlib import Path

from speakerflow.graphs import StoreError, check_group_id
from speakerflow.ops.loaders.common import (
    Loaded,
    LoadError,
    WrongFormatError,
    field,
    loader,
    read_json,
    to_message_table,
)


def network_id(data: dict, path: Path) -> str:
    meta = data.get("meta") or {}
    if not isinstance(meta, dict):
        raise LoadError(f"{path}: field 'meta' should be an object, got {type(meta).__name__}")
    gid = meta.get("network_id") or path.stem.removeprefix("social_")
    if not isinstance(gid, str):
        raise LoadError(f"{path}: field 'meta.network_id' should be text, got {type(gid).__name__}")
    try:
        return check_group_id(gid)
    except StoreError as exc:
        raise LoadError(f"{path}: field 'meta.network_id': {exc}") from None


@loader("socialmem")
def load_socialmem(path: Path, group: str | None = None) -> Loaded:
    data = read_json(path)
    if not isinstance(data, dict) or "sessions" not in data:
        raise WrongFormatError(
            f"{path}: not a SocialMemBench network (field 'sessions' is missing)"
        )
    gid = group or network_id(data, path)
    rows = []
    names = []
    for si, session in enumerate(field(data, "sessions", str(path), list)):
        swhere = f"{path}: sessions[{si}]"
        if not isinstance(session, dict):
            raise LoadError(f"{swhere}: expected an object")
        sid = field(session, "session_id", swhere)
        for ti, turn in enumerate(field(session, "turns", swhere, list)):
            twhere = f"{swhere}.turns[{ti}]"
            if not isinstance(turn, dict):
                raise LoadError(f"{twhere}: expected an object")
            names.append(f"sessions[{si}].turns[{ti}]")
            rows.append(
                {
                    "msg_id": field(turn, "turn", twhere),
                    "group_id": gid,
                    "session_id": sid,
                    "turn": ti,
                    "ts": field(turn, "ts", twhere),
                    "speaker": field(turn, "speaker", twhere),
                    "text": field(turn, "content", twhere),
                    "reply_to": turn.get("reply_to") or None,
                    "source_ref": turn.get("speaker_id"),
                }
            )
    if not rows:
        raise LoadError(f"{path}: network has no turns")
    return [(gid, to_message_table(rows, str(path), names, unit="at"))]

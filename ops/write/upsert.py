"""Upsert: accepted Writer actions -> derived records in the store (append-only chains).

Code, not the Writer, fills every coordinate: ``group_id``; ``session_id``, ``turn`` and
``valid_at`` from the latest cited message; ``write_order`` (global, increasing);
``from_ids``; ``confidence`` (config); ``scope`` from the owner. ``entry_id`` is a hash of
the group, the segment and the action, so re-running a segment makes the same ids and
writes nothing new.

ADD creates a record. UPDATE appends a record that inherits owner and layer of the head it
continues, and its source unless the validated action names another (a correction said by
another person), with ``supersedes`` = the old id; the old record gets
``superseded_by`` and ``invalid_at`` = the new ``valid_at``. Two UPDATEs of one head in
a batch chain one after the other. The batch is written all or nothing
(:func:`speakerflow.graphs.records.write_records`); then the messages the Writer handed
to its backend for this batch (``ctx.state[PENDING_KEY]``) join the watermark.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

import pyarrow as pa
from pydantic import Field

from speakerflow.graphs.records import all_records, mark_written, next_write_order, write_records
from speakerflow.ops.core.base import Context, Operator, OperatorConfig
from speakerflow.ops.core.registry import register
from speakerflow.ops.write.interfaces import PENDING_KEY, Segment
from speakerflow.schemas import GROUP_OWNER, RECORD_SCHEMA, KnowledgeItem, to_table, utc


def entry_id(*parts: str) -> str:
    """A deterministic 16-hex-digit id from the given parts."""
    return hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:16]


def add_entry_id(group_id: str, segment_id: str, owner: str, layer: str, content: str) -> str:
    """The id an ADD gets; a Writer may cite it in a later UPDATE of the same segment."""
    return entry_id(group_id, segment_id, "ADD", owner, layer, content.strip())


@register
class Upsert(Operator):
    """Write accepted actions as records; produces the records it wrote."""

    name = "upsert"
    consumes = (
        "action",
        "segment_id",
        "layer",
        "owner",
        "source",
        "content",
        "entry_id",
        "from_ids",
    )
    produces = RECORD_SCHEMA

    class Config(OperatorConfig):
        confidence: float = Field(
            default=0.7, ge=0.0, le=1.0, description="confidence given to written records"
        )

    config: Config

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        store = ctx.store
        if store is None:
            raise ValueError("the upsert operator needs ctx.store (a GroupStore)")
        segments: dict[str, Segment] = ctx.state.get("segments", {})
        current = {r["entry_id"]: r for r in all_records(store) if r["superseded_by"] is None}
        moved: dict[str, str] = {}  # head superseded in this batch -> its new head
        order = next_write_order(store)
        new: list[KnowledgeItem] = []
        closing: list[tuple[str, str, datetime]] = []
        for i, a in enumerate(table.to_pylist()):
            seg = segments[a["segment_id"]]
            coords = _coords(store.group_id, seg, a, self.config.confidence)
            if a["action"] == "UPDATE":
                old_id = a["entry_id"]
                while old_id in moved:
                    old_id = moved[old_id]
                old = current.get(old_id)
                if (
                    old is None
                ):  # validated against heads; vanished only if the store changed meanwhile
                    raise ValueError(f"action {i}: UPDATE of {old_id!r}, which is no longer a head")
                eid = entry_id(store.group_id, seg.segment_id, "UPDATE", old_id, a["content"])
                rec = KnowledgeItem(
                    entry_id=eid,
                    layer=old["layer"],
                    owner=old["owner"],
                    source=a.get("source") or old["source"],
                    scope=old["scope"],
                    supersedes=old_id,
                    write_order=order,
                    **coords,
                )
                pending = next((j for j, r in enumerate(new) if r.entry_id == old_id), None)
                if pending is None:
                    closing.append((old_id, eid, rec.valid_at))
                else:  # the old state was added in this batch: write it already closed
                    new[pending] = new[pending].model_copy(
                        update={"superseded_by": eid, "invalid_at": rec.valid_at}
                    )
                moved[old_id] = eid
                self.stats.bump("updates")
            else:
                eid = add_entry_id(
                    store.group_id, seg.segment_id, a["owner"], a["layer"], a["content"]
                )
                rec = KnowledgeItem(
                    entry_id=eid,
                    layer=a["layer"],
                    owner=a["owner"],
                    source=a["source"],
                    scope="GROUP" if a["owner"] == GROUP_OWNER else "PERSON",
                    write_order=order,
                    **coords,
                )
                self.stats.bump("adds")
            current[eid] = rec.model_dump()
            new.append(rec)
            order += 1
        write_records(store, new, closing)
        pending = ctx.state.pop(PENDING_KEY, None)
        if pending:  # the messages these records come from (and those that gave none) are done
            mark_written(store, pending)
        return to_table(new, KnowledgeItem)


def _coords(group_id: str, seg: Segment, a: dict[str, Any], confidence: float) -> dict[str, Any]:
    """The fields of the record action ``a`` writes that it takes from its latest cited
    message (session, turn, time) and from itself (content, event, type, provenance)."""
    msgs = {m["msg_id"]: m for m in seg.messages}
    if seg.history and not set(a["from_ids"]) <= msgs.keys():  # a record spanning earlier messages
        msgs.update((m["msg_id"], m) for m in seg.history if m["msg_id"] in a["from_ids"])
    last = max((msgs[m] for m in a["from_ids"]), key=lambda m: (m["ts"], m["turn"]))
    return {
        "group_id": group_id,
        "session_id": last["session_id"],
        "turn": last["turn"],
        "valid_at": utc(last["ts"]),
        "first_seen": utc(last["ts"]),
        "from_ids": a["from_ids"],
        "confidence": confidence,
        "content": a["content"],
        "event": a["event"],
        "utype": a["utype"] or "fact",
    }

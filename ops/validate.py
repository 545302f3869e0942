"""Validate: raw Writer proposals -> accepted actions, and a rejects table with reasons.

Rules, applied in order to each proposal of a segment (the segment and its heads come
from ``ctx.state["segments"]``, left there by the Writer operator):

1. the backend output was usable JSON (else ONE reject for the whole output: ``parse error``);
2. a proposal beyond ``Segment.max_actions`` is rejected (``over the limit``) and counted;
3. the proposal is a JSON object with ``action`` one of ADD / UPDATE / NOOP;
4. NOOP writes nothing (counted in ``stats.extra["noops"]``);
5. UPDATE: ``entry_id`` must name a current head (or a record an earlier action of the
   same batch writes, see :func:`~speakerflow.ops.upsert.add_entry_id`); if it does not, the proposal is treated
   as an ADD (as in the paper) when it carries owner, source and layer, else rejected.
   Owner, source and layer are inherited from the head. New content equal to the head's
   (case and spacing ignored) is a NOOP;
6. ADD: ``layer`` is one of the four derived layers; ``owner`` is in the roster or is
   ``GROUP``; ``source`` is in the roster; person layers need a person owner and group
   layers the GROUP owner; ``content`` is non-empty text; unknown ``utype`` becomes ``fact``;
7. cited ``from_ids`` must all belong to the segment; when none are cited, provenance is
   filled by code: the segment messages of the source that share most words with the content;
8. duplicates are dropped: two actions of a batch writing the same (owner, layer, content),
   or an ADD repeating a current head.

Names are canonicalised with :class:`~speakerflow.ops.people.PersonResolver` first, so
``"@ana"`` or ``"ana"`` count as ``"Ana"``. Every reject keeps the proposal and its reason
in ``ctx.state["rejects"]`` (list of dicts; as an Arrow table with :data:`REJECT_SCHEMA` in
``ctx.state["reject_table"]``) and ``stats.rejects``; nothing is dropped silently.
"""
from __future__ import annotations

import json
import re
from typing import Any

import pyarrow as pa

from speakerflow.ops.base import Context, Operator, OperatorConfig
from speakerflow.ops.people import PersonResolver
from speakerflow.ops.registry import register
from speakerflow.ops.upsert import add_entry_id, entry_id
from speakerflow.ops.writer.base import Segment
from speakerflow.schemas import (
    ACTION_SCHEMA,
    GROUP_LAYERS,
    GROUP_OWNER,
    LAYERS,
    PERSON_LAYERS,
    RECORD_TYPES,
)

REJECT_SCHEMA = pa.schema([
    pa.field("segment_id", pa.string()), pa.field("position", pa.int64()),
    pa.field("payload", pa.string()), pa.field("reason", pa.string()),
])
_WORDS = re.compile(r"[a-z0-9]+")


class Rejected(ValueError):
    """A proposal that breaks a Validate rule; the message is the reason kept in the rejects table."""


def norm_text(text: str) -> str:
    """Lower-cased words joined by single spaces (for no-op and duplicate checks)."""
    return " ".join(_WORDS.findall(str(text).lower()))


def fill_provenance(seg: Segment, source: str | None, content: str) -> list[str]:
    """Message ids for a proposal that cites none: the source's best-matching message(s).

    Ranks the segment's messages by shared words with ``content`` (the source's own
    messages first); returns the best one, or the source's last message when nothing overlaps.
    """
    words = set(_WORDS.findall(content.lower()))
    own = [m for m in seg.messages if m["speaker"] == source] or list(seg.messages)
    best = max(own, key=lambda m: (len(words & set(_WORDS.findall(m["text"].lower()))), m["ts"]))
    return [best["msg_id"]]


@register
class Validate(Operator):
    """Check every proposal against the Writer contract; keep accepted actions, reject the rest."""

    name = "validate"
    consumes = ("segment_id", "position", "payload", "parse_error")
    produces = ACTION_SCHEMA

    class Config(OperatorConfig):
        pass

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        segments: dict[str, Segment] = ctx.state.get("segments", {})
        rejects: list[dict[str, Any]] = ctx.state.setdefault("rejects", [])
        accepted: list[dict[str, Any]] = []
        seen: set[tuple] = set()
        self._batch: dict[str, dict[str, Any]] = {}  # ids of ADDs accepted in this batch -> their record
        for row in table.to_pylist():
            seg = segments.get(row["segment_id"])
            try:
                if seg is None:
                    raise Rejected(f"segment {row['segment_id']!r} is unknown (run the Writer operator first)")
                if row["parse_error"]:
                    raise Rejected(f"parse error: {row['parse_error']}")
                if row["position"] >= seg.max_actions:
                    self.stats.bump("truncated")
                    raise Rejected(f"over the limit: max_actions={seg.max_actions} for {len(seg.messages)} message(s)")
                action = self._check(seg, row["payload"])
                if action is None:
                    self.stats.bump("noops")
                    continue
                key = (action["owner"], action["layer"], norm_text(action["content"]))
                if key in seen:
                    raise Rejected("duplicate of an earlier action in this batch")
                seen.add(key)
                accepted.append(action)
                self._remember(seg, action)
            except Rejected as exc:
                rejects.append({"segment_id": row["segment_id"], "position": row["position"],
                                "payload": row["payload"], "reason": str(exc)})
                self.stats.rejects += 1
        self.stats.bump("accepted", len(accepted))
        ctx.state["reject_table"] = pa.Table.from_pylist(rejects, schema=REJECT_SCHEMA)
        return pa.Table.from_pylist(accepted, schema=ACTION_SCHEMA)

    # -- one proposal ---------------------------------------------------------------------
    def _check(self, seg: Segment, payload: str | None) -> dict[str, Any] | None:
        try:
            raw = json.loads(payload) if payload is not None else None
        except json.JSONDecodeError as exc:
            raise Rejected(f"parse error: payload is not JSON ({exc.msg})") from None
        if isinstance(raw, dict) and set(raw) == {"_invalid"}:  # ChatWriter's marker for a non-object item
            raw = raw["_invalid"]
        if not isinstance(raw, dict):
            raise Rejected(f"shape: an action must be a JSON object, got {type(raw).__name__}")
        kind = str(raw.get("action", "")).strip().upper()
        if kind not in ("ADD", "UPDATE", "NOOP"):
            raise Rejected(f"action: {raw.get('action')!r} is not ADD, UPDATE or NOOP")
        if kind == "NOOP":
            return None
        content = raw.get("content")
        if not isinstance(content, str) or not content.strip():
            raise Rejected("content: missing or empty; an action needs the memory text")
        people = self._people(seg)
        if kind == "UPDATE":
            head = next((h for h in seg.heads if h["entry_id"] == raw.get("entry_id")), None) or self._batch.get(
                str(raw.get("entry_id")))
            if head is not None:
                if norm_text(head["content"]) == norm_text(content):
                    return None  # an UPDATE that changes nothing
                return self._finish(seg, "UPDATE", head["owner"], head["source"], head["layer"],
                                    raw.get("utype") or head.get("utype"), content, raw, head["entry_id"])
            self.stats.bump("update_to_add")
            if not all(raw.get(k) for k in ("owner", "source", "layer")):
                raise Rejected(f"entry_id: {raw.get('entry_id')!r} is not a current head, and the action "
                               "lacks owner/source/layer to be added instead")
        owner = GROUP_OWNER if str(raw.get("owner", "")).strip().upper() == GROUP_OWNER else people.resolve(str(raw.get("owner") or ""))
        if owner is None:
            raise Rejected(f"owner: {raw.get('owner')!r} is not in the roster {list(seg.roster)} nor GROUP")
        source = people.resolve(str(raw.get("source") or ""))
        if source is None:
            raise Rejected(f"source: {raw.get('source')!r} is not in the roster {list(seg.roster)}")
        layer = raw.get("layer")
        if layer not in LAYERS:
            raise Rejected(f"layer: {layer!r} is not one of {list(LAYERS)}")
        if layer in GROUP_LAYERS and owner != GROUP_OWNER:
            raise Rejected(f"owner: layer {layer} holds GROUP records, owner is {owner!r}")
        if layer in PERSON_LAYERS and owner == GROUP_OWNER:
            raise Rejected(f"owner: layer {layer} holds person records, owner is GROUP")
        if (owner, layer, norm_text(content)) in self._head_keys(seg):
            raise Rejected("duplicate of a current head (same owner, layer and content)")
        return self._finish(seg, "ADD", owner, source, layer, raw.get("utype"), content, raw, None)

    def _remember(self, seg: Segment, action: dict[str, Any]) -> None:
        """Let later UPDATEs of this batch continue the record this action writes."""
        if action["action"] == "ADD":
            eid = add_entry_id(seg.group_id, seg.segment_id, action["owner"], action["layer"], action["content"])
        else:
            eid = entry_id(seg.group_id, seg.segment_id, "UPDATE", action["entry_id"], action["content"])
            self._batch.pop(action["entry_id"], None)
        self._batch[eid] = {**action, "entry_id": eid}

    def _head_keys(self, seg: Segment) -> set[tuple[str, str, str]]:
        """(owner, layer, normalised content) of the segment's heads, computed once per segment."""
        cache = self.__dict__.setdefault("_heads_cache", {})
        if cache.get("id") != seg.segment_id:
            cache["id"] = seg.segment_id
            cache["keys"] = {(h["owner"], h["layer"], norm_text(h["content"])) for h in seg.heads}
        return cache["keys"]

    def _people(self, seg: Segment) -> PersonResolver:
        cache = self.__dict__.setdefault("_resolvers", {})
        key = (seg.roster, tuple(sorted(seg.aliases.items())))
        if key not in cache:
            cache[key] = PersonResolver(seg.roster, seg.aliases)
        return cache[key]

    def _finish(self, seg: Segment, kind: str, owner: str, source: str, layer: str, utype: Any,
                content: str, raw: dict[str, Any], entry_id: str | None) -> dict[str, Any]:
        cited = raw.get("from_ids")
        if cited:
            if not isinstance(cited, list) or not all(isinstance(c, str) for c in cited):
                raise Rejected("from_ids: must be a list of message ids")
            outside = [c for c in cited if c not in seg.msg_ids]
            if outside:
                raise Rejected(f"from_ids: {outside} are not messages of segment {seg.segment_id}")
            from_ids = list(dict.fromkeys(cited))
        else:
            self.stats.bump("provenance_filled")
            from_ids = fill_provenance(seg, source, content)
        if utype not in RECORD_TYPES:
            if utype is not None:
                self.stats.bump("utype_coerced")
            utype = "fact"
        event = raw.get("event") if isinstance(raw.get("event"), str) and raw.get("event").strip() else None
        return {"action": kind, "segment_id": seg.segment_id, "layer": layer, "owner": owner, "source": source,
                "utype": utype, "content": content.strip(), "event": event, "entry_id": entry_id,
                "from_ids": from_ids}

"""Validate: raw Writer proposals -> accepted actions, and a rejects table with reasons.

Each proposal is judged by :func:`speakerflow.ops.write.contract.check_action`, the one Writer
contract (the training reward's action report calls the same function; the rules are listed
in :mod:`speakerflow.ops.write.contract` and argued in docs/write-path.md). The segment and its
heads come from ``ctx.state["segments"]``, left there by the Writer operator. In short:

1. the backend output was usable JSON (else ONE reject for the whole output: ``parse error``);
2. a proposal beyond ``Segment.max_actions`` is rejected (``over the limit``) and counted;
3. the proposal is a JSON object with ``action`` one of ADD / UPDATE / NOOP;
4. NOOP writes nothing (counted in ``stats.extra["noops"]``);
5. UPDATE: ``entry_id`` must name a current head (or a record an earlier action of the
   same batch writes, see :func:`~speakerflow.ops.write.upsert.add_entry_id`; a head updated
   earlier in the batch continues from its newest record); if it does not, the proposal is
   treated as an ADD (as in the paper) when it carries owner, source and layer, else
   rejected. Owner, source and layer are inherited from the head. New content equal to the
   head's (case and spacing ignored) is a NOOP;
6. ADD: ``layer`` is one of the four derived layers; ``owner`` is in the roster or is
   ``GROUP``; ``source`` is in the roster; person layers need a person owner and group
   layers the GROUP owner; ``content`` is non-empty text; unknown ``utype`` becomes ``fact``;
7. cited ``from_ids`` must all belong to the segment or its ``history`` (earlier messages of
   the group), at least one to the segment itself; when none are cited, provenance is
   filled by code: the segment messages of the source that share most words with the content;
8. duplicates are dropped: two actions of a batch writing the same (owner, layer, content),
   or an ADD repeating a current head.

Names are canonicalised with :class:`~speakerflow.ops.text.people.PersonResolver` first, so
``"@ana"`` or ``"ana"`` count as ``"Ana"``. Every reject keeps the proposal and its reason
in ``ctx.state["rejects"]`` (list of dicts; as an Arrow table with :data:`REJECT_SCHEMA` in
``ctx.state["reject_table"]``) and ``stats.rejects``; nothing is dropped silently. The
verdict of every proposal (``write``/``noop``/``duplicate``/``truncated``/``reject``) is
kept in ``ctx.state["verdicts"]``.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from speakerflow.ops.core.base import Context, Operator, OperatorConfig
from speakerflow.ops.core.registry import register
from speakerflow.ops.write.contract import Batch, Verdict, check_action, fill_provenance, norm_text
from speakerflow.ops.write.interfaces import Segment
from speakerflow.schemas import ACTION_SCHEMA

__all__ = ["REJECT_SCHEMA", "Rejected", "Validate", "fill_provenance", "norm_text"]

REJECT_SCHEMA = pa.schema(
    [
        pa.field("segment_id", pa.string()),
        pa.field("position", pa.int64()),
        pa.field("payload", pa.string()),
        pa.field("reason", pa.string()),
    ]
)


class Rejected(ValueError):
    """A proposal that breaks a Validate rule; the message is the reason kept in the rejects
    table."""


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
        verdicts: list[dict[str, Any]] = ctx.state.setdefault("verdicts", [])
        accepted: list[dict[str, Any]] = []
        batches: dict[str, Batch] = {}  # one per segment: what earlier proposals of it wrote
        for row in table.to_pylist():
            seg = segments.get(row["segment_id"])
            if seg is None:
                verdict = Verdict(
                    "reject",
                    reason=f"segment {row['segment_id']!r} is unknown "
                    "(run the Writer operator first)",
                )
            elif row["parse_error"]:
                verdict = Verdict("reject", reason=f"parse error: {row['parse_error']}")
            else:
                batch = batches.get(seg.segment_id)
                if batch is None:
                    batch = batches[seg.segment_id] = Batch.from_segment(seg)
                verdict = self._judge(row["payload"], batch, row["position"])
            verdicts.append(
                {
                    "segment_id": row["segment_id"],
                    "position": row["position"],
                    "verdict": verdict.kind,
                    "reason": verdict.reason,
                }
            )
            for repair in verdict.repairs:
                self.stats.bump(repair)
            if verdict.kind == "write":
                accepted.append(verdict.action or {})
            elif verdict.kind == "noop":
                self.stats.bump("noops")
            else:  # reject, duplicate, truncated: kept with the reason
                if verdict.kind == "truncated":
                    self.stats.bump("truncated")
                rejects.append(
                    {
                        "segment_id": row["segment_id"],
                        "position": row["position"],
                        "payload": row["payload"],
                        "reason": verdict.reason,
                    }
                )
                self.stats.rejects += 1
        self.stats.bump("accepted", len(accepted))
        ctx.state["reject_table"] = pa.Table.from_pylist(rejects, schema=REJECT_SCHEMA)
        return pa.Table.from_pylist(accepted, schema=ACTION_SCHEMA)

    @staticmethod
    def _judge(payload: str | None, batch: Batch, position: int) -> Verdict:
        if position >= batch.max_actions:
            return check_action(None, batch, position)
        try:
            raw = json.loads(payload) if payload is not None else None
        except json.JSONDecodeError as exc:
            return Verdict("reject", reason=f"parse error: payload is not JSON ({exc.msg})")
        return check_action(raw, batch, position)

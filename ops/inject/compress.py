"""Compress: one short cited line per knowledge item; the deterministic token counter.

Token counting (documented, deterministic, model-free) is :func:`speakerflow.words.count_tokens`:
a token is a run of word characters or one punctuation character. It over-counts slightly
against BPE tokenisers on prose and is exact for budgeting here.

A line reads ``<subject> <relation>: <value> [<maturity>, since <date>, u=<utility>] {ev: id, id}``;
items of the same slot and value are merged into one line with the union of their evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from speakerflow.words import count_tokens


@dataclass
class ContextLine:
    """One line of the working context and what it rests on."""

    text: str
    evidence_ids: list[str]
    kind: str = "knowledge"  # knowledge | state | header
    edge_ids: list[str] = field(default_factory=list)
    maturity: str | None = None
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    utility: float = 0.0
    tokens: int = 0


def short_name(entity_id: str, names: dict) -> str:
    e = names.get(entity_id)
    return e.name if e is not None else entity_id.split(":", 1)[-1]


def render(item, utility: float, names: dict, max_evidence: int = 3) -> ContextLine:
    """The compressed line of one item."""
    ev = item.evidence_ids[-max_evidence:]
    value = (
        short_name(item.value, names)
        if ":" in item.value and not item.object_id.startswith("value:")
        else item.value
    )
    text = (
        f"{short_name(item.subject_id, names)} {item.relation.replace('_', ' ')}: {value} "
        f"[{item.maturity}, since {item.valid_at:%Y-%m-%d}, u={utility:.2f}] {{ev: "
        f"{', '.join(ev)}}}"
    )
    return ContextLine(
        text,
        list(ev),
        "knowledge",
        [item.edge_id],
        item.maturity,
        item.valid_at,
        item.invalid_at,
        utility,
        count_tokens(text),
    )


def compress(
    scored: list[tuple[float, Any]], names: dict, limit: int | None = None
) -> list[ContextLine]:
    """Render (utility, item) pairs sorted best first, merging items of the same slot and value;
    stops after ``limit`` distinct lines (TopB never takes more than it needs)."""
    out: dict[tuple, ContextLine] = {}
    for u, item in scored:
        key = (item.slot, item.object_id)
        if key in out:
            line = out[key]
            line.edge_ids.append(item.edge_id)
            for e in item.evidence_ids:
                if e not in line.evidence_ids:
                    line.evidence_ids.append(e)
            continue
        if limit is not None and len(out) >= limit:
            break
        out[key] = render(item, u, names)
    return list(out.values())

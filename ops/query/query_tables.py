"""The tables the query operators hand on, and the helpers they share.

The query path keeps **one row per question** from Project to Answer; every query
operator is a passthrough (it keeps all input columns and adds its own), so a later
operator may read what any earlier one produced:

=============  ==============================================================================
operator       adds
=============  ==============================================================================
Project        ``question_id`` (``q0``, ``q1`` ... when the input has none) and the
               :class:`~speakerflow.schemas.Projection` columns (issue, rows, tense, owner,
               source, as_of)
Recall         ``pool``: candidates (msg_id, score, via="recall"), best first;
               ``fused``: the fused System 1 score of every message of the group, in
               :meth:`GroupStore.messages` order (System 2 and Select read it)
Select         ``selected``: the System 1 top-k after Expand and ASK (via = recall | expand |
               ask, ``anchor`` = the message an expanded turn hangs on)
Resolve        ``memory``: System 2 items by row (:data:`MEMORY_ITEM`)
Compose        ``evidence`` (:data:`EVIDENCE_ITEM` = the EvidenceItem fields, in composed
               order), ``context``, ``tokens``, ``cited_ids``
Answer         ``answer``, ``answer_said`` (the message's day when the answer means another)
=============  ==============================================================================

:func:`evidence_table` flattens the ``evidence`` column into an
:data:`~speakerflow.schemas.EVIDENCE_SCHEMA` table with ``question_id``.

The operators hand these columns on as typed :class:`~speakerflow.ops.core.batch.Column`
values (:data:`PROJECTION` a :class:`Projection` per row, :data:`FUSED` a float vector,
:data:`COMPOSED` a :class:`Composed` ...): within a pipeline of query operators no Arrow
table is built between stages, and the columns above are made only when a table is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from speakerflow.ops.core.batch import Batch, Column
from speakerflow.schemas import (
    EVIDENCE_SCHEMA,
    PROJECTION_SCHEMA,
    TIMESTAMP,
    EvidenceItem,
    Projection,
)

#: The projection columns (a Projection's fields) Project adds and later operators read.
PROJECTION_COLUMNS = tuple(PROJECTION_SCHEMA.names)

#: One System 1 candidate: the message, its score on the fused scale, how it got in
#: (``recall``, ``expand``, ``ask``) and, for an expanded turn, its anchor message.
CANDIDATE = pa.struct(
    [
        ("msg_id", pa.string()),
        ("score", pa.float64()),
        ("via", pa.string()),
        ("anchor", pa.string()),
    ]
)

#: One System 2 item (a record, a verbatim fallback ``excerpt`` or an ``empty_row``).
MEMORY_ITEM = pa.struct(
    [
        ("kind", pa.string()),
        ("row", pa.string()),
        ("text", pa.string()),
        ("msg_ids", pa.list_(pa.string())),
        ("score", pa.float64()),
        ("speaker", pa.string()),
        ("ts", TIMESTAMP),
        ("entry_id", pa.string()),
        ("history", pa.bool_()),
        ("source", pa.string()),
        ("owner", pa.string()),
    ]
)

#: One composed evidence item (the fields of :class:`~speakerflow.schemas.EvidenceItem`).
EVIDENCE_ITEM = pa.struct(list(EVIDENCE_SCHEMA))

QUESTION_ID = pa.field("question_id", pa.string())


def schema_of(*fields: tuple[str, pa.DataType] | pa.Field) -> pa.Schema:
    """``question_id`` plus ``fields``: what a query operator declares it produces."""
    return pa.schema([QUESTION_ID, *fields])


def with_question_ids(batch: Batch) -> Batch:
    """Add ``question_id`` = ``q0``, ``q1`` ... when the batch has none (ids must be distinct)."""
    if "question_id" in batch.column_names:
        ids = batch.get(QUESTION_IDS)
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})
            raise ValueError(f"question_id repeats {dup[:5]}: give every question row its own id")
        return batch
    return batch.put(QUESTION_IDS, [f"q{i}" for i in range(batch.num_rows)])


def projections(table: pa.Table) -> list[Projection]:
    """One :class:`Projection` per row, read back from the projection columns."""
    cols = table.select(list(PROJECTION_COLUMNS)).to_pylist()
    return [Projection(**row) for row in cols]


def fused_scores(table: pa.Table) -> list[np.ndarray]:
    """The ``fused`` column as one float vector per row (no copy through Python lists)."""
    col = table["fused"].combine_chunks()
    values = col.values.to_numpy(zero_copy_only=False)
    offsets = col.offsets.to_numpy()
    return [values[offsets[i] : offsets[i + 1]] for i in range(len(col))]


def fused_array(vectors: list[np.ndarray]) -> pa.ListArray:
    """Per-row score vectors as an Arrow ``list<double>`` column."""
    offsets = np.zeros(len(vectors) + 1, dtype=np.int32)
    np.cumsum([len(v) for v in vectors], out=offsets[1:])
    flat = np.concatenate(vectors) if vectors else np.zeros(0)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, type=pa.float64()))


def evidence_items(table: pa.Table) -> list[list[EvidenceItem]]:
    """The ``evidence`` column as EvidenceItem lists (one per question, composed order)."""
    return [[EvidenceItem(**item) for item in row] for row in table["evidence"].to_pylist()]


@dataclass
class Composed:
    """Ordered evidence, the context text and its token count."""

    evidence: list[EvidenceItem]
    context: str
    tokens: int
    #: the cited message ids in composed order when the merge fuses ids (``merge="ids"``);
    #: ``None``: the ids in evidence order
    cited: list[str] | None = None

    def cited_ids(self, limit: int | None = None) -> list[str]:
        """Distinct message ids cited by the evidence, in composed order (first ``limit``)."""
        if self.cited is not None:
            return list(self.cited[:limit] if limit is not None else self.cited)
        out: list[str] = []
        seen: set[str] = set()
        for item in self.evidence:
            for mid in item.msg_ids:
                if mid not in seen:
                    seen.add(mid)
                    out.append(mid)
                    if limit is not None and len(out) >= limit:
                        return out
        return out


def evidence_table(table: pa.Table) -> pa.Table:
    """Flatten ``evidence``: one :data:`EVIDENCE_SCHEMA` row per item, with ``question_id``."""
    rows = [
        {"question_id": qid, **item}
        for qid, items in zip(
            table["question_id"].to_pylist(), table["evidence"].to_pylist(), strict=True
        )
        for item in items
    ]
    return pa.Table.from_pylist(rows, schema=schema_of(*EVIDENCE_SCHEMA))


CANDIDATES_SCHEMA = schema_of(("rank", pa.int64()), *CANDIDATE)


def candidates_table(table: pa.Table, column: str = "pool") -> pa.Table:
    """Flatten ``pool`` (or ``selected``): one row per candidate with ``question_id`` and its
    0-based ``rank``, then msg_id, score, via, anchor."""
    rows = [
        {"question_id": qid, "rank": rank, **cand}
        for qid, cands in zip(
            table["question_id"].to_pylist(), table[column].to_pylist(), strict=True
        )
        for rank, cand in enumerate(cands)
    ]
    return pa.Table.from_pylist(rows, schema=CANDIDATES_SCHEMA)


# -- the typed columns the query operators hand on (see the module doc) -------------------
QUESTIONS = Column("question", [pa.field("question", pa.string())])
QUESTION_IDS = Column("question_id", [QUESTION_ID])
#: one :class:`Projection` per row, standing for the projection columns but ``question``
#: (a projection's question is the row's, which Project leaves as it is)
PROJECTION = Column(
    "projection",
    [f for f in PROJECTION_SCHEMA if f.name != "question"],
    encode=lambda ps: dict(zip(PROJECTION_SCHEMA.names[1:], _projection_columns(ps), strict=True)),
    decode=projections,
)
#: Recall's pool: CANDIDATE dicts, best first
POOL = Column("pool", [pa.field("pool", pa.list_(CANDIDATE))])
#: the fused System 1 score of every message, one float vector per row
FUSED = Column(
    "fused",
    [pa.field("fused", pa.list_(pa.float64()))],
    encode=lambda vectors: {"fused": fused_array(vectors)},
    decode=fused_scores,
)
#: what a stage after Recall reads: the question, its projection, Recall's pool and scores
RECALLED_COLUMNS = ("question_id", *PROJECTION_COLUMNS, "pool", "fused")


def recalled_rows(batch: Batch) -> Iterator[tuple[Any, Any, Any]]:
    """``(projection, pool, fused)`` of each row of a batch that Recall has passed."""
    return zip(batch.get(PROJECTION), batch.get(POOL), batch.get(FUSED), strict=True)


SELECTED = Column("selected", [pa.field("selected", pa.list_(CANDIDATE))])
MEMORY = Column("memory", [pa.field("memory", pa.list_(MEMORY_ITEM))])
#: one :class:`Composed` per row, standing for ``evidence``, ``context``, ``tokens``, ``cited_ids``
COMPOSED = Column(
    "composed",
    [
        pa.field("evidence", pa.list_(EVIDENCE_ITEM)),
        pa.field("context", pa.string()),
        pa.field("tokens", pa.int64()),
        pa.field("cited_ids", pa.list_(pa.string())),
    ],
    encode=lambda cs: {
        "evidence": [[e.model_dump() for e in c.evidence] for c in cs],
        "context": [c.context for c in cs],
        "tokens": [c.tokens for c in cs],
        "cited_ids": [c.cited_ids() for c in cs],
    },
    decode=lambda table: [
        Composed(items, context, tokens, cited)
        for items, context, tokens, cited in zip(
            evidence_items(table),
            table["context"].to_pylist(),
            table["tokens"].to_pylist(),
            table["cited_ids"].to_pylist(),
            strict=True,
        )
    ],
)
ANSWERS = Column("answer", [pa.field("answer", pa.string())])
#: the day the answering message was said, when a date answer means another day (else null)
ANSWER_SAID = Column("answer_said", [pa.field("answer_said", pa.string())])
#: the whole line a short answer was taken from (``AnswerConfig.short_answer``; else null)
ANSWER_QUOTE = Column("answer_quote", [pa.field("answer_quote", pa.string())])


def _projection_columns(ps: list[Projection]) -> list[pa.ChunkedArray]:
    """The projection columns after ``question`` (the first), from one Projection per row."""
    assert PROJECTION_SCHEMA.names[0] == "question"
    rows = [p.model_dump(exclude={"question"}) for p in ps]
    return pa.Table.from_pylist(rows, schema=pa.schema(list(PROJECTION_SCHEMA)[1:])).columns

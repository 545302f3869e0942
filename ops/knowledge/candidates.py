"""What extraction reads and writes: the event it reads (:class:`Event`) and the candidate facts
it produces (:class:`Candidate`, one row of :data:`CANDIDATE_SCHEMA` each)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa

from speakerflow.ops.knowledge.lexicon import Lexicon


@dataclass(frozen=True)
class Candidate:
    """One extracted fact before upsert.

    ``value`` is the normalised value (``"0.12%"``, a category value) or, for entity-valued
    relations, the object entity id. ``op`` is ``"assert"`` (a value holds from
    ``valid_at``), ``"end"`` (the slot's value stops holding, no new value: "that exposure is
    gone") or ``"correct"`` (``value`` replaces the value ``replaces`` that the same
    ``speaker`` just stated; ``subject_id`` and ``relation`` may be empty when the correction
    does not name them).
    """

    subject_id: str
    relation: str
    value: str
    description: str
    evidence_ids: tuple[str, ...]
    confidence: float
    scope: str
    valid_at: datetime
    trust_tier: int = 1
    op: str = "assert"
    replaces: str | None = None
    speaker: str = ""

    def slot(self, lex: Lexicon) -> tuple[str, ...]:
        """What a contradiction is scoped to: (subject, relation) for a value held one at a
        time, (subject, relation, object) for a member of a set of entities."""
        rel = lex.relation_by_name.get(self.relation)
        if rel is not None and not rel.literal and not rel.single:
            return (self.subject_id, self.relation, self.value)
        return (self.subject_id, self.relation)


@dataclass
class Event:
    """The fields of a System 1 row extraction needs (``addressee``: who a reply is to, if
    known)."""

    msg_id: str
    text: str
    speaker: str
    ts: datetime
    source_type: str = "message"
    trust_tier: int = 1
    addressee: str | None = None


CANDIDATE_SCHEMA = pa.schema(
    [
        ("subject_id", pa.string()),
        ("relation", pa.string()),
        ("value", pa.string()),
        ("description", pa.string()),
        ("evidence_ids", pa.list_(pa.string())),
        ("confidence", pa.float64()),
        ("scope", pa.string()),
        ("valid_at", pa.timestamp("us", tz="UTC")),
        ("trust_tier", pa.int64()),
        ("op", pa.string()),
        ("replaces", pa.string()),
        ("speaker", pa.string()),
    ]
)

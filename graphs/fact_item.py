"""One fact of the InKH fact graph as a mutable record (:class:`FactItem`), its id and the
time conversions between Python (UTC-aware) and Kuzu (naive UTC)."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import overload

from speakerflow.schemas import EDGE_SCHEMA

VALUE_PREFIX = "value:"
FACT_COLUMNS = EDGE_SCHEMA.names


@dataclass
class FactItem:
    """A cached Fact: the :class:`~speakerflow.schemas.RelationEdge` fields, mutable.

    ``object_id`` is an entity id, or ``value:<v>`` for a literal value.
    """

    edge_id: str
    group_id: str
    subject_id: str
    relation: str
    object_id: str
    description: str
    evidence_ids: list[str]
    valid_at: datetime
    updated_at: datetime
    created_at: datetime
    confidence: float = 0.7
    maturity: str = "candidate"
    regime_tag: str | None = None
    scope: str = "shared"
    invalid_at: datetime | None = None
    expired_at: datetime | None = None
    reuse_count: int = 0
    validations: int = 0
    utility: float = 0.0
    last_validated: datetime | None = None
    trust_tier: int = 1
    superseded_by: str | None = field(default=None, compare=False)

    @property
    def value(self) -> str:
        """The literal value, or the object entity id."""
        return (
            self.object_id[len(VALUE_PREFIX) :]
            if self.object_id.startswith(VALUE_PREFIX)
            else self.object_id
        )

    @property
    def slot(self) -> tuple[str, ...]:
        """Contradiction scope: (subject, relation) for literal values, + object for entity
        objects."""
        if self.object_id.startswith(VALUE_PREFIX):
            return (self.subject_id, self.relation)
        return (self.subject_id, self.relation, self.object_id)

    def row(self) -> dict:
        d = asdict(self)
        d.pop("superseded_by")
        return d


def edge_id_for(group_id: str, subject: str, relation: str, object_id: str, evidence: str) -> str:
    """A stable fact id from its content and first evidence (reruns do not duplicate)."""
    h = hashlib.sha1(
        f"{group_id}|{subject}|{relation}|{object_id}|{evidence}".encode()
    ).hexdigest()[:16]
    return f"f_{h}"


@overload
def to_naive(t: datetime) -> datetime: ...
@overload
def to_naive(t: None) -> None: ...
def to_naive(t: datetime | None) -> datetime | None:
    return None if t is None else t.astimezone(UTC).replace(tzinfo=None)


@overload
def to_aware(t: datetime) -> datetime: ...
@overload
def to_aware(t: None) -> None: ...
def to_aware(t: datetime | None) -> datetime | None:
    return None if t is None else (t.replace(tzinfo=UTC) if t.tzinfo is None else t)

"""Typed records: the pydantic models that every Arrow table in speakerflow mirrors.

One model per record kind; :mod:`speakerflow.schemas.arrow` derives the Arrow schema of
each model from its fields, so the two can never drift apart.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: The four derived layers of SpeakerMem-R1 (System 2). Raw messages are System 1.
LAYERS: tuple[str, ...] = (
    "per_speaker_core",
    "per_speaker_profile",
    "group_interaction",
    "group_insight",
)
PERSON_LAYERS = LAYERS[:2]
GROUP_LAYERS = LAYERS[2:]
#: Owner of records about the whole group.
GROUP_OWNER = "GROUP"
RECORD_TYPES: tuple[str, ...] = (
    "fact",
    "stance",
    "observation",
    "decision",
    "relation",
    "norm",
    "preference",
    "risk",
    "procedure",
)
MATURITY_LEVELS: tuple[str, ...] = ("candidate", "verified", "proven", "deprecated")
SOURCE_TYPES: tuple[str, ...] = (
    "message",
    "user_turn",
    "tool_observation",
    "market_update",
    "portfolio_change",
    "risk_signal",
)

Layer = Literal["per_speaker_core", "per_speaker_profile", "group_interaction", "group_insight"]
Scope = Literal["PERSON", "GROUP"]
Maturity = Literal["candidate", "verified", "proven", "deprecated"]
ActionKind = Literal["ADD", "UPDATE", "NOOP"]


def utc(value: datetime) -> datetime:
    """Return ``value`` as an aware UTC datetime (naive values are taken to be UTC)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


class Record(BaseModel):
    """Base of all records: frozen, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _utc_times(cls, value):  # noqa: ANN001 - generic over field types
        return utc(value) if isinstance(value, datetime) else value


#: Arrow stores these integers as int64: larger values are refused at validation.
INT64_MAX = 2**63 - 1


class Message(Record):
    """One System 1 row: a message or event, kept verbatim and never changed.

    ``msg_id`` is unique within its group. ``turn`` orders messages inside a session;
    ``ts`` is the UTC time it was said. ``trust_tier`` is 1 (most trusted: a person's own
    words or an exchange feed) to 3 (hearsay, unverified tool output).
    """

    msg_id: str = Field(min_length=1)
    group_id: str = Field(min_length=1)
    session_id: str = Field(min_length=1)
    turn: int = Field(ge=0, le=INT64_MAX)
    ts: datetime
    speaker: str = Field(min_length=1)
    text: str
    reply_to: str | None = None
    source_type: str = "message"
    source_ref: str | None = None
    trust_tier: int = Field(default=1, ge=1, le=3)


class KnowledgeItem(Record):
    """A derived record (System 2) or a knowledge-graph fact: time-valid, with provenance.

    ``owner`` is whom the record is about (a roster name or ``GROUP``); ``source`` is who
    said or observed it. ``from_ids`` are the message ids it rests on. An UPDATE appends a
    new item whose ``supersedes`` is the old ``entry_id``; the old item gets
    ``superseded_by`` and ``invalid_at`` and is kept.
    """

    entry_id: str = Field(min_length=1)
    group_id: str = Field(min_length=1)
    layer: Layer
    scope: Scope
    owner: str = Field(min_length=1)
    source: str = Field(min_length=1)
    utype: str = "fact"
    content: str = Field(min_length=1)
    event: str | None = None
    from_ids: list[str] = Field(min_length=1)
    session_id: str | None = None
    turn: int | None = Field(default=None, ge=-INT64_MAX, le=INT64_MAX)
    write_order: int = Field(default=0, ge=-INT64_MAX, le=INT64_MAX)
    supersedes: str | None = None
    superseded_by: str | None = None
    valid_at: datetime
    invalid_at: datetime | None = None
    confidence: float = Field(default=0.7, ge=0.0, le=1.0)
    maturity: Maturity = "candidate"
    regime_tag: str | None = None
    first_seen: datetime
    last_validated: datetime | None = None
    reuse_count: int = Field(default=0, ge=0, le=INT64_MAX)


class WriterAction(Record):
    """One Writer action. ``entry_id`` names the head an UPDATE continues."""

    action: ActionKind
    segment_id: str
    layer: str | None = None
    owner: str | None = None
    source: str | None = None
    utype: str | None = None
    content: str | None = None
    event: str | None = None
    entry_id: str | None = None
    from_ids: list[str] = Field(default_factory=list)


class Entity(Record):
    """A canonical entity: a person, asset, trader, strategy or risk."""

    entity_id: str = Field(min_length=1)
    group_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    etype: str = Field(min_length=1)
    aliases: list[str] = Field(default_factory=list)


class RelationEdge(Record):
    """An InKH knowledge edge ``subject --relation--> object`` with bi-temporal times.

    ``valid_at``/``invalid_at`` are when the fact held in the world; ``created_at``/
    ``expired_at`` are when speakerflow learned and retired it (transaction time).
    """

    edge_id: str = Field(min_length=1)
    group_id: str = Field(min_length=1)
    subject_id: str = Field(min_length=1)
    relation: str = Field(min_length=1)
    object_id: str = Field(min_length=1)
    description: str = Field(min_length=1)
    evidence_ids: list[str] = Field(min_length=1)
    confidence: float = Field(default=0.7, ge=0.0, le=1.0)
    maturity: Maturity = "candidate"
    regime_tag: str | None = None
    scope: str = "shared"
    valid_at: datetime
    invalid_at: datetime | None = None
    updated_at: datetime
    created_at: datetime
    expired_at: datetime | None = None
    # InKH maturity inputs (added with defaults): uses in injected contexts, independent
    # confirmations, mean utility attribution of those uses (0-1), last confirmation time,
    # trust tier of the first evidence (1 best .. 3 hearsay).
    reuse_count: int = Field(default=0, ge=0, le=INT64_MAX)
    validations: int = Field(default=0, ge=0, le=INT64_MAX)
    utility: float = 0.0
    last_validated: datetime | None = None
    trust_tier: int = Field(default=1, ge=1, le=3)


class Projection(Record):
    """What a question asks for: the issue, the rows (people / GROUP / ALL), the tense."""

    question: str
    issue: str
    rows: list[str] = Field(default_factory=list)
    tense: Literal["head", "full"] = "head"
    owner: str | None = None
    source: str | None = None
    as_of: datetime | None = None


class EvidenceItem(Record):
    """One piece of composed evidence; ``msg_ids`` are the messages it rests on."""

    rank: int = Field(ge=0, le=INT64_MAX)
    kind: Literal["excerpt", "record", "empty_row", "fact"]
    row: str | None = None
    text: str
    msg_ids: list[str] = Field(default_factory=list)
    speaker: str | None = None
    ts: datetime | None = None
    entry_id: str | None = None
    score: float = 0.0


class Judgment(Record):
    """A verdict on one answer or context."""

    question_id: str
    metric: str
    value: float
    detail: str | None = None

"""Request and response bodies of the HTTP API (validated by FastAPI, documented in OpenAPI)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field


class AskIn(BaseModel):
    question: str = Field(min_length=1, max_length=4000)


class InjectIn(BaseModel):
    event: dict[str, Any] | str = Field(
        description='{"content": "...", "ts"?: ISO time, "source"?: user}, or text'
    )
    user: str | None = Field(default=None, description="the user whose private overlay applies")
    budget: int = Field(default=600, ge=1, le=20_000)
    hops: int = Field(default=2, ge=1, le=3)


class ForgetIn(BaseModel):
    speaker: str | None = Field(default=None, description="forget everything this person said")
    message_ids: list[str] | None = Field(
        default=None, max_length=10_000, description="forget these messages"
    )
    all: bool = Field(default=False, description="forget every message of the group")
    dry_run: bool = Field(default=False, description="report what would be removed; change nothing")
    rederive: Literal["auto", "all", "affected"] = Field(
        default="auto",
        description="all: write every record again from what remains; affected: only records "
        "resting on the forgotten messages; auto: all where the rules Writer wrote the group",
    )


class MaintainIn(BaseModel):
    now: datetime | None = Field(
        default=None,
        description="the time the tick treats as now (default: the clock; UTC if no zone)",
    )
    seed: int = Field(default=0, description="seed of the tick's probe sampler")


class IngestOut(BaseModel):
    ingested: int
    already_stored: int
    new_speakers: list[str]
    write: Literal["queued", "running", "skipped"]


#: the fields of each cited message an ask returns
CITED_FIELDS: set[str] = {"msg_id", "speaker", "ts", "session_id", "text"}


class AskOut(BaseModel):
    question: str
    answer: str
    said: str | None = Field(
        None, description="the day the answering message was said, when a date answer means another"
    )
    cited_ids: list[str]
    cited: list[dict[str, Any]]
    evidence: list[dict[str, Any]]
    projection: dict[str, Any]
    context_tokens: int
    latency_ms: float = Field(description="query path (projection, retrieval, composition)")
    answer_ms: float
    server_ms: float = Field(description="the whole request inside the server, waiting included")
    wait_ms: float = Field(
        description="of server_ms, waiting for an ask slot (--ask-threads) and for the group "
        "(a read snapshot being taken)"
    )


MESSAGE_EXAMPLE = [
    {
        "msg_id": "s2-t05",
        "session_id": "s2",
        "ts": "2026-03-06T14:15:00Z",
        "speaker": "Ana",
        "text": "Great, it's settled: the offsite will be in Porto, 12 to 14 May.",
    }
]

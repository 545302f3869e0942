from datetime import UTC, datetime, timedelta, timezone

import pyarrow as pa
import pytest

from speakerflow.schemas import (
    EDGE_SCHEMA,
    MESSAGE_SCHEMA,
    RECORD_SCHEMA,
    KnowledgeItem,
    Message,
    RecordValidationError,
    from_table,
    to_table,
    validate_rows,
)


def test_arrow_schema_mirrors_model_fields():
    assert MESSAGE_SCHEMA.names == list(Message.model_fields)
    assert RECORD_SCHEMA.field("from_ids").type == pa.list_(pa.string())
    assert RECORD_SCHEMA.field("invalid_at").nullable
    assert not RECORD_SCHEMA.field("entry_id").nullable
    assert MESSAGE_SCHEMA.field("ts").type == pa.timestamp("us", tz="UTC")
    assert {"valid_at", "invalid_at", "created_at", "expired_at", "evidence_ids"} <= set(
        EDGE_SCHEMA.names
    )


def test_times_are_normalised_to_utc():
    plus2 = timezone(timedelta(hours=2))
    m = Message(
        msg_id="m",
        group_id="g",
        session_id="s",
        turn=0,
        ts=datetime(2026, 1, 1, 12, tzinfo=plus2),
        speaker="A",
        text="hi",
    )
    assert m.ts == datetime(2026, 1, 1, 10, tzinfo=UTC)
    naive = Message(
        msg_id="m",
        group_id="g",
        session_id="s",
        turn=0,
        ts=datetime(2026, 1, 1),
        speaker="A",
        text="x",
    )
    assert naive.ts.tzinfo == UTC


def test_validation_names_row_field_and_reason():
    rows = [
        {
            "msg_id": "a",
            "group_id": "g",
            "session_id": "s",
            "turn": 0,
            "ts": "2026-01-01T00:00:00Z",
            "speaker": "A",
            "text": "ok",
        },
        {
            "msg_id": "b",
            "group_id": "g",
            "session_id": "s",
            "turn": -1,
            "ts": "2026-01-01T00:00:00Z",
            "speaker": "A",
            "text": "x",
        },
        {
            "msg_id": "c",
            "group_id": "g",
            "session_id": "s",
            "turn": 2,
            "ts": "not a date",
            "speaker": "A",
            "text": "x",
        },
    ]
    with pytest.raises(RecordValidationError) as exc:
        validate_rows(rows, Message, where="f.jsonl", row_numbers=[1, 2, 3])
    errors = {(e.row, e.field) for e in exc.value.errors}
    assert errors == {(2, "turn"), (3, "ts")}
    assert "f.jsonl: row 2: field 'turn'" in str(exc.value)


def test_table_round_trip_and_record_rules():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    item = KnowledgeItem(
        entry_id="e1",
        group_id="g",
        layer="group_interaction",
        scope="GROUP",
        owner="GROUP",
        source="Ana",
        content="Offsite in Porto",
        from_ids=["m1"],
        valid_at=now,
        first_seen=now,
    )
    table = to_table([item])
    assert table.schema == RECORD_SCHEMA
    assert from_table(table, KnowledgeItem) == [item]
    with pytest.raises(ValueError):
        KnowledgeItem(
            entry_id="e2",
            group_id="g",
            layer="episodic",
            scope="GROUP",
            owner="GROUP",
            source="Ana",
            content="x",
            from_ids=["m1"],
            valid_at=now,
            first_seen=now,
        )
    with pytest.raises(ValueError):  # provenance is mandatory
        KnowledgeItem(
            entry_id="e3",
            group_id="g",
            layer="group_insight",
            scope="GROUP",
            owner="GROUP",
            source="Ana",
            content="x",
            from_ids=[],
            valid_at=now,
            first_seen=now,
        )

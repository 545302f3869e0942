"""Arrow schemas derived from the pydantic records, and row validation.

>>> from speakerflow.schemas import MESSAGE_SCHEMA
>>> "msg_id" in MESSAGE_SCHEMA.names
True
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import pyarrow as pa
from pydantic import BaseModel, ValidationError

from .records import (
    Entity,
    EvidenceItem,
    Judgment,
    KnowledgeItem,
    Message,
    Projection,
    RelationEdge,
    WriterAction,
)

TIMESTAMP = pa.timestamp("us", tz="UTC")


def _arrow_type(annotation: Any) -> tuple[pa.DataType, bool]:
    """Map a field annotation to (arrow type, nullable)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        inner, _ = _arrow_type(args[0])
        return inner, True
    if origin is list:
        inner, _ = _arrow_type(typing.get_args(annotation)[0])
        return pa.list_(inner), False
    if origin is Literal:
        return pa.string(), False
    mapping = {
        str: pa.string(),
        int: pa.int64(),
        float: pa.float64(),
        bool: pa.bool_(),
        datetime: TIMESTAMP,
    }
    if annotation in mapping:
        return mapping[annotation], False
    raise TypeError(f"no Arrow type for annotation {annotation!r}")


def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    """The Arrow schema of a record model, one column per field, in field order."""
    fields = []
    for name, info in model.model_fields.items():
        dtype, nullable = _arrow_type(info.annotation)
        fields.append(pa.field(name, dtype, nullable=nullable or not info.is_required()))
    return pa.schema(fields, metadata={"speakerflow.record": model.__name__})


MESSAGE_SCHEMA = arrow_schema(Message)
RECORD_SCHEMA = arrow_schema(KnowledgeItem)
ACTION_SCHEMA = arrow_schema(WriterAction)
ENTITY_SCHEMA = arrow_schema(Entity)
EDGE_SCHEMA = arrow_schema(RelationEdge)
PROJECTION_SCHEMA = arrow_schema(Projection)
EVIDENCE_SCHEMA = arrow_schema(EvidenceItem)
JUDGMENT_SCHEMA = arrow_schema(Judgment)


@dataclass(frozen=True)
class RowError:
    """A row that failed validation: which row, which field, and why."""

    row: int | str  # a row index, a line number, or a source's own label (``D1:3``)
    field: str
    reason: str
    where: str = ""

    def __str__(self) -> str:
        prefix = f"{self.where}: " if self.where else ""
        return f"{prefix}row {self.row}: field '{self.field}': {self.reason}"


class RecordValidationError(ValueError):
    """Raised when rows do not match their record model; ``errors`` lists every bad field."""

    def __init__(self, errors: list[RowError]):
        self.errors = errors
        shown = "\n".join(f"  {e}" for e in errors[:20])
        more = f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(f"{len(errors)} invalid field(s):\n{shown}{more}")


def validate_rows(
    rows: typing.Iterable[dict[str, Any]],
    model: type[BaseModel],
    where: str = "",
    row_numbers: typing.Sequence[int | str] | None = None,
) -> list[BaseModel]:
    """Validate dict rows into models, or raise :class:`RecordValidationError` naming each bad
    field.

    ``row_numbers`` lets a loader report the line of the source file instead of the index.
    """
    out: list[BaseModel] = []
    errors: list[RowError] = []
    for i, row in enumerate(rows):
        number = row_numbers[i] if row_numbers is not None else i
        try:
            out.append(model.model_validate(row))
        except ValidationError as exc:
            for err in exc.errors():
                field = ".".join(str(p) for p in err["loc"]) or "<row>"
                errors.append(RowError(number, field, err["msg"], where))
    if errors:
        raise RecordValidationError(errors)
    return out


def to_table(records: typing.Sequence[BaseModel], model: type[BaseModel] | None = None) -> pa.Table:
    """Build an Arrow table from records (an empty table when ``records`` is empty)."""
    if model is None:
        if not records:
            raise ValueError("to_table needs `model` when records is empty")
        model = type(records[0])
    schema = arrow_schema(model)
    return pa.Table.from_pylist([r.model_dump() for r in records], schema=schema)


def from_table(table: pa.Table, model: type[BaseModel], where: str = "") -> list[BaseModel]:
    """Validate every row of an Arrow table into ``model`` (errors name row and field)."""
    return validate_rows(table.to_pylist(), model, where=where)

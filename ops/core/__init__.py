"""The operator framework: typed, metered steps over Arrow tables (and typed batches),
composition, registry."""

from speakerflow.ops.core.base import (
    Batch,
    Column,
    Context,
    MissingDependencyError,
    Operator,
    OperatorConfig,
    OperatorStats,
    Pipeline,
    SchemaMismatchError,
)
from speakerflow.ops.core.for_each import ForEach
from speakerflow.ops.core.lambda_op import Lambda
from speakerflow.ops.core.registry import register

__all__ = [
    "Batch",
    "Column",
    "Context",
    "ForEach",
    "Lambda",
    "MissingDependencyError",
    "Operator",
    "OperatorConfig",
    "OperatorStats",
    "Pipeline",
    "SchemaMismatchError",
    "register",
]

"""The operator framework: typed, metered steps over Arrow tables, composition, registry."""

from speakerflow.ops.core.base import (
    Context,
    MissingDependencyError,
    Operator,
    OperatorConfig,
    OperatorStats,
    SchemaMismatchError,
)
from speakerflow.ops.core.lambda_op import Lambda
from speakerflow.ops.core.pipeline import ForEach, Pipeline
from speakerflow.ops.core.registry import register

__all__ = [
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

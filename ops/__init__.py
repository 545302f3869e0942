"""Operators: typed, metered steps over Arrow tables, and their composition."""

from .base import (
    Context,
    MissingDependencyError,
    Operator,
    OperatorConfig,
    OperatorStats,
    SchemaMismatchError,
)
from .lambda_op import Lambda
from .pipeline import ForEach, Pipeline
from .registry import register

__all__ = [
    "Context",
    "MissingDependencyError",
    "Operator",
    "OperatorConfig",
    "OperatorStats",
    "SchemaMismatchError",
    "Lambda",
    "ForEach",
    "Pipeline",
    "register",
]

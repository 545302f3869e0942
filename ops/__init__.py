"""Operators: typed, metered steps over Arrow tables, and their composition.

The operators live in family folders (docs/design.md, "The family map"): ``core`` (the
framework), ``loaders``, ``write`` (SpeakerMem write path), ``query`` (query path),
``knowledge`` (InKH), ``inject``, ``text`` (text tools) and ``backends`` (chat models).
"""

from speakerflow.ops.core import (
    Context,
    ForEach,
    Lambda,
    MissingDependencyError,
    Operator,
    OperatorConfig,
    OperatorStats,
    Pipeline,
    SchemaMismatchError,
    register,
)

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

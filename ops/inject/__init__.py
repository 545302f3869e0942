"""Passive injection: Detect -> Canonicalize -> h-hop neighbourhood -> remove invalidated ->
governance -> utility -> TopB under a token budget -> Compress -> Fuse (the paper's Algorithm 1)."""

from speakerflow.ops.inject.compress import ContextLine, compress, count_tokens
from speakerflow.ops.inject.pipeline import InjectConfig, PassiveInjector, WorkingContext
from speakerflow.ops.inject.topb import top_b
from speakerflow.ops.inject.utility import UtilityConfig, UtilityScorer

__all__ = [
    "ContextLine",
    "InjectConfig",
    "PassiveInjector",
    "UtilityConfig",
    "UtilityScorer",
    "WorkingContext",
    "compress",
    "count_tokens",
    "top_b",
]

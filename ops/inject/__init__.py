"""Passive injection: Detect -> Canonicalize -> h-hop neighbourhood -> remove invalidated ->
governance -> utility -> TopB under a token budget -> Compress -> Fuse (the paper's Algorithm 1)."""

from .compress import ContextLine, compress, count_tokens
from .pipeline import InjectConfig, PassiveInjector, WorkingContext
from .topb import top_b
from .utility import UtilityConfig, UtilityScorer

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

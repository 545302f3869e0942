"""Stores: the Kuzu temporal graph, the Tantivy BM25 index, and one store per group."""

from .home import Home
from .kuzu_graph import KuzuGraph, UnboundParameterError
from .store import GroupStore
from .tables import GroupBusyError, IngestResult, StoreError, check_group_id, conform
from .text_index import Hit, InMemoryIndex, SearchFilter, TantivyIndex, query_terms

__all__ = [
    "KuzuGraph",
    "UnboundParameterError",
    "GroupBusyError",
    "GroupStore",
    "Home",
    "IngestResult",
    "StoreError",
    "check_group_id",
    "conform",
    "Hit",
    "InMemoryIndex",
    "SearchFilter",
    "TantivyIndex",
    "query_terms",
]

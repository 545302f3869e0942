"""Load a group's fact graph (System 3) from its store: the graphs-level half of
:func:`speakerflow.ops.knowledge.load.load_knowledge`."""

from __future__ import annotations

from typing import Any

from .facts import FactGraph


def load_fact_graph(store: Any, with_records: bool = True) -> FactGraph:
    """The group's fact cache, loaded from Kuzu once (empty for an in-memory store).

    ``with_records`` also loads the derived records as facts (``rec_*`` edges).
    """
    graph = None if store.in_memory else store.graph
    fg = FactGraph(graph, store.group_id)
    if graph is not None:
        fg.load(with_records=with_records)
    return fg

"""What the InKH operators and tools read of a group: its fact graph, alias table and detector,
all under the group's domain pack (the one it was ingested with, else the default pack).

:func:`load_knowledge` lives in ``ops`` (not ``pipelines``) so that operators such as the
wiki writer and maintenance can use it without importing a higher layer; the fact graph
itself is loaded by :func:`speakerflow.graphs.knowledge.load_fact_graph`.
"""

from __future__ import annotations

from typing import Any

from speakerflow.graphs.facts import FactGraph
from speakerflow.graphs.knowledge import load_fact_graph
from speakerflow.ops.knowledge.canonicalize import Canonicalizer
from speakerflow.ops.knowledge.detect import Detector
from speakerflow.ops.knowledge.domain.load import pack_of
from speakerflow.ops.knowledge.domain.schema import DomainPack
from speakerflow.ops.knowledge.lexicon import lexicon_for
from speakerflow.ops.text.people import PersonResolver

__all__ = ["load_knowledge", "people_of"]


#: source types of events a person writes (the others come from tools, feeds and monitors)
PERSON_SOURCES = ("user_turn", "message")


def people_of(store: Any) -> PersonResolver | None:
    """The group's roster resolver (None for a group without speakers yet): its speakers,
    less those that only ever emit tool, feed or monitor events (a catalogue bot is no
    person)."""
    roster = store.roster()
    msgs = store.messages() if roster else None
    if msgs is not None and "source_type" in msgs.column_names and msgs.num_rows:
        pairs = zip(msgs["speaker"].to_pylist(), msgs["source_type"].to_pylist(), strict=True)
        seen: dict[str, bool] = {}
        for who, kind in pairs:
            seen[who] = seen.get(who, False) or (kind or "message") in PERSON_SOURCES
        roster = [r for r in roster if seen.get(r, True)]
    return PersonResolver(roster, aliases=store.aliases()) if roster else None


def load_knowledge(
    store: Any, with_records: bool = True, pack: DomainPack | None = None
) -> tuple[FactGraph, Canonicalizer, Detector]:
    """The group's fact cache (loaded from Kuzu once), alias table and detector; ``pack``
    overrides the group's domain pack (:func:`~.domain.load.pack_of`)."""
    fg = load_fact_graph(store, with_records=with_records)
    canon = Canonicalizer(lexicon_for(pack_of(store, pack)), group_id=store.group_id)
    canon.load([e.model_dump() for e in fg.entities.values()])
    return fg, canon, Detector(canon.lexicon, canon.alias_table, people=people_of(store))

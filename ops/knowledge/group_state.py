"""What the InKH operators of one pipeline run share: the group's knowledge, loaded once.

``ExtractKnowledge``, ``Invalidate``, ``Decay``, ``Inject``, ``Maintain`` and ``Wiki`` read the
group's fact graph, alias table (:class:`~speakerflow.ops.knowledge.canonicalize.Canonicalizer`) and
:class:`~speakerflow.ops.knowledge.detect.Detector` through :func:`knowledge_of`: loaded from
``ctx.store`` the first time an operator asks (Kuzu read once per run) and kept in
``ctx.state`` so that the next operator sees what the previous one wrote. Without a store
they share an empty in-memory graph (``ctx.state["canonicalizer"]`` when one is there). The
domain pack is the group's (:func:`~speakerflow.ops.knowledge.domain.load.pack_of`) unless
``ctx.state["domain"]`` holds one.
"""

from __future__ import annotations

from datetime import UTC, datetime

from speakerflow.graphs.facts import FactGraph
from speakerflow.ops.core.base import Context
from speakerflow.ops.knowledge.canonicalize import Canonicalizer
from speakerflow.ops.knowledge.detect import Detector
from speakerflow.ops.knowledge.lexicon import lexicon_for
from speakerflow.ops.knowledge.load import load_knowledge

__all__ = ["DOMAIN", "KNOWLEDGE", "KNOWLEDGE_RECORDS", "Knowledge", "knowledge_of", "now_of"]

Knowledge = tuple[FactGraph, Canonicalizer, Detector]
#: ``ctx.state`` key of the group's facts (no SpeakerMem records): the write side.
KNOWLEDGE = "knowledge"
#: ``ctx.state`` key of the facts plus the SpeakerMem record heads: what injection reads.
KNOWLEDGE_RECORDS = "knowledge_with_records"
#: ``ctx.state`` key of a domain pack that overrides the group's (a ``DomainPack``)
DOMAIN = "domain"


def knowledge_of(ctx: Context, with_records: bool = False) -> Knowledge:
    """``(fact graph, canonicalizer, detector)`` of the run's group, loaded once per run.

    ``with_records`` adds the SpeakerMem record heads to the graph (what passive injection
    reads); the write side (extraction, invalidation) works without them, as
    :func:`speakerflow.pipelines.entity_path.build_entity_graph` always did.
    """
    key = KNOWLEDGE_RECORDS if with_records else KNOWLEDGE
    k = ctx.state.get(key)
    if k is None:
        pack = ctx.state.get(DOMAIN)
        if ctx.store is not None:
            k = load_knowledge(ctx.store, with_records=with_records, pack=pack)
        else:
            canon = ctx.state.get("canonicalizer") or Canonicalizer(lexicon_for(pack))
            k = (FactGraph(None, canon.group_id), canon, Detector(canon.lexicon, canon.alias_table))
        ctx.state[key] = k
        ctx.state.setdefault("canonicalizer", k[1])
    return k


def now_of(ctx: Context) -> datetime:
    """``ctx.clock()`` when the run pins the time (tests, replays), else the wall clock (UTC)."""
    return ctx.clock() if ctx.clock is not None else datetime.now(UTC)

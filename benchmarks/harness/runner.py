"""Run one seed of Stage A through all six baselines on real components.

Per seed: a temporary Home with two group stores (``inkh``, ``noinv``); each round's events
go to System 1 (Parquet + Kuzu + Tantivy) up front, while every system only reads what is
older than the query (BM25 with an ``until`` filter, graphs built from completed workflows).
After each workflow its events go through Detect -> Canonicalize -> extraction once, and the
candidates are upserted into both graphs (with and without write-time invalidation). At the
end of a round both graphs are flushed to Kuzu and the caches reloaded from Kuzu.
"""

from __future__ import annotations

import random
import tempfile
import time

import pyarrow as pa

from speakerflow.graphs import Home
from speakerflow.graphs.facts import FactGraph
from speakerflow.ops.inject import count_tokens
from speakerflow.ops.knowledge.canonicalize import Canonicalizer
from speakerflow.ops.knowledge.detect import Detector
from speakerflow.ops.knowledge.extract_knowledge import Event, KnowledgeExtractor
from speakerflow.ops.knowledge.invalidate import UpsertConfig, upsert_facts
from speakerflow.ops.knowledge.lexicon import norm
from speakerflow.ops.knowledge.maintenance import recompute
from speakerflow.schemas import MESSAGE_SCHEMA

from .baselines import Injected, ModelOnly, SimpleMemory, ToolAgent, WikiWalk
from .generator import Episode, Generator
from .metrics import modelled_latency_ms, paper_quality, quality, score


def run_seed(seed: int, rounds: int = 4, episodes: int = 80, holdout: float = 0.0) -> list[dict]:
    """One row per (question, baseline), then the ``_inventory`` row of the seed."""
    gen = Generator(seed, rounds, episodes, holdout=holdout)
    rows: list[dict] = []
    rng = random.Random(10_000 + seed)
    with tempfile.TemporaryDirectory(prefix=f"inkh-{seed}-") as tmp:
        home = Home(tmp)
        stores = {
            "InKH": home.open("inkh", writable=True),
            "KH-NoInv": home.open("noinv", writable=True),
        }
        canon = Canonicalizer(group_id="bench")
        det = Detector(canon.lexicon, canon.alias_table)
        extractor = KnowledgeExtractor(canon, det)
        facts = {k: FactGraph(s.graph, s.group_id) for k, s in stores.items()}
        texts: dict[str, dict] = {}
        stored: set[str] = set()
        try:
            for rnd, batch in gen.stream():
                evs = [e for ep in batch for e in ep.events]
                table = pa.Table.from_pylist(
                    [{**e, "reply_to": None} for e in evs], schema=MESSAGE_SCHEMA
                )
                for s in stores.values():
                    s.append_messages(
                        table.set_column(1, "group_id", pa.array([s.group_id] * len(evs)))
                    )
                stored |= {e["msg_id"] for e in evs}
                texts.update({e["msg_id"]: e for e in evs})
                systems = [
                    Injected("InKH", canon, facts["InKH"], det, True),
                    Injected("KH-NoInv", canon, facts["KH-NoInv"], det, False),
                    WikiWalk(det, canon, facts["KH-NoInv"]),
                    SimpleMemory(det, stores["InKH"], texts),
                    ToolAgent(det),
                    ModelOnly(det),
                ]
                for ep in batch:
                    if ep.qid:
                        rows += _ask(ep, systems, gen, stored, rng, seed, rnd)
                    # background extraction after the workflow completes
                    cands = _extract(extractor, ep.events)
                    for k, fg in facts.items():
                        upsert_facts(
                            fg, cands, ep.events[-1]["ts"], UpsertConfig(invalidation=(k == "InKH"))
                        )
                end = batch[-1].events[-1]["ts"]
                for k, fg in facts.items():
                    recompute(fg, end)
                    fg.put_entities(canon.to_records())
                    fg.flush()
                    facts[k] = FactGraph(stores[k].graph, stores[k].group_id).load(
                        with_records=False
                    )
            rows.append(_inventory(seed, facts, canon, gen))
        finally:
            for s in stores.values():
                s.close()
    return rows


def _ask(
    ep: Episode,
    systems: list,
    gen: Generator,
    stored: set[str],
    rng: random.Random,
    seed: int,
    rnd: int,
) -> list[dict]:
    """The rows of an episode's question: each system's context for it, scored."""
    q = next(e for e in ep.events if e["msg_id"] == ep.qid)
    tools = [e for e in ep.events if e["source_type"] == "tool_observation" and e["ts"] > q["ts"]]
    rows = []
    for sysm in systems:
        t0 = time.perf_counter()
        lines, tokens, steps = sysm.context(q, tools)
        ms = (time.perf_counter() - t0) * 1000
        sc = score(lines, gen.truth, ep.qid, q["ts"], stored)
        tokens += count_tokens(q["text"])  # the question itself
        rows.append(
            {
                "seed": seed,
                "round": rnd,
                "family": ep.family,
                "baseline": sysm.name,
                "hits": sc["hits"],
                "gold": sc["gold"],
                "stale_usage": sc["stale"],
                "rumour_use": sc["rumour"],
                "context_precision": sc["precision"],
                "traceability": sc["traceability"],
                "tokens": tokens,
                "retrieval_ms": ms,
                "quality": quality(sc),
                "paper_quality": paper_quality(sysm.name, sc, rng),
                "latency_ms_modelled": ms + modelled_latency_ms(tokens, steps),
            }
        )
    return rows


def _extract(extractor: KnowledgeExtractor, events: list[dict]) -> list:
    """The fact candidates the extractor finds in a workflow's events."""
    cands = []
    for e in events:
        cands += extractor.extract(
            Event(e["msg_id"], e["text"], e["speaker"], e["ts"], e["source_type"], e["trust_tier"])
        )
    return cands


def _inventory(
    seed: int, facts: dict[str, FactGraph], canon: Canonicalizer, gen: Generator
) -> dict:
    """The seed's fact counts, merges, entities and extraction recall."""
    inv = sum(1 for i in facts["InKH"].items.values() if i.invalid_at is not None)
    # diagnostic: share of the generator's statements the extractor turned into a fact
    # (ids are compared by their normalised key: the generator's names are its own)
    found = {
        (m, norm(i.subject_id), i.relation, i.value)
        for i in facts["InKH"].items.values()
        for m in i.evidence_ids
    }
    stated = [
        (m, norm(slot[0]), slot[1], v) for m, sts in gen.truth.statements.items() for slot, v in sts
    ]
    recall = sum(1 for x in stated if x in found) / max(1, len(stated))
    return {
        "seed": seed,
        "baseline": "_inventory",
        "facts_inkh": len(facts["InKH"].items),
        "facts_noinv": len(facts["KH-NoInv"].items),
        "invalidated_inkh": inv,
        "merges": len(canon.merge_log),
        "entities": len(canon.entities),
        "extraction_recall": recall,
    }

"""Maintenance tick (Algorithm 3): probe, sweep, link/merge checks, recompute, fix or queue.

One tick samples a probe type with the paper's mix hub/link/quality/stale/merge/split =
30/20/15/15/10/10, always runs the staleness sweep and the confidence/maturity recompute,
and runs the sampled probe's check. Low-risk fixes (deprecating a fact whose effective
confidence fell below epsilon) are applied; high-impact changes (entity merges and splits,
deprecating a proven fact, hubs to review) go to ``<group>/review_queue.jsonl`` for a human.
Every action is appended to ``<group>/maintenance_log.jsonl``.
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import Any

import pyarrow as pa
from rapidfuzz import fuzz

from speakerflow.graphs.facts import FactGraph
from speakerflow.ops.core.base import Context, Operator, OperatorConfig
from speakerflow.ops.core.registry import register
from speakerflow.ops.knowledge.decay import effective_confidence, next_maturity
from speakerflow.ops.knowledge.governance import GovernanceConfig
from speakerflow.ops.knowledge.group_state import KNOWLEDGE, KNOWLEDGE_RECORDS, now_of
from speakerflow.ops.knowledge.load import load_knowledge

PROBES = {"hub": 30, "link": 20, "quality": 15, "stale": 15, "merge": 10, "split": 10}


def sample_probe(rng: random.Random) -> str:
    """One probe type drawn with the mix :data:`PROBES` (hub/link/quality/stale/merge/split =
    30/20/15/15/10/10)."""
    return rng.choices(list(PROBES), weights=list(PROBES.values()))[0]


def discover_links(fg: FactGraph, min_co_mentions: int = 2, top: int = 5) -> list[dict]:
    """Entity pairs named together in at least ``min_co_mentions`` evidence records but joined
    by no fact: suggested links, for review (a link changes what injection reaches)."""
    by_msg: dict[str, set[str]] = defaultdict(set)
    linked: set[frozenset] = set()
    for k in fg.items.values():
        ents = {k.subject_id} | ({k.object_id} if k.object_id in fg.entities else set())
        if len(ents) == 2:
            linked.add(frozenset(ents))
        for m in k.evidence_ids:
            by_msg[m] |= ents
    pairs = Counter(frozenset(p) for ents in by_msg.values() for p in combinations(sorted(ents), 2))
    return [
        {"kind": "link", "entities": sorted(p), "co_mentions": n}
        for p, n in pairs.most_common()
        if n >= min_co_mentions and p not in linked
    ][:top]


def recompute(fg: FactGraph, now: datetime) -> int:
    """Re-run Psi on every valid fact from its reuse, validations and utility; returns changes."""
    changed = 0
    for k in fg.items.values():
        if k.edge_id.startswith("rec_"):
            continue
        mu = next_maturity(
            k.maturity,
            k.reuse_count,
            k.validations,
            k.utility,
            invalidated=k.invalid_at is not None,
        )
        if mu != k.maturity:
            k.maturity = mu
            k.updated_at = now
            fg.touch(k.edge_id)
            changed += 1
    return changed


def apply_review(store, edge_id: str, decision: str, now: datetime | None = None) -> dict:
    """Apply a human review (``approve``/``reject``) to one fact: Psi with h, logged, written to
    Kuzu."""
    if decision not in ("approve", "reject"):
        raise ValueError(f"review decision {decision!r}: use approve or reject")
    now = now or datetime.now(UTC)
    fg, _, _ = load_knowledge(store, with_records=False)
    if edge_id not in fg.items:
        raise KeyError(
            f"no fact {edge_id!r} in group {store.group_id!r}; see review_queue.jsonl or the wiki"
        )
    k = fg.items[edge_id]
    before = k.maturity
    k.maturity = next_maturity(k.maturity, k.reuse_count, k.validations, k.utility, human=decision)
    k.updated_at = now
    fg.touch(edge_id)
    fg.flush()
    entry = {
        "at": now.isoformat(),
        "review": decision,
        "edge_id": edge_id,
        "from": before,
        "to": k.maturity,
    }
    if not store.in_memory:
        with open(Path(store.root) / "maintenance_log.jsonl", "a") as fh:
            fh.write(json.dumps(entry) + "\n")
    return entry


def _stale_sweep(fg, canon, now: datetime, eps: float, queue: list, log: list) -> int:
    """Deprecate the current items whose effective confidence fell below ``eps`` (a proven
    one is queued for review instead); returns how many were deprecated."""
    fixes = 0
    for k in list(fg.items.values()):
        if (
            k.invalid_at is None
            and k.maturity != "deprecated"
            and effective_confidence(k, now, lex=canon.lexicon) < eps
        ):
            if k.maturity == "proven":
                queue.append(
                    {
                        "kind": "deprecate_proven",
                        "edge_id": k.edge_id,
                        "reason": "effective confidence below epsilon",
                    }
                )
            else:
                k.maturity = "deprecated"
                fg.touch(k.edge_id)
                fixes += 1
                log.append({"fix": "deprecated_stale", "edge_id": k.edge_id})
    return fixes


def _probe_findings(probe: str, fg, log: list) -> list[dict[str, Any]]:
    """What the tick's sampled ``probe`` queues for review (hubs, links, merges, splits);
    the quality probe logs unvalidated hearsay instead."""
    found: list[dict[str, Any]] = []
    degree = Counter({e: len(v) for e, v in fg.by_entity.items()})
    if probe == "hub":
        for e, d in degree.most_common(3):
            if d >= 50:
                found.append({"kind": "hub_review", "entity_id": e, "degree": d})
    elif probe == "link":
        found += discover_links(fg)
    elif probe == "merge":
        ents = sorted(fg.entities.values(), key=lambda e: e.entity_id)
        for i, a in enumerate(ents):
            for b in ents[i + 1 :]:
                if a.etype == b.etype and fuzz.ratio(a.name.lower(), b.name.lower()) >= 90:
                    found.append(
                        {
                            "kind": "merge",
                            "keep": a.entity_id,
                            "drop": b.entity_id,
                            "score": fuzz.ratio(a.name.lower(), b.name.lower()),
                        }
                    )
    elif probe == "split":
        for ent in fg.entities.values():
            names = [x.lower() for x in ent.aliases]
            if (
                len(names) > 1
                and min(fuzz.partial_ratio(names[0], n) for n in names) < 30
                and ent.etype != "asset"
            ):
                found.append({"kind": "split", "entity_id": ent.entity_id, "aliases": ent.aliases})
    elif probe == "quality":
        for k in fg.items.values():
            if k.invalid_at is None and k.trust_tier >= 3 and k.validations == 0:
                log.append({"check": "unvalidated_hearsay", "edge_id": k.edge_id})
    return found


def tick(store, now: datetime | None = None, seed: int = 0, pack=None) -> dict:
    """One maintenance tick on a writable group store; returns the report. ``pack``: a domain
    pack to read the group with instead of its own."""
    now = now or datetime.now(UTC)
    rng = random.Random(seed)
    probe = sample_probe(rng)
    fg, canon, _ = load_knowledge(store, with_records=False, pack=pack)
    eps = GovernanceConfig().epsilon
    log: list[dict[str, Any]] = []
    queue: list[dict[str, Any]] = []
    fixes = _stale_sweep(fg, canon, now, eps, queue, log)
    queue += _probe_findings(probe, fg, log)
    changed = recompute(fg, now)
    fg.flush()
    lines: list[dict[str, Any]] = [{"at": now.isoformat(), "probe": probe, **x} for x in log]
    lines.append(
        {
            "at": now.isoformat(),
            "probe": probe,
            "fixes": fixes,
            "queued": len(queue),
            "recomputed": changed,
        }
    )
    if not store.in_memory:
        root = Path(store.root)
        with open(root / "maintenance_log.jsonl", "a") as fh:
            fh.writelines(json.dumps(x, default=str) + "\n" for x in lines)
        with open(root / "review_queue.jsonl", "a") as fh:
            fh.writelines(json.dumps({"at": now.isoformat(), **q}) + "\n" for q in queue)
    return {
        "probe": probe,
        "probes_run": ["stale_sweep", probe, "recompute"],
        "fixes_applied": fixes,
        "queued_for_review": len(queue),
        "review_items": queue,
        "recomputed": changed,
        "log_lines": [json.dumps(x, default=str) for x in lines],
    }


class MaintainConfig(OperatorConfig):
    """``seed``: probe sampling of the first tick; ``ticks``: how many ticks (seeds ``seed``,
    ``seed + 1`` ...); ``at``: the tick time (default ``ctx.clock()``, else now)."""

    seed: int = 0
    ticks: int = 1
    at: datetime | None = None


#: One row per review item a tick queued, or one summary row when it queued none.
MAINTAIN_SCHEMA = pa.schema(
    [
        ("tick", pa.int64()),
        ("probe", pa.string()),
        ("fixes_applied", pa.int64()),
        ("recomputed", pa.int64()),
        ("queued_for_review", pa.int64()),
        ("review_kind", pa.string()),
        ("review_item", pa.string()),
    ]
)


@register
class Maintain(Operator):
    """Any table (a trigger, e.g. the facts a run wrote) -> the maintenance report: ``ticks``
    runs of :func:`tick` on ``ctx.store`` (staleness sweep, one sampled probe, the Psi
    recompute; fixes applied, high-impact changes queued in ``review_queue.jsonl``), one row
    per queued review item (or one summary row). The run's cached knowledge is dropped
    afterwards, so later operators read the maintained graph. Stats: ``fixes``, ``queued``,
    ``recomputed``."""

    name = "maintain"
    consumes = ()
    produces = MAINTAIN_SCHEMA
    Config = MaintainConfig
    config: MaintainConfig

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        if ctx.store is None:
            raise ValueError("Maintain needs ctx.store (a writable group store)")
        now = self.config.at or now_of(ctx)
        rows = []
        for i in range(self.config.ticks):
            rep = tick(ctx.store, now=now, seed=self.config.seed + i)
            base = {
                "tick": i,
                "probe": rep["probe"],
                "fixes_applied": rep["fixes_applied"],
                "recomputed": rep["recomputed"],
                "queued_for_review": rep["queued_for_review"],
            }
            items = rep["review_items"] or [None]
            rows += [
                {
                    **base,
                    "review_kind": q["kind"] if q else None,
                    "review_item": json.dumps(q, default=str) if q else None,
                }
                for q in items
            ]
            self.stats.bump("fixes", rep["fixes_applied"])
            self.stats.bump("queued", rep["queued_for_review"])
            self.stats.bump("recomputed", rep["recomputed"])
        for key in (KNOWLEDGE, KNOWLEDGE_RECORDS):
            ctx.state.pop(key, None)
        return pa.Table.from_pylist(rows, schema=MAINTAIN_SCHEMA)

"""A domain pack on an event stream with probes (issue 27): what the injected contexts hold.

The stream is ingested into a temporary group with the pack recorded, the entity path runs
over it (``build_entity_graph``: extraction, upsert, invalidation, as ``speakerflow maintain``
does), and each probe's request is injected *as of* the probe's time for its user (what
``speakerflow inject GROUP --event '{"content", "ts"}' --user U`` prints). A probe lists the
facts a good context must contain (``expect``), older values that must not be presented as
current (``stale``) and unverified claims that must not be used (``rumour``), with the events
that state each expected fact (``evidence``). Facts are compared by their normalised entity,
relation and value (``norm``: "checkout-api" and ``service:checkoutapi`` are one entity).

Figures: ``hit_rate`` (expected facts found / expected, over all probes), ``stale_rate``
(stale values presented / stale listed), ``rumour_leakage`` (rumours presented / listed),
``traceability`` (context lines whose every cited id is an event of the stream), ``evidence``
(found facts citing one of the probe's evidence events), ``intent_accuracy``; per probe and
per intent, with the misses for reading (dev streams only).
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from speakerflow.graphs import Home
from speakerflow.ops.inject import InjectConfig, PassiveInjector
from speakerflow.ops.knowledge.domain.load import load_pack, record_pack
from speakerflow.ops.knowledge.lexicon import norm
from speakerflow.ops.knowledge.load import load_knowledge
from speakerflow.ops.loaders import load
from speakerflow.pipelines.entity_path import build_entity_graph


def _key(entity: str, relation: str, value: str) -> tuple[str, str, str]:
    """A fact as compared: entity and value without type prefix, normalised."""
    return (norm(entity.split(":", 1)[-1]), relation, norm(value.split(":", 1)[-1]))


def _ts(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


def run(
    pack: str,
    events: str | Path,
    probes: str | Path,
    budget: int = 600,
    out: str | Path | None = None,
) -> dict[str, Any]:
    """Score ``pack`` on the ``events`` stream and its ``probes`` (JSONL files)."""
    domain = load_pack(pack)
    rows = [json.loads(x) for x in Path(probes).read_text().splitlines() if x.strip()]
    stream = {json.loads(x)["event_id"] for x in Path(events).read_text().splitlines() if x}
    with tempfile.TemporaryDirectory(prefix="domain-probes-") as tmp:
        home = Home(tmp)
        groups = []
        for gid, table in load(str(events), "events"):
            with home.open(gid, writable=True) as store:
                store.append_messages(table)
                record_pack(store, domain)
                build = build_entity_graph(store)
            groups.append(gid)
        with home.open(groups[0], writable=False) as store:
            fg, canon, det = load_knowledge(store)
            inj = PassiveInjector(
                fg, canon, det, config=InjectConfig(budget=budget, record_use=False)
            )
            per_probe = [_score(inj, fg, p, stream) for p in rows]
    report = _totals(per_probe)
    report.update(pack=domain.name, events=len(stream), probes=len(rows), entity_path=build)
    if out is not None:
        Path(out).write_text(json.dumps(report, indent=1, default=str))
    return report


def _score(inj: PassiveInjector, fg, probe: dict, stream: set[str]) -> dict[str, Any]:
    wc = inj.inject(probe["request"], _ts(probe["ts"]), probe.get("user"))
    shown: dict[tuple[str, str, str], list[str]] = {}
    lines = [ln for ln in wc.lines if ln.kind == "knowledge"]
    for ln in lines:
        for eid in ln.edge_ids:
            k = fg.items.get(eid)
            if k is not None:
                shown[_key(k.subject_id, k.relation, k.value)] = list(k.evidence_ids)
    expect = [_key(f["entity"], f["relation"], f["value"]) for f in probe["expect"]]
    stale = [_key(f["entity"], f["relation"], f["value"]) for f in probe.get("stale", [])]
    rumour = [_key(f["entity"], f["relation"], f["value"]) for f in probe.get("rumour", [])]
    hits = [f for f in expect if f in shown]
    evidence = set(probe.get("evidence", []))
    return {
        "probe_id": probe["probe_id"],
        "intent": probe.get("intent"),
        "read_as": wc.detection.intent,
        "expected": len(expect),
        "hits": len(hits),
        "missed": [" ".join(f) for f in expect if f not in shown],
        "stale": len(stale),
        "stale_shown": sum(f in shown for f in stale),
        "rumour": len(rumour),
        "rumour_shown": sum(f in shown for f in rumour),
        "lines": len(lines),
        "traced": sum(bool(ln.evidence_ids) and set(ln.evidence_ids) <= stream for ln in lines),
        "evidenced": sum(bool(set(shown[f]) & evidence) for f in hits),
        "hits_with_evidence": len(hits) if evidence else 0,
        "tokens": wc.tokens,
    }


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def _totals(per: list[dict]) -> dict[str, Any]:
    def sums(rows: list[dict]) -> dict[str, Any]:
        names = ["expected", "hits", "stale", "stale_shown", "rumour", "rumour_shown", "lines"]
        names += ["traced", "evidenced", "hits_with_evidence", "tokens"]
        t = {k: sum(r[k] for r in rows) for k in names}
        return {
            "probes": len(rows),
            "hit_rate": _rate(t["hits"], t["expected"]),
            "stale_rate": _rate(t["stale_shown"], t["stale"]),
            "rumour_leakage": _rate(t["rumour_shown"], t["rumour"]),
            "traceability": _rate(t["traced"], t["lines"]),
            "evidence": _rate(t["evidenced"], t["hits_with_evidence"]),
            "intent_accuracy": _rate(sum(r["read_as"] == r["intent"] for r in rows), len(rows)),
            "tokens_mean": round(t["tokens"] / len(rows), 1) if rows else None,
            **t,
        }

    by_intent: dict[str, list[dict]] = defaultdict(list)
    for r in per:
        by_intent[r["intent"] or "-"].append(r)
    return {
        **sums(per),
        "by_intent": {k: sums(v) for k, v in sorted(by_intent.items())},
        "per_probe": per,
    }

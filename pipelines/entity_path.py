"""The entity path of a group: Detect -> Canonicalize -> extract -> upsert -> invalidate.

:func:`build_entity_graph` reads the group's System 1 rows (messages and events) that no
earlier run processed, extracts candidate facts, upserts them with slot-scoped write-time
invalidation into the group's Kuzu graph, and appends alias merges to
``<group>/merge_log.jsonl``. Reruns are idempotent (processed ids are kept in
``<group>/entity_path.json``).
"""
from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from speakerflow.ops.extract_knowledge import Event, KnowledgeExtractor
from speakerflow.ops.invalidate import UpsertConfig, upsert
from speakerflow.ops.knowledge import load_knowledge as load_knowledge  # moved to ops; re-exported


def _backend(backend):
    if backend == "rules" or not isinstance(backend, str):
        return backend
    from speakerflow.ops.backends.factory import make_backend  # helper B's factory

    return make_backend(backend)


def build_entity_graph(store, backend="rules", invalidation: bool = True) -> dict:
    """Extract knowledge from the group's unprocessed rows into its graph; returns counts.

    Parameters
    ----------
    store
        A writable :class:`~speakerflow.graphs.GroupStore`.
    backend
        ``"rules"``, a backend kind for ``make_backend`` or a ChatBackend instance.
    invalidation
        Write-time invalidation (False reproduces the KH-NoInv ablation).
    """
    fg, canon, det = load_knowledge(store, with_records=False)
    state_path = None if store.in_memory else Path(store.root) / "entity_path.json"
    done = set(json.loads(state_path.read_text())["processed"]) if state_path and state_path.exists() else set()
    ex = KnowledgeExtractor(canon, det, _backend(backend))
    cfg = UpsertConfig(invalidation=invalidation)
    totals = {"events": 0, "candidates": 0, "added": 0, "validated": 0, "invalidated": 0, "kept_conflicts": 0}
    now = datetime.now(UTC)
    msgs = store.messages()
    cols = ["msg_id", "text", "speaker", "ts", "source_type", "trust_tier", "reply_to"]
    rows = sorted(msgs.select(cols).to_pylist(), key=lambda r: r["ts"])  # the reader keeps discourse state: time order
    speaker_of = {r["msg_id"]: r["speaker"] for r in rows}
    for r in rows:
        if r["msg_id"] in done:
            continue
        ev = Event(r["msg_id"], r["text"] or "", r["speaker"], r["ts"], r["source_type"] or "message", r["trust_tier"] or 1,
                   addressee=speaker_of.get(r["reply_to"]) if r["reply_to"] else None)
        cands = ex.extract(ev)
        res = upsert(fg, cands, now, cfg)
        totals["events"] += 1
        totals["candidates"] += len(cands)
        for k, v in res.as_dict().items():
            totals[k] += v
        done.add(r["msg_id"])
    fg.put_entities(canon.to_records())
    totals["writes"] = fg.pending()
    fg.flush()
    totals.update(entities=len(fg.entities), facts=len(fg.items), merges=len(canon.merge_log),
                  rejects=len(ex.rejects), model_calls=ex.model_calls, tokens=ex.tokens)
    if state_path is not None:
        with open(Path(store.root) / "merge_log.jsonl", "a") as fh:
            for m in canon.merge_log:
                fh.write(json.dumps(m) + "\n")
        state_path.write_text(json.dumps({"processed": sorted(done)}))
    return totals

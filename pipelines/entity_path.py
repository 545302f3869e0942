"""The entity path of a group: ``ExtractKnowledge >> Invalidate >> Decay`` over its new rows.

:func:`build_entity_graph` reads the group's System 1 rows (messages and events) that no
earlier run processed, in time order, and runs :func:`entity_pipeline` over them: the
operators extract candidate facts (``ExtractKnowledge``), upsert them with slot-scoped
write-time invalidation into the group's Kuzu graph and append alias merges to
``<group>/merge_log.jsonl`` (``Invalidate``), and take each written fact's effective
confidence and maturity (``Decay``, read-only). Reruns are idempotent (processed ids are
kept in ``<group>/entity_path.json``).

:func:`maintain_group` is what ``speakerflow maintain``, ``Memory.maintain`` and the server's
``/maintain`` run: the entity path, then one maintenance tick.

A user composes the same stages with the annotating ones in front,
``Detect() >> Canonicalize() >> ExtractKnowledge() >> Invalidate() >> Decay()``, and gets the
same graph (``tests/integration/test_inkh_operators.py``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from speakerflow.ops.core import Pipeline
from speakerflow.ops.core.base import Context
from speakerflow.ops.knowledge.decay import Decay
from speakerflow.ops.knowledge.extract_knowledge import ExtractKnowledge
from speakerflow.ops.knowledge.group_state import KNOWLEDGE
from speakerflow.ops.knowledge.invalidate import Invalidate
from speakerflow.ops.knowledge.load import (
    load_knowledge as load_knowledge,  # moved to ops; re-exported
)

#: The message columns the entity path reads (``addressee`` is derived from ``reply_to``).
EVENT_COLUMNS = ["msg_id", "text", "speaker", "ts", "source_type", "trust_tier", "reply_to"]


def _backend(backend: Any) -> Any:
    if backend == "rules" or not isinstance(backend, str):
        return backend
    from speakerflow.ops.backends.factory import make_backend  # helper B's factory

    return make_backend(backend)


def entity_pipeline(invalidation: bool = True) -> Pipeline:
    """``ExtractKnowledge >> Invalidate >> Decay``: the operators of the entity path."""
    return ExtractKnowledge() >> Invalidate(invalidation=invalidation) >> Decay()


def new_events(store: Any, done: set[str] | frozenset[str] = frozenset()) -> pa.Table:
    """The group's rows not in ``done``, in time order, with the ``addressee`` of each reply
    (the speaker of the message it replies to, found among all the group's messages)."""
    msgs = store.messages().select(EVENT_COLUMNS)
    msgs = msgs.take(pc.sort_indices(msgs, [("ts", "ascending")]))  # stable: ties keep their order
    speaker_of = dict(zip(msgs["msg_id"].to_pylist(), msgs["speaker"].to_pylist(), strict=True))
    addressee = [speaker_of.get(r) if r else None for r in msgs["reply_to"].to_pylist()]
    msgs = msgs.append_column("addressee", pa.array(addressee, pa.string()))
    if done:
        keep = pa.array([m not in done for m in msgs["msg_id"].to_pylist()], pa.bool_())
        msgs = msgs.filter(keep)
    return msgs


def _processed(store: Any) -> tuple[Path | None, set[str]]:
    """The group's entity-path state file (None in memory) and the row ids it processed."""
    state_path = None if store.in_memory else Path(store.root) / "entity_path.json"
    if state_path is None or not state_path.exists():
        return state_path, set()
    return state_path, set(json.loads(state_path.read_text())["processed"])


def pending_events(store: Any) -> int:
    """How many of the group's rows the entity path has not processed yet."""
    return new_events(store, _processed(store)[1]).num_rows


def build_entity_graph(
    store: Any,
    backend: Any = "rules",
    invalidation: bool = True,
    now: datetime | None = None,
    pack: Any = None,
) -> dict[str, Any]:
    """Extract knowledge from the group's unprocessed rows into its graph; returns counts.

    Parameters
    ----------
    store
        A writable :class:`~speakerflow.graphs.GroupStore`.
    backend
        ``"rules"``, a backend kind for ``make_backend`` or a ChatBackend instance.
    invalidation
        Write-time invalidation (False reproduces the KH-NoInv ablation).
    now
        The write time of new facts (default: the wall clock).
    pack
        A :class:`~speakerflow.ops.knowledge.domain.schema.DomainPack` to read the rows with
        instead of the group's own (recorded at ingest) or the default one.
    """
    knowledge = load_knowledge(store, with_records=False, pack=pack)
    fg, canon, _ = knowledge
    state_path, done = _processed(store)
    when = now or datetime.now(UTC)
    ctx = Context(
        store=store,
        backends={"extract": _backend(backend)},
        clock=lambda: when,
        state={KNOWLEDGE: knowledge, "canonicalizer": canon},
    )
    events = new_events(store, done)
    pipe = entity_pipeline(invalidation)
    if (
        state_path is not None
    ):  # committed with the facts: a kill cannot separate them (graphs/facts.py)
        fg.commit_state = (
            state_path.name,
            {"processed": sorted(done | set(events["msg_id"].to_pylist()))},
        )
    pipe(events, ctx)
    ex, inv = pipe.steps[0].stats, pipe.steps[1].stats
    totals: dict[str, Any] = {"events": events.num_rows, "candidates": ex.rows_out}
    totals.update(
        {
            k: int(inv.extra.get(k, 0))
            for k in ("added", "validated", "invalidated", "kept_conflicts")
        }
    )
    totals["writes"] = int(inv.extra.get("writes", 0))
    totals.update(
        entities=len(fg.entities),
        facts=len(fg.items),
        merges=len(canon.merge_log),
        rejects=ex.rejects,
        model_calls=ex.model_calls,
        tokens=ex.tokens,
    )
    if state_path is not None:
        state_path.write_text(
            json.dumps({"processed": sorted(done | set(events["msg_id"].to_pylist()))})
        )
    return totals


def maintain_group(
    store: Any,
    backend: Any = "rules",
    now: datetime | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """The entity path over the group's new rows (:func:`build_entity_graph`; its facts are
    written at the wall clock), then one maintenance tick at ``now`` (default: the clock):
    ``{"entity_path": counts, "tick": the tick's report}``. ``store``: a writable store."""
    from speakerflow.ops.knowledge.maintenance import tick

    return {
        "entity_path": build_entity_graph(store, backend=backend),
        "tick": tick(store, now=now, seed=seed),
    }

"""Passive injection as operators over Arrow tables: ``Inject`` (events -> working contexts)
and its steps ``Retrieve >> Score >> Compress >> TopB >> Fuse``, composable on their own.

The steps run :class:`~speakerflow.ops.inject.pipeline.PassiveInjector`'s stages (Algorithm 1)
with its own request reader, governance, utility scorer, ``compress``, ``top_b`` and ``fuse``;
``Inject`` chains them and gives each event the same context as ``PassiveInjector.inject``
(asserted by ``tests/integration/test_inject_operators.py``). A user may put their own step
in between, e.g. a ``Lambda`` that drops lines from a source they distrust before ``TopB``.

Tables between the steps (one run shares ``ctx.state["inject"]``, the injector and the parsed
request of every event, so later steps find the fact objects behind ``edge_id``):

* ``Retrieve``: events (``text``, ``ts``, optional ``user``) -> one row per candidate fact
  (``event``: the event's row number, ``pos``, ``edge_id``), after the h-hop neighbourhood,
  the removal of invalidated facts and the rumour rule;
* ``Score``: candidates -> the admitted ones (governance Allow, utility >= ``min_utility``)
  with ``utility``, best first per event;
* ``Compress``: scored -> one cited line per slot and value (:data:`LINE_SCHEMA`);
* ``TopB``: lines -> the best lines that fit the budget left after the header;
* ``Fuse``: lines -> one working context per event (header + lines), every event included.

The knowledge read is the group's (``ctx.store``), with SpeakerMem record heads, loaded once
per run (:func:`~speakerflow.ops.knowledge.group_state.knowledge_of`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from speakerflow.graphs.facts import FactItem
from speakerflow.ops.core.base import Context, Operator, OperatorConfig, put_columns
from speakerflow.ops.core.registry import register
from speakerflow.ops.inject.compress import ContextLine, compress
from speakerflow.ops.inject.fuse import fuse
from speakerflow.ops.inject.pipeline import InjectConfig, PassiveInjector
from speakerflow.ops.inject.topb import top_b
from speakerflow.ops.knowledge.detect import Detection
from speakerflow.ops.knowledge.group_state import knowledge_of

STATE_KEY = "inject"
TS = pa.timestamp("us", tz="UTC")
CANDIDATE_SCHEMA = pa.schema([("event", pa.int64()), ("pos", pa.int64()), ("edge_id", pa.string())])
SCORED_SCHEMA = CANDIDATE_SCHEMA.append(pa.field("utility", pa.float64()))
#: One line of a working context (a :class:`~speakerflow.ops.inject.compress.ContextLine`) of event
#: ``event``.
LINE_SCHEMA = pa.schema(
    [
        ("event", pa.int64()),
        ("text", pa.string()),
        ("kind", pa.string()),
        ("tokens", pa.int64()),
        ("utility", pa.float64()),
        ("evidence_ids", pa.list_(pa.string())),
        ("edge_ids", pa.list_(pa.string())),
        ("maturity", pa.string()),
        ("valid_at", TS),
        ("invalid_at", TS),
    ]
)
#: What ``Fuse`` (and ``Inject``) give each event.
CONTEXT_SCHEMA = pa.schema(
    [
        ("event", pa.int64()),
        ("context", pa.string()),
        ("context_tokens", pa.int64()),
        ("intent", pa.string()),
        ("risk", pa.string()),
        ("entities", pa.list_(pa.string())),
        ("evidence_ids", pa.list_(pa.string())),
        ("edge_ids", pa.list_(pa.string())),
        ("knowledge_lines", pa.int64()),
    ]
)


class InjectOpConfig(OperatorConfig):
    """:class:`~speakerflow.ops.inject.pipeline.InjectConfig`'s fields, and ``user``: the asker
    when the events have no ``user`` column. ``record_use`` is off by default here (a
    pipeline reads; the online path counts reuse)."""

    budget: int = 600
    hops: int = 2
    pool: int = 300
    max_items: int = 16
    remove_invalidated: bool = True
    govern: bool = True
    record_use: bool = False
    user: str | None = None

    def inject_config(self) -> InjectConfig:
        return InjectConfig(**self.model_dump(exclude={"user"}))


@dataclass
class Request:
    """One event as the injector read it, and what each step left for the next."""

    text: str
    now: datetime
    user: str | None
    det: Detection
    ents: list[str]
    pool: list[FactItem] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class InjectRun:
    """``ctx.state["inject"]``: the injector of the run and its parsed events."""

    injector: PassiveInjector
    requests: list[Request] = field(default_factory=list)


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def inject_run(ctx: Context, config: InjectOpConfig | None = None) -> InjectRun:
    """The run's :class:`InjectRun` (made on first use, from the group's knowledge with records)."""
    run = ctx.state.get(STATE_KEY)
    if run is None:
        fg, canon, det = knowledge_of(ctx, with_records=True)
        cfg = (config or InjectOpConfig()).inject_config()
        run = ctx.state[STATE_KEY] = InjectRun(PassiveInjector(fg, canon, det, config=cfg))
    return run


def _lines_table(per_event: list[tuple[int, list[ContextLine]]]) -> pa.Table:
    rows = [
        {
            "event": ev,
            "text": ln.text,
            "kind": ln.kind,
            "tokens": ln.tokens,
            "utility": ln.utility,
            "evidence_ids": list(ln.evidence_ids),
            "edge_ids": list(ln.edge_ids),
            "maturity": ln.maturity,
            "valid_at": ln.valid_at,
            "invalid_at": ln.invalid_at,
        }
        for ev, lines in per_event
        for ln in lines
    ]
    return pa.Table.from_pylist(rows, schema=LINE_SCHEMA)


def _lines_by_event(table: pa.Table) -> dict[int, list[ContextLine]]:
    out: dict[int, list[ContextLine]] = {}
    for r in table.select(LINE_SCHEMA.names).to_pylist():
        out.setdefault(r["event"], []).append(
            ContextLine(
                r["text"],
                list(r["evidence_ids"] or []),
                r["kind"],
                list(r["edge_ids"] or []),
                r["maturity"],
                r["valid_at"],
                r["invalid_at"],
                r["utility"],
                r["tokens"],
            )
        )
    return out


@register
class Retrieve(Operator):
    """Events -> candidate facts: the request read (entities, intent, risk), the h-hop
    neighbourhood of its entities and asker, invalidated facts removed (as of the event's
    time) and rumours dropped beside first-hand facts of their slot. Stats: ``neighbourhood``,
    ``valid`` (candidates summed over events)."""

    name = "retrieve"
    consumes = ("text", "ts")
    produces = CANDIDATE_SCHEMA
    Config = InjectOpConfig
    config: InjectOpConfig

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        run = inject_run(ctx, self.config)
        inj, facts = run.injector, run.injector.facts
        cfg = inj.config
        users = (
            table["user"].to_pylist()
            if "user" in table.column_names
            else [self.config.user] * table.num_rows
        )
        rows: list[dict[str, Any]] = []
        for text, ts, user in zip(
            table["text"].to_pylist(), table["ts"].to_pylist(), users, strict=True
        ):
            now = _aware(ts)
            det, ents = inj.read_request(text or "")
            req = Request(text or "", now, user, det, ents)
            seeds = ents + ([f"person:{user}"] if user else [])
            pool = facts.neighbourhood(seeds, cfg.hops, cfg.pool, at=now)
            req.counts["neighbourhood"] = len(pool)
            current = facts.horizon is None or now >= facts.horizon
            if cfg.remove_invalidated:
                if current:
                    pool = [k for k in pool if k.invalid_at is None or k.invalid_at > now]
                else:
                    pool = [v for k in pool if (v := facts.as_of(k, now)) is not None]
            elif not current:
                pool = [k for k in pool if facts.known_span(k)[0] <= now]
            if facts.rumours:
                key = run.injector.lex.slot_key  # a rumour never beside first-hand knowledge
                firsthand = {key(k) for k in pool if k.trust_tier < 3}
                pool = [k for k in pool if k.trust_tier < 3 or key(k) not in firsthand]
            req.counts["valid"] = len(pool)
            req.pool = pool
            event = len(run.requests)
            run.requests.append(req)
            rows += [{"event": event, "pos": i, "edge_id": k.edge_id} for i, k in enumerate(pool)]
            self.stats.bump("neighbourhood", req.counts["neighbourhood"])
            self.stats.bump("valid", len(pool))
        return pa.Table.from_pylist(rows, schema=CANDIDATE_SCHEMA)


@register
class Score(Operator):
    """Candidates -> the admitted ones with their ``utility``, best first within each event:
    governance Allow (effective confidence, maturity for the risk class, the asker's scope
    overlay) then the utility s_t (:class:`~speakerflow.ops.inject.utility.UtilityScorer`) at
    or above ``min_utility``. Stats: ``admitted``, ``refused_<reason>``."""

    name = "score"
    consumes = ("event", "pos", "edge_id")
    produces = SCORED_SCHEMA

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        run = inject_run(ctx)
        inj = run.injector
        gov = inj.governance
        refused_before = dict(gov.refused)
        by_event: dict[int, list[int]] = {}
        for ev, pos in zip(table["event"].to_pylist(), table["pos"].to_pylist(), strict=True):
            by_event.setdefault(ev, []).append(pos)
        rows: list[dict[str, Any]] = []
        for ev, positions in by_event.items():
            req = run.requests[ev]
            det, user, now = req.det, req.user, req.now
            scored = [
                (u, positions[i])
                for u, i in inj.score(
                    [req.pool[p] for p in positions], req.text, det, req.ents, user, now
                )
            ]
            req.counts["admitted"] = len(scored)
            rows += [
                {"event": ev, "pos": pos, "edge_id": req.pool[pos].edge_id, "utility": u}
                for u, pos in scored
            ]
        self.stats.bump("admitted", len(rows))
        for reason, n in gov.refused.items():
            self.stats.bump(f"refused_{reason}", n - refused_before.get(reason, 0))
        return pa.Table.from_pylist(rows, schema=SCORED_SCHEMA)


@register
class Compress(Operator):
    """Scored facts -> one short cited line per slot and value (items of the same slot and
    value merged, evidence unioned), best first, at most ``max_items + 4`` lines per event."""

    name = "compress"
    consumes = ("event", "pos", "utility")
    produces = LINE_SCHEMA

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        run = inject_run(ctx)
        inj = run.injector
        by_event: dict[int, list[tuple[float, FactItem]]] = {}
        for ev, pos, u in zip(
            table["event"].to_pylist(),
            table["pos"].to_pylist(),
            table["utility"].to_pylist(),
            strict=True,
        ):
            by_event.setdefault(ev, []).append((u, run.requests[ev].pool[pos]))
        return _lines_table(
            [
                (ev, compress(scored, inj.facts.entities, limit=inj.config.max_items + 4))
                for ev, scored in by_event.items()
            ]
        )


@register
class TopB(Operator):
    """Lines -> the highest-utility lines whose tokens fit the budget left after the event's
    header line (greedy by utility, then skip-fit), at most ``max_items`` per event."""

    name = "topb"
    consumes = ("event", "text", "tokens", "utility")
    produces = LINE_SCHEMA

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        run = inject_run(ctx)
        cfg = run.injector.config
        out = []
        for ev, lines in _lines_by_event(table).items():
            head = _header(run, run.requests[ev])
            left = cfg.budget - (head.tokens if head.tokens <= cfg.budget else 0)
            out.append((ev, top_b(lines, left, cfg.max_items)))
        return _lines_table(out)


def _header(run: InjectRun, req: Request) -> ContextLine:
    return run.injector.header(req.user, req.det, req.ents, req.now)


@register
class Fuse(Operator):
    """Lines -> one working context per event of the run (events without lines too): the
    header (asker, intent, risk, entities, market state) and the lines, within the budget.
    With ``record_use`` (the Retrieve step's config) the injected facts' reuse is counted."""

    name = "fuse"
    consumes = ("event", "text", "tokens", "utility")
    produces = CONTEXT_SCHEMA

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        run = inject_run(ctx)
        inj = run.injector
        cfg = inj.config
        by_event = _lines_by_event(table)
        rows: list[dict[str, Any]] = []
        for ev, req in enumerate(run.requests):
            lines = fuse(_header(run, req), [], by_event.get(ev, []), cfg.budget, cfg.max_items)
            if cfg.record_use:
                inj._record_use(lines)
            knowledge = [ln for ln in lines if ln.kind == "knowledge"]
            req.counts["injected"] = len(knowledge)
            rows.append(
                {
                    "event": ev,
                    "context": "\n".join(ln.text for ln in lines),
                    "context_tokens": sum(ln.tokens for ln in lines),
                    "intent": req.det.intent,
                    "risk": req.det.risk,
                    "entities": list(req.ents),
                    "evidence_ids": list(dict.fromkeys(e for ln in lines for e in ln.evidence_ids)),
                    "edge_ids": [e for ln in knowledge for e in ln.edge_ids],
                    "knowledge_lines": len(knowledge),
                }
            )
        self.stats.bump("injected", sum(r["knowledge_lines"] for r in rows))
        return pa.Table.from_pylist(rows, schema=CONTEXT_SCHEMA)


def inject_steps(config: InjectOpConfig | dict[str, Any] | None = None) -> list[Operator]:
    """``[Retrieve, Score, Compress, TopB, Fuse]``: the steps of :class:`Inject`, to compose."""
    return [Retrieve(config), Score(), Compress(), TopB(), Fuse()]


@register
class Inject(Operator):
    """Events -> the same rows plus their working context (passive injection, Algorithm 1):
    ``Retrieve >> Score >> Compress >> TopB >> Fuse`` in one operator. An event's asker is its
    ``user`` column, else ``config.user``; its time ``ts`` (the world as of then). The inner
    steps' counters appear as ``<step>/<stat>``."""

    name = "inject"
    consumes = ("text", "ts")
    produces = pa.schema([f for f in CONTEXT_SCHEMA if f.name != "event"])
    passthrough = True
    Config = InjectOpConfig
    config: InjectOpConfig

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        sub = Context(
            store=ctx.store,
            backends=ctx.backends,
            clock=ctx.clock,
            state={k: v for k, v in ctx.state.items() if k != STATE_KEY},
        )
        out = table
        for step in (steps := inject_steps(self.config)):
            out = step(out, sub)
        for k, v in sub.state.items():  # share the loaded knowledge with later operators of the run
            if k != STATE_KEY:
                ctx.state.setdefault(k, v)
        for step in steps:
            for stat, v in step.stats.as_metadata().items():
                if stat not in ("calls", "rows_in", "rows_out") and (v or stat in step.stats.extra):
                    self.stats.bump(f"{step.op_name}/{stat}", v)
        ctx_rows = sorted(out.to_pylist(), key=lambda r: r["event"])
        cols = {name: [r[name] for r in ctx_rows] for name in self.produces.names}
        return put_columns(table, cols, self.produces)

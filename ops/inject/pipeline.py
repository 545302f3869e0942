"""The passive-injection pipeline (Algorithm 1) over an in-memory :class:`FactGraph` cache.

Per event: Detect -> Canonicalize -> h-hop neighbourhood (cache built from Kuzu once) ->
remove invalidated (skipped for KH-NoInv) -> governance (risk class, user overlay) ->
utility -> Compress -> TopB under the budget -> Fuse. Nothing here touches Kuzu, so the
per-event cost is dict lookups plus scoring at most ``pool`` candidates.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from speakerflow.graphs.facts import FactGraph
from speakerflow.graphs.text_index import query_terms
from speakerflow.ops.inject.compress import ContextLine, compress
from speakerflow.ops.inject.fuse import fuse, header
from speakerflow.ops.inject.utility import UtilityScorer
from speakerflow.ops.knowledge.canonicalize import Canonicalizer
from speakerflow.ops.knowledge.decay import effective_confidence, time_decay
from speakerflow.ops.knowledge.detect import Detection, Detector
from speakerflow.ops.knowledge.domain.schema import OTHER
from speakerflow.ops.knowledge.governance import Governance
from speakerflow.ops.knowledge.reader import INTENT_THRESHOLD, intent_classifier, mask


class InjectConfig(BaseModel):
    """``budget``: tokens of the whole working context; ``hops``: neighbourhood radius (1-2);
    ``pool``: structural candidate pool; ``max_items``: knowledge lines at most;
    ``remove_invalidated``: False only for the KH-NoInv ablation; ``record_use``: count reuse."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    budget: int = 600
    hops: int = 2
    pool: int = 300
    max_items: int = 16
    remove_invalidated: bool = True
    govern: bool = True
    record_use: bool = True


@dataclass
class WorkingContext:
    """The context C_t: its lines, token count, what Detect saw and per-stage counts."""

    lines: list[ContextLine]
    tokens: int
    detection: Detection
    entities: list[str]
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)

    def as_dict(self) -> dict:
        return {
            "tokens": self.tokens,
            "intent": self.detection.intent,
            "risk": self.detection.risk,
            "entities": self.entities,
            "counts": self.counts,
            "ms": round(self.seconds * 1000, 3),
            "lines": [
                {
                    "text": ln.text,
                    "kind": ln.kind,
                    "evidence_ids": ln.evidence_ids,
                    "maturity": ln.maturity,
                    "valid_at": ln.valid_at,
                    "invalid_at": ln.invalid_at,
                    "utility": round(ln.utility, 4),
                    "edge_ids": ln.edge_ids,
                }
                for ln in self.lines
            ],
        }


class PassiveInjector:
    """Build working contexts from one group's cached graph."""

    def __init__(
        self,
        facts: FactGraph,
        canon: Canonicalizer,
        detector: Detector | None = None,
        governance: Governance | None = None,
        utility: UtilityScorer | None = None,
        config: InjectConfig | None = None,
        intents="default",
    ):
        self.facts = facts
        self.canon = canon
        self.detector = detector or Detector(canon.lexicon, canon.alias_table)
        #: the domain pack: task families, relations, the asker's own (private) relations
        self.lex = lex = self.detector.lexicon
        self.governance = governance or Governance()
        self.utility = utility or UtilityScorer(lex=lex)
        self.config = config or InjectConfig()
        #: nearest-prototype intent classifier for requests no cue word decides (None: cue words
        #: only)
        self.intents = intent_classifier(lex=lex) if intents == "default" else intents

    def warm(self) -> float:
        """Load the intent classifier now (MiniLM and its exemplar vectors), so that the first
        request no cue word decides does not pay the model load; seconds spent (0 if warm or
        no classifier). A server calls this at start; one-shot ``inject`` may skip it."""
        if self.intents is None:
            return 0.0
        t0 = time.perf_counter()
        self.intents.best("warm up", None)
        return time.perf_counter() - t0

    def read_request(self, text: str) -> tuple[Detection, list[str]]:
        """Detect the request (entities resolved, in order); when no cue word gives its intent, the
        nearest intent description does (MiniLM, memoised per masked text: a repeated request
        shape costs one dictionary lookup)."""
        det = self.detector.detect(text)
        ents = []
        for m in det.mentions:
            eid = self.canon.resolve(m) if m.entity_id is None else m.entity_id
            if eid and eid not in ents:
                ents.append(eid)
        lex = self.lex
        det.cued = det.intent != OTHER
        types = {e.split(":", 1)[0] for e in ents}
        allowed = tuple(k for k, need in lex.intent_subjects.items() if types & set(need))
        if det.cued and allowed and det.intent not in allowed:
            # the cue word contradicts what the request names (a copy cue naming only a coin):
            # the classifier decides among the families the named entity types allow
            det.cued = False
            self._classify(det, text, allowed, keep=True)
        elif (
            not det.cued and det.aspects
        ):  # a question about one relation: the family its kind belongs to
            kinds = {k for r in lex.relations if r.name in det.aspects for k in r.kind}
            for intent, answers, unless in lex.answers:
                if kinds and kinds <= answers and not types & unless:
                    det.intent = intent
                    break
            det.risk = "high" if det.risk == "high" else lex.base_risk.get(det.intent, det.risk)
        if det.intent == OTHER and not det.cued:
            # nearest exemplars among the families the named entity types allow; naming
            # nothing, any family or none ("other": chatter, "thanks")
            self._classify(det, text, allowed if ents else (*lex.intent_subjects, OTHER))
        # what a request of the family is about without naming it (a deploy: production)
        ents += [e for e in lex.intent_concerns.get(det.intent, ()) if e not in ents]
        return det, ents

    def _classify(
        self, det: Detection, text: str, labels: tuple[str, ...], keep: bool = False
    ) -> None:
        """Set ``det.intent`` to the nearest intent among ``labels`` (at or above the threshold);
        ``keep``: leave the intent as it is when nothing reaches the threshold."""
        if self.intents is None or not labels:
            return
        spans = [(m.start, m.end, m.etype) for m in det.mentions if not m.fuzzy]
        label, sim = self.intents.best(mask(text, spans, self.lex), labels)
        if label is not None and sim >= INTENT_THRESHOLD:
            det.intent = label
        elif not keep:
            return
        if det.intent in self.lex.base_risk:
            det.risk = "high" if det.risk == "high" else self.lex.base_risk[det.intent]

    def request_needs(
        self, det: Detection, ents: list[str], user: str | None
    ) -> set[tuple[str, str]]:
        """The (subject, relation) pairs this injector treats as asked for: the relations the
        request names or its intent needs, for the named entities of the right type; the asker's
        own constraints for an action; every relation of a named entity when nothing else is asked."""  # noqa: E501
        etype = {
            e: (self.canon.entities[e].etype if e in self.canon.entities else e.split(":", 1)[0])
            for e in ents
        }
        lex = self.lex
        wanted = set(det.aspects) | set(self.utility.profile.get(det.intent, ()))
        out = {
            (e, r.name)
            for e in ents
            for r in lex.relations
            if r.name in wanted and r.subject == etype[e]
        }
        if not getattr(det, "cued", True) and not det.aspects:
            out |= {(e, r.name) for e in ents for r in lex.relations if r.subject == etype[e]}
        if user and det.intent in lex.acts_for_user:
            out |= {(f"person:{user}", r) for r in lex.owner_constraints}
        elif user:
            out |= {(f"person:{user}", r) for r in det.aspects if r in lex.owner_constraints}
        return out

    def inject(
        self, text: str, now: datetime, user: str | None = None, state: Sequence[ContextLine] = ()
    ) -> WorkingContext:
        """The working context for an event with ``text`` at time ``now`` for ``user`` (the world as
        of ``now``: facts and evidence known by then, the market state then)."""
        t0 = time.perf_counter()
        cfg = self.config
        det, ents = self.read_request(text)
        seeds = ents + ([f"person:{user}"] if user else [])
        pool = self.facts.neighbourhood(seeds, cfg.hops, cfg.pool, at=now)
        counts = {"neighbourhood": len(pool)}
        facts = self.facts
        current = (
            facts.horizon is None or now >= facts.horizon
        )  # nothing known after now: the current view
        if cfg.remove_invalidated:
            if current:
                pool = [k for k in pool if k.invalid_at is None or k.invalid_at > now]
            else:
                pool = [v for k in pool if (v := facts.as_of(k, now)) is not None]
        elif not current:  # KH-NoInv: every fact known by now, invalidated or not
            pool = [k for k in pool if facts.known_span(k)[0] <= now]
        if (
            facts.rumours
        ):  # a rumour (tier 3) never stands beside first-hand knowledge of the same slot
            key = self.lex.slot_key
            firsthand = {key(k) for k in pool if k.trust_tier < 3}
            pool = [k for k in pool if k.trust_tier < 3 or key(k) not in firsthand]
        counts["valid"] = len(pool)
        scored = [(u, pool[i]) for u, i in self.score(pool, text, det, ents, user, now)]
        counts["admitted"] = len(scored)
        lines = fuse(
            self.header(user, det, ents, now),
            list(state),
            compress(scored, self.facts.entities, limit=cfg.max_items + 4),
            cfg.budget,
            cfg.max_items,
        )
        if cfg.record_use:
            self._record_use(lines)
        tokens = sum(ln.tokens for ln in lines)
        counts["injected"] = sum(1 for ln in lines if ln.kind == "knowledge")
        return WorkingContext(lines, tokens, det, ents, counts, time.perf_counter() - t0)

    def header(
        self, user: str | None, det: Detection, ents: list[str], now: datetime
    ) -> ContextLine:
        """The context's header: asker, intent, risk class, entities and their state as of
        ``now`` (the pack's state relation: a coin's market regime, a service's status)."""
        state = self.lex.state_relation
        current = {e: r for e in ents if (r := self.facts.regime(e, now, state))}
        return header(user, det.intent, det.risk, ents, current, self.lex.state_label)

    def score(
        self,
        pool: Sequence[Any],
        text: str,
        det: Detection,
        ents: list[str],
        user: str | None,
        now: datetime,
    ) -> list[tuple[float, int]]:
        """Governance Allow, then the utility s_t of each item of ``pool`` for the request
        ``text`` (read as ``det``, naming ``ents``) by ``user`` at ``now``: ``(u, index)`` of the
        items at or above ``min_utility``, best first (ties in pool order)."""
        cfg, facts = self.config, self.facts
        mentioned = set(ents + ([f"person:{user}"] if user else []))
        words = frozenset(query_terms(text))
        lex = self.lex
        acts = user and det.intent in lex.acts_for_user
        aspects = set(det.aspects)
        if acts:
            # the asker's constraints apply to any action (scope keeps them theirs)
            aspects |= lex.owner_constraints
        focus = (
            frozenset(ents) if not getattr(det, "cued", True) and not det.aspects else frozenset()
        )
        scored: list[tuple[float, int]] = []
        gov, util = self.governance, self.utility
        min_u = util.config.min_utility
        regimes: dict[str, str | None] = {}
        for i, k in enumerate(pool):
            # the current regime (first-hand, as of now) matters only for items that carry a regime
            # tag
            reg = None
            if k.regime_tag:
                reg = (
                    regimes[k.subject_id]
                    if k.subject_id in regimes
                    else regimes.setdefault(
                        k.subject_id, facts.regime(k.subject_id, now, lex.state_relation)
                    )
                )
            fresh = time_decay(k, now, lex=lex)  # shared by c_eff (governance) and Fresh (utility)
            if cfg.govern:
                if not gov.allow(
                    effective_confidence(k, now, reg, fresh=fresh, lex=lex),
                    k.maturity,
                    k.scope,
                    det.risk,
                    user,
                ):
                    continue
            elif k.scope not in gov.overlay(user):
                continue
            own = acts and k.relation in lex.owner_constraints and k.subject_id == f"person:{user}"
            u = util.score(
                k,
                mentioned,
                aspects if own else det.aspects,
                det.intent,
                now,
                reg,
                words,
                fresh,
                focus,
            )
            if u >= min_u:
                scored.append((u, i))
        scored.sort(key=lambda p: -p[0])
        return scored

    def _record_use(self, lines: list[ContextLine]) -> None:
        """Reuse count and running mean utility (the q_t of Psi) of every injected item."""
        for ln in lines:
            for eid in ln.edge_ids:
                k = self.facts.items[eid]
                k.utility = (k.utility * k.reuse_count + ln.utility) / (k.reuse_count + 1)
                k.reuse_count += 1
                self.facts.touch(eid)

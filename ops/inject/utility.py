"""Utility s_t(k) of a candidate item for one event (the paper's weighted sum).

``s = a_rel Rel + a_str Struct + a_mat Mat + a_fresh Fresh + a_reg Regime + a_trust Trust - a_noise
Noise``

* Rel: 1 if the event asks about the item's relation (an *aspect*: a phrase of the relation),
  ``intent_weight`` if the relation is in the intent's profile (what the domain pack says the
  task family needs), else ``other_weight``; at
  least the term overlap |terms(event) & terms(item)| / |terms(item)| (what makes untyped
  items such as SpeakerMem records relevant); at least ``focus_weight`` for an item about an
  entity the event names when the event asks nothing specific ("@x stats?");
* Struct: 1 if the item's subject was mentioned, 0.7 if its object was, else 0.4 (reached by a hop);
* Mat: deprecated 0, candidate 0.4, verified 0.7, proven 1;
* Fresh: the time part of the decay ``exp(-ln2/half_life * days)``;
* Regime (the ``state`` term): ``exp(-gamma * dist(regime(k), current state of its subject))``,
  the state being the value of the domain pack's state relation;
* Trust: tier 1 -> 1, 2 -> 0.7, 3 -> 0.4;
* Noise: ``max(0, (noise_floor - confidence) / noise_floor)`` (hedged or hearsay items).

All values are in [0, 1]; weights are configurable.
"""

from __future__ import annotations

import math
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from speakerflow.graphs.text_index import query_terms
from speakerflow.ops.knowledge.decay import DAY, half_life, regime_distance, time_decay
from speakerflow.ops.knowledge.lexicon import Lexicon, lexicon_for

MAT_SCORE = {"deprecated": 0.0, "candidate": 0.4, "verified": 0.7, "proven": 1.0}
TRUST_SCORE = {1: 1.0, 2: 0.7, 3: 0.4}


class UtilityConfig(BaseModel):
    """Weights (alpha) of the utility terms, the Rel levels, and the minimum utility to inject.

    ``intent_profile``: relations a task family usually needs (a prior, weaker than what the
    event asks); None: the domain pack's (:meth:`~.lexicon.Lexicon.intent_profile`: the
    relations whose kinds each intent ``needs``, derived from what the task is, never from a
    benchmark's gold requirements)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    rel: float = 0.35
    struct: float = 0.15
    mat: float = 0.10
    fresh: float = 0.10
    regime: float = 0.10
    trust: float = 0.10
    noise: float = 0.20
    intent_weight: float = 0.5
    other_weight: float = 0.1
    focus_weight: float = 0.8
    noise_floor: float = 0.7
    gamma: float = 0.5
    min_utility: float = 0.6
    intent_profile: dict[str, tuple[str, ...]] | None = None


class UtilityScorer:
    """Score items for one event: ``score(item, mentioned, aspects, intent, now, regime_now)``;
    ``lex``: the domain pack (half-lives, the intent profile; default: the default pack)."""

    def __init__(self, config: UtilityConfig | None = None, lex: Lexicon | None = None):
        self.config = config or UtilityConfig()
        self.lex = lex or lexicon_for()
        self.profile: dict[str, tuple[str, ...]] = (
            self.config.intent_profile
            if self.config.intent_profile is not None
            else self.lex.intent_profile()
        )
        self._lam: dict[str, float] = {}
        self._words: dict[str, frozenset[str]] = {}

    def overlap(self, item, event_terms: frozenset[str]) -> float:
        words = self._words.get(item.edge_id)
        if words is None:
            words = self._words[item.edge_id] = frozenset(
                query_terms(f"{item.relation.replace('_', ' ')} {item.description}")
            )
        return len(words & event_terms) / len(words) if words else 0.0

    def terms(
        self,
        item,
        mentioned: set[str],
        aspects: set[str],
        intent: str,
        now: datetime,
        regime_now: str | None,
        event_terms: frozenset[str] = frozenset(),
    ) -> dict[str, float]:
        """The seven terms (each 0-1) for one item."""
        cfg = self.config
        if item.relation in aspects:
            rel = 1.0
        elif item.relation in self.profile.get(intent, ()):
            rel = cfg.intent_weight
        else:
            rel = cfg.other_weight
        if rel < 1.0 and event_terms:
            rel = max(rel, self.overlap(item, event_terms))
        struct = (
            1.0 if item.subject_id in mentioned else 0.7 if item.object_id in mentioned else 0.4
        )
        lam = self._lam.get(item.relation)
        if lam is None:
            lam = self._lam[item.relation] = math.log(2) / half_life(item.relation, lex=self.lex)
        days = max(0.0, (now - (item.last_validated or item.valid_at)).total_seconds() / DAY)
        return {
            "rel": rel,
            "struct": struct,
            "mat": MAT_SCORE[item.maturity],
            "fresh": math.exp(-lam * days),
            "state": math.exp(-cfg.gamma * regime_distance(item.regime_tag, regime_now)),
            "trust": TRUST_SCORE.get(item.trust_tier, 0.4),
            "noise": max(0.0, (cfg.noise_floor - item.confidence) / cfg.noise_floor),
        }

    def score(
        self,
        item,
        mentioned,
        aspects,
        intent,
        now,
        regime_now,
        event_terms=frozenset(),
        fresh: float | None = None,
        focus: frozenset[str] = frozenset(),
    ) -> float:
        """The weighted sum of :meth:`terms` (same arithmetic, without building the dict);
        ``fresh`` reuses the time decay already computed for governance; ``focus``: entities
        the event names without asking anything specific (their items get ``focus_weight``)."""
        c = self.config
        if item.relation in aspects:
            rel = 1.0
        else:
            rel = (
                c.intent_weight if item.relation in self.profile.get(intent, ()) else c.other_weight
            )
            if event_terms:
                rel = max(rel, self.overlap(item, event_terms))
            if focus and item.subject_id in focus:
                rel = max(rel, c.focus_weight)
        struct = (
            1.0 if item.subject_id in mentioned else 0.7 if item.object_id in mentioned else 0.4
        )
        if fresh is None:
            fresh = time_decay(item, now, lex=self.lex)
        regime = (
            1.0
            if not item.regime_tag or not regime_now or item.regime_tag == regime_now
            else math.exp(-c.gamma)
        )
        noise = (
            (c.noise_floor - item.confidence) / c.noise_floor
            if item.confidence < c.noise_floor
            else 0.0
        )
        return (
            c.rel * rel
            + c.struct * struct
            + c.mat * MAT_SCORE[item.maturity]
            + c.fresh * fresh
            + c.regime * regime
            + c.trust * TRUST_SCORE.get(item.trust_tier, 0.4)
            - c.noise * noise
        )

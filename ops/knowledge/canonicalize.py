"""Canonicalize: map mention surfaces to stable entity ids, recording every alias merge.

Order of tests: the exact alias table (normalised with :func:`norm`; for a code type of the
domain pack, its suffixes stripped: a quoted code such as ``XYZ-USD`` is ``XYZ``), the pack's
reference table (an alias -> its canonical id), fuzzy matching with rapidfuzz (a misspelled
alias, score >= ``fuzzy_cutoff``, same entity type), then an optional model callback. Each
time a new surface is attached to an existing entity the decision goes to
:attr:`Canonicalizer.merge_log` (surface, entity, method, score): merges are recorded, never
silent. The examples are in ``tests/unit/test_inkh_canonicalize.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pyarrow as pa
from rapidfuzz import fuzz, process

from speakerflow.ops.core.base import Context, Operator, OperatorConfig, put_columns
from speakerflow.ops.core.registry import register
from speakerflow.ops.knowledge.detect import Mention
from speakerflow.ops.knowledge.lexicon import Lexicon, lexicon_for, norm
from speakerflow.schemas import Entity

#: A model fallback: (surface, etype, candidate entity ids) -> an entity id or None.
ModelMatcher = Callable[[str, str, list[str]], str | None]


@dataclass
class EntityState:
    """A canonical entity: its display name, type and every alias seen."""

    entity_id: str
    name: str
    etype: str
    aliases: set[str] = field(default_factory=set)


class Canonicalizer:
    """Alias table + merge log for one group.

    Parameters
    ----------
    lexicon
        The domain vocabulary (a compiled pack; default: the default pack): reference
        entities, code types, which types may create new entities.
    fuzzy_cutoff
        rapidfuzz ``ratio`` (0-100) a surface needs to join an existing entity.
    model
        Optional :data:`ModelMatcher`, asked only when exact and fuzzy tests fail.
    """

    def __init__(
        self,
        lexicon: Lexicon | None = None,
        fuzzy_cutoff: float = 86.0,
        model: ModelMatcher | None = None,
        group_id: str = "group",
    ):
        self.lexicon = lexicon or lexicon_for()
        self.fuzzy_cutoff = fuzzy_cutoff
        self.model = model
        self.group_id = group_id
        self.entities: dict[str, EntityState] = {}
        #: norm(alias) -> (entity_id, etype); shared live with :class:`Detector`.
        self.alias_table: dict[str, tuple[str, str]] = {}
        self.merge_log: list[dict] = []
        self.created: list[str] = []
        self._keys: dict[str, tuple[str, str]] = {}
        self._keys_by_type: dict[str, list[str]] = {}
        self._misses: set[tuple[str, str]] = set()
        self._creatable = frozenset(self.lexicon.open_types)
        self._codes = self.lexicon.code_types

    # -- resolution ---------------------------------------------------------------------
    def resolve(self, mention: Mention) -> str | None:
        """Entity id for a detected mention (creating the entity when its type allows)."""
        if mention.entity_id:
            return mention.entity_id
        return self.resolve_surface(mention.surface, mention.etype)

    def resolve_surface(self, surface: str, etype: str) -> str | None:
        """Entity id for ``surface`` of type ``etype`` (``unknown`` = fuzzy only), else None."""
        key = norm(surface)
        if not key:
            return None
        hit = self.alias_table.get(key)
        if hit and etype in (hit[1], "unknown"):
            return hit[0]
        for t in self._codes if etype == "unknown" else (etype,) if etype in self._codes else ():
            base = norm(self.lexicon.strip_code(surface, t))
            tick = self.lexicon.reference[t].get(base)
            if tick is not None or (etype == t and base):
                eid = f"{t}:{(tick or base).upper()}"
                if eid in self.entities:
                    self._attach(eid, surface, "reference" if tick else "ticker", 100.0)
                else:
                    self._create(eid, tick or base.upper(), t, surface)
                return eid
        if len(key) >= 4 and (
            len(self._keys) != len(self.alias_table) or etype not in self._keys_by_type
        ):
            self._refresh_keys(etype)
        if len(key) >= 4 and (key, etype) not in self._misses:
            keys = self._keys_by_type[etype]
            best = (
                process.extractOne(key, keys, scorer=fuzz.ratio, score_cutoff=self.fuzzy_cutoff)
                if keys
                else None
            )
            if best is None and etype == "unknown":
                self._misses.add((key, etype))  # forgotten whenever the alias table grows
            if best is not None:
                eid = self.alias_table[best[0]][0]
                self._attach(eid, surface, "fuzzy", float(best[1]))
                return eid
        if self.model is not None and etype != "unknown":
            cands = [e for e, s in self.entities.items() if s.etype == etype]
            picked = self.model(surface, etype, cands) if cands else None
            if picked is not None and picked in self.entities:
                self._attach(picked, surface, "model", 0.0)
                return picked
        if etype in self._creatable:
            eid = f"{etype}:{key}" if etype != "person" else f"person:{surface.strip()}"
            self._create(
                eid,
                surface.strip().lstrip("@") if etype != "trader" else surface.strip(),
                etype,
                surface,
            )
            return eid
        return None

    def _refresh_keys(self, etype: str) -> None:
        """Fuzzy candidate keys per type, rebuilt only when the alias table changed."""
        if len(self._keys) != len(self.alias_table):
            self._keys = dict(self.alias_table)
            self._keys_by_type.clear()
            self._misses.clear()
        self._keys_by_type[etype] = [
            k for k, (_, t) in self._keys.items() if etype in (t, "unknown") and len(k) >= 3
        ]

    def _create(self, eid: str, name: str, etype: str, surface: str) -> None:
        self.entities[eid] = EntityState(eid, name, etype, {name})
        self.created.append(eid)
        self.alias_table.setdefault(norm(name), (eid, etype))
        for n in self._reference_names(eid):
            self.alias_table.setdefault(norm(n), (eid, etype))
            self.entities[eid].aliases.add(n)
        if norm(surface) != norm(name):
            self._attach(eid, surface, "ticker", 100.0)

    def _reference_names(self, eid: str) -> tuple[str, ...]:
        etype, _, code = eid.partition(":")
        return self.lexicon.reference_names.get((etype, code), ())

    def _attach(self, eid: str, surface: str, method: str, score: float) -> None:
        key = norm(surface)
        if self.alias_table.get(key, (None,))[0] == eid:
            return
        self.alias_table[key] = (eid, self.entities[eid].etype)
        self.entities[eid].aliases.add(surface.strip())
        self.merge_log.append(
            {
                "surface": surface,
                "entity_id": eid,
                "method": method,
                "score": round(score, 1),
                "at": datetime.now(UTC).isoformat(),
            }
        )

    def merge(self, keep: str, drop: str, reason: str) -> None:
        """Fold entity ``drop`` into ``keep`` (aliases move; logged with ``reason``)."""
        gone = self.entities.pop(drop)
        for a in gone.aliases:
            self.alias_table[norm(a)] = (keep, self.entities[keep].etype)
            self.entities[keep].aliases.add(a)
        self.merge_log.append(
            {
                "surface": gone.name,
                "entity_id": keep,
                "method": "merge",
                "dropped": drop,
                "reason": reason,
                "at": datetime.now(UTC).isoformat(),
            }
        )

    # -- persistence --------------------------------------------------------------------
    def to_records(self) -> list[Entity]:
        """Entities as :class:`~speakerflow.schemas.Entity` records (aliases sorted)."""
        return [
            Entity(
                entity_id=s.entity_id,
                group_id=self.group_id,
                name=s.name,
                etype=s.etype,
                aliases=sorted(s.aliases),
            )
            for s in self.entities.values()
        ]

    def load(self, rows: list[dict]) -> None:
        """Load entity rows (``entity_id``, ``name``, ``etype``, ``aliases``) from the graph."""
        for r in rows:
            st = EntityState(
                r["entity_id"], r["name"], r["etype"], set(r.get("aliases") or []) | {r["name"]}
            )
            self.entities[st.entity_id] = st
            for a in st.aliases:
                self.alias_table[norm(a)] = (st.entity_id, st.etype)


class CanonicalizeConfig(OperatorConfig):
    """``fuzzy_cutoff``: rapidfuzz ratio 0-100 needed to join an existing entity."""

    fuzzy_cutoff: float = 86.0


@register
class Canonicalize(Operator):
    """Detect output -> the same rows (passthrough) plus ``entity_ids`` (None where nothing
    matched)."""

    name = "canonicalize"
    consumes = ("msg_id", "surfaces", "etypes")
    produces = pa.schema([("msg_id", pa.string()), ("entity_ids", pa.list_(pa.string()))])
    passthrough = True
    Config = CanonicalizeConfig
    config: CanonicalizeConfig

    def __init__(self, config=None, canonicalizer: Canonicalizer | None = None, **kw):
        super().__init__(config, **kw)
        self.canon = canonicalizer or Canonicalizer(fuzzy_cutoff=self.config.fuzzy_cutoff)

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        before = len(self.canon.merge_log)
        ids = [
            [self.canon.resolve_surface(s, t) for s, t in zip(ss, ts, strict=True)]
            for ss, ts in zip(
                table["surfaces"].to_pylist(), table["etypes"].to_pylist(), strict=True
            )
        ]
        self.stats.bump("merges", len(self.canon.merge_log) - before)
        return put_columns(table, {"entity_ids": ids}, self.produces)

"""The vocabulary in force: a domain pack compiled into the tables and patterns the reader uses.

Nothing here knows a domain. :class:`Lexicon` takes a
:class:`~speakerflow.ops.knowledge.domain.schema.DomainPack` (default: the default pack,
:func:`~speakerflow.ops.knowledge.domain.load.default_pack`) and derives what Detect,
Canonicalize, the reader, the extractor, decay and the utility scorer look up: relations by
name, category words, reference entities and their aliases, entity-type masks, intent cue
patterns, risk classes, trust confidences. :func:`lexicon_for` compiles a pack once per
process (keyed by content).

The old module-level names (``RELATIONS``, ``RELATION_BY_NAME``, ``CATEGORIES`` ...) still
resolve, to the default pack's values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from speakerflow.ops.knowledge.domain.load import default_pack, pack_digest
from speakerflow.ops.knowledge.domain.schema import OTHER, PERSON, DomainPack, word_regex
from speakerflow.ops.knowledge.domain.schema import Relation as PackRelation


def norm(text: str) -> str:
    """Alias key: lower-case letters and digits only (``@Alpha_Whale`` -> ``alphawhale``)."""
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def words_rx(entries: list[str] | tuple[str, ...], prefix: bool = False) -> str | None:
    """One alternation of word-list entries (see :func:`~.domain.schema.word_regex`)."""
    return "|".join(word_regex(e, prefix) for e in entries) if entries else None


@dataclass(frozen=True)
class Relation:
    """A relation type as the reader uses it (compiled from a pack's relation).

    ``value`` is ``percent``, ``money``, ``duration``, ``category``, ``text`` or ``entity``
    (then ``object`` is the object's entity type). ``owner_scoped`` relations describe a
    person and are private to that person.
    """

    name: str
    subject: str
    phrases: tuple[str, ...]
    value: str
    owner_scoped: bool = False
    half_life_days: float = 30.0
    #: the category words alone name the relation (no phrase needed)
    value_cues: bool = False
    #: what the relation means, in plain words (the nearest-prototype classifier's prototypes)
    description: tuple[str, ...] = ()
    #: what intents need it for (a pack's relation ``kinds``)
    kind: tuple[str, ...] = ()
    object: str | None = None
    examples: tuple[str, ...] = ()
    anaphors: tuple[str, ...] = ()
    statistic: bool = False
    magnitude: bool = False
    #: one value at a time (every literal; an entity relation the pack says is "one")
    single: bool = True
    #: a clause that ends an entity value states no value of this relation
    quiet_on_endings: bool = False

    @property
    def literal(self) -> bool:
        """The value is a literal (a number, a category, text), not an entity."""
        return self.value != "entity"


def _relation(r: PackRelation) -> Relation:
    """The reader's :class:`Relation` of a pack's relation."""
    return Relation(
        r.name,
        r.subject,
        tuple(r.phrases),
        r.value,
        r.scope == "private",
        r.half_life_days,
        r.named_by_values,
        tuple(r.descriptions),
        tuple(r.kinds),
        r.object,
        tuple(r.examples),
        tuple(r.anaphors),
        r.statistic,
        r.magnitude,
        r.single,
        r.quiet_on_endings,
    )


@dataclass
class Lexicon:
    """A compiled domain pack (``pack=None``: the default pack)."""

    pack: DomainPack = field(default_factory=default_pack)

    def __post_init__(self) -> None:
        self.name = self.pack.name
        self.digest = pack_digest(self.pack)
        self.relations: tuple[Relation, ...] = tuple(_relation(r) for r in self.pack.relations)
        self.relation_by_name = {r.name: r for r in self.relations}
        self._compile_categories()
        self._compile_types()
        self._compile_references()
        self._compile_relation_sets()
        self._compile_intents()
        self._compile_reader()

    def _compile_categories(self) -> None:
        """Category relations: their values, the words that say them, and example values."""
        p = self.pack
        #: relation -> canonical value -> the words that say it (the value itself among them)
        self.categories: dict[str, dict[str, tuple[str, ...]]] = {
            r.name: {v: tuple(ws) if v in ws else (v, *ws) for v, ws in r.values.items()}
            for r in p.relations
            if r.value == "category"
        }
        #: (relation, value, pattern) of every category word, in pack order
        self.category_patterns = [
            (rel, val, re.compile(r"\b" + re.escape(w) + r"\b", re.IGNORECASE))
            for rel, vals in self.categories.items()
            for val, words in vals.items()
            for w in words
        ]
        said_by: dict[str, set[str]] = {}
        for rel, vals in self.categories.items():
            for words in vals.values():
                for w in words:
                    said_by.setdefault(w.lower(), set()).add(rel)
        #: some category word says values of two relations ("open": a freeze, an incident)
        self.shared_words = any(len(rels) > 1 for rels in said_by.values())
        self.value_examples = {
            r.name: dict(r.value_examples) for r in p.relations if r.value_examples
        }

    def _compile_types(self) -> None:
        """Entity types: names (people last), masks, open / code / handle types, patterns."""
        p = self.pack
        self.types = dict(p.entity_types)
        self.type_names = (*[t for t in p.entity_types if t != PERSON], PERSON)
        self.masks = {t: (et.mask or f"the {t}") for t, et in p.entity_types.items()}
        self.masks.setdefault(PERSON, "the person")
        self.open_types = tuple(
            t for t in self.type_names if self.types.get(t) is None or self.types[t].open
        )
        self.code_types = tuple(t for t, et in p.entity_types.items() if et.codes)
        self.handle_type = next((t for t, et in p.entity_types.items() if et.handles), None)
        #: (type, pattern) of the types named by patterns ("INC-4821")
        self.patterns = [
            (t, re.compile(rx)) for t, et in p.entity_types.items() for rx in et.patterns
        ]

    def _compile_references(self) -> None:
        """The reference entities: code tables, and names and aliases of the other types."""
        p = self.pack
        #: code types: norm(code or alias) -> canonical code (the reference table)
        self.reference: dict[str, dict[str, str]] = {
            t: {norm(n): e.id for e in p.entity_types[t].entities for n in (e.id, *e.aliases)}
            for t in self.code_types
        }
        self.reference_names = {
            (t, e.id): (e.id, *e.aliases)
            for t in self.code_types
            for e in p.entity_types[t].entities
        }
        #: the other types' reference entities: norm(name) -> type, norm(alias) -> entity id
        self.vocab: dict[str, str] = {}
        self.vocab_alias: dict[str, str] = {}
        for t, et in p.entity_types.items():
            if et.codes:
                continue
            for e in et.entities:
                if t == PERSON:  # people keep their id as written ("person:priya")
                    for n in (e.id, *e.aliases):
                        self.vocab_alias[norm(n)] = f"{PERSON}:{e.id}"
                    continue
                self.vocab[norm(e.id)] = t
                for a in e.aliases:
                    self.vocab_alias[norm(a)] = f"{t}:{norm(e.id)}"
        for t in self.code_types:
            for key in self.reference[t]:
                self.vocab[key] = t

    def _compile_relation_sets(self) -> None:
        """What the relations take together: subject and number types, text, single-valued
        and owner-scoped relations, the state relation."""
        p = self.pack
        self.subject_types = tuple(
            t for t in self.type_names if any(r.subject == t for r in self.relations)
        )
        #: the number types the pack's relations take (percent, money, duration)
        self.number_types = frozenset(
            r.value for r in self.relations if r.value in ("percent", "money", "duration")
        )
        self.text_relations = tuple(r for r in self.relations if r.value == "text")
        #: entity relations with one value at a time (a new value replaces the old one)
        self.single_entity = frozenset(r.name for r in self.relations if not r.literal and r.single)
        self.owner_constraints = frozenset(r.name for r in self.relations if r.owner_scoped)
        self.state_relation = p.state.relation if p.state else None
        self.state_label = p.state.label if p.state else "state"

    def _compile_intents(self) -> None:
        """Requests: the intents, their risks, subjects, needs, cues and concerns."""
        p = self.pack
        self.intents: tuple[str, ...] = (*[i.name for i in p.intents], OTHER)
        self.base_risk = {i.name: i.risk for i in p.intents} | {OTHER: "low"}
        self.intent_subjects = {i.name: tuple(i.subjects) for i in p.intents}
        self.intent_needs = {i.name: tuple(i.needs) for i in p.intents} | {OTHER: ()}
        self.intent_descriptions = {i.name: tuple(i.descriptions) for i in p.intents}
        self.intent_examples = {i.name: tuple(i.examples) for i in p.intents} | (
            {OTHER: tuple(p.chatter)} if p.chatter else {}
        )
        self.intent_cues = {
            i.name: re.compile(r"(?:" + rx + ")")
            for i in p.intents
            if (rx := words_rx(i.cues, prefix=True))
        }
        self.acts_for_user = frozenset(i.name for i in p.intents if i.acts_for_user)
        ref = {e.id: t for t, et in p.entity_types.items() for e in et.entities}
        #: entity ids a request of each family concerns without naming them
        self.intent_concerns = {
            i.name: tuple(
                f"{PERSON}:{e}" if ref[e] == PERSON else f"{ref[e]}:{norm(e)}" for e in i.concerns
            )
            for i in p.intents
            if i.concerns
        }
        #: (intent, kinds a question about only these is that intent, types that veto it)
        self.answers = tuple(
            (i.name, frozenset(i.answers), frozenset(i.answers_unless_naming))
            for i in p.intents
            if i.answers
        )
        esc = words_rx(p.risk_escalation)
        self.escalate = re.compile(esc, re.IGNORECASE) if esc else None

    def _compile_reader(self) -> None:
        """The reader's trust confidences, source tiers and word lists, and the extraction
        prompt."""
        p = self.pack
        self.trust_confidence = dict(p.trust.confidence)
        self.hedge_factor = p.trust.hedge_factor
        self.source_tiers = dict(p.trust.sources)
        self.decoys = words_rx(p.reader.decoys)
        self.thresholds = words_rx(p.reader.thresholds)
        self.not_names = frozenset(w.lower() for w in p.reader.not_names)
        self.no_relation_examples = tuple(p.reader.no_relation_examples)
        self.anaphor_relation = {a.lower(): r.name for r in self.relations for a in r.anaphors}
        self.extraction_prompt = p.extraction_prompt

    # -- lookups ------------------------------------------------------------------------
    def slot_key(self, item) -> tuple[str, ...]:
        """What a fact contradicts: its graph slot, or (subject, relation) for an entity
        relation with one value at a time."""
        if item.relation in self.single_entity:
            return (item.subject_id, item.relation)
        return item.slot

    def half_life(self, relation: str, default: float = 30.0) -> float:
        rel = self.relation_by_name.get(relation)
        return rel.half_life_days if rel else default

    def strip_code(self, symbol: str, etype: str) -> str:
        """``XYZUSDT`` / ``XYZ-USD`` -> ``XYZ`` for a code type with those suffixes."""
        codes = self.types[etype].codes if etype in self.types else None
        if codes is None or not codes.suffixes:
            return symbol
        rx = r"[-/_ ]?(?:" + "|".join(re.escape(s) for s in codes.suffixes) + ")$"
        base = re.sub(rx, "", symbol.strip(), flags=re.IGNORECASE)
        return base or symbol

    def intent_profile(self) -> dict[str, tuple[str, ...]]:
        """Relations per task family: those whose kind (or name) the family needs."""
        return {
            intent: tuple(
                r.name for r in self.relations if set(r.kind) & set(needs) or r.name in needs
            )
            for intent, needs in self.intent_needs.items()
        }


_COMPILED: dict[str, Lexicon] = {}


def lexicon_for(pack: DomainPack | None = None) -> Lexicon:
    """The compiled lexicon of ``pack`` (default: the default pack), once per process."""
    pack = pack or default_pack()
    key = pack_digest(pack)
    if key not in _COMPILED:
        _COMPILED[key] = Lexicon(pack)
    return _COMPILED[key]


_LEGACY = {
    "RELATIONS": lambda lx: lx.relations,
    "RELATION_BY_NAME": lambda lx: lx.relation_by_name,
    "CATEGORIES": lambda lx: lx.categories,
    "INTENT_DESCRIPTIONS": lambda lx: lx.intent_descriptions,
    "INTENT_EXAMPLES": lambda lx: lx.intent_examples,
    "INTENT_SUBJECTS": lambda lx: lx.intent_subjects,
    "INTENT_NEEDS": lambda lx: lx.intent_needs,
}


def __getattr__(name: str) -> Any:
    """The old module constants, read from the default pack."""
    if name in _LEGACY:
        return _LEGACY[name](lexicon_for())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""What a domain pack is: the pydantic models a pack file (YAML or JSON) is validated against.

A pack is everything the knowledge harness knows about one domain, as data: entity types
(with reference entities and their aliases), relations (value type, slot scope, half-life,
phrases, a description and example statements), intents (task families with descriptions,
example requests, cue words and the relation kinds each needs), the state vocabulary (which
relation is the regime a fact is tagged with) and trust rules. The reader, Detect,
Canonicalize, the value parsers and the utility scorer read nothing else about the domain.

Word lists (``phrases``, ``cues``, ``context`` ...) hold plain phrases matched at word
boundaries, case-insensitively; an entry ending in ``*`` matches any ending ("liquidat*"),
and an entry starting with ``re:`` is a regular expression ("re:\\d+x"). Cue words of intents
are matched at word starts only (a stem: "analy" matches "analysis").

:meth:`DomainPack.model_json_schema` is the JSON Schema (``speakerflow domain schema``).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

Name = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]
ValueType = Literal["percent", "money", "duration", "category", "entity", "text"]
RiskClass = Literal["low", "medium", "high"]
#: intent label of requests that need no domain knowledge (chatter); reserved
OTHER = "other"
#: the entity type of the people in a group (speakers, the roster); always defined
PERSON = "person"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _lines(v: str | list[str]) -> list[str]:
    return [v] if isinstance(v, str) else list(v)


class Entity(_Strict):
    """A reference entity: its canonical id and the other names it goes by."""

    id: str = Field(min_length=1, description="canonical id (a ticker, a service name ...)")
    aliases: list[str] = Field(default_factory=list, description="other names and codes")


class Codes(_Strict):
    """Entities of the type are upper-case codes (tickers): ``XYZ``, ``XYZUSDT`` -> ``XYZ``."""

    suffixes: list[str] = Field(
        default_factory=list, description="quote suffixes stripped from a code (USDT, -USD ...)"
    )
    min_length: int = Field(2, ge=1)
    max_length: int = Field(6, ge=1)


class Handles(_Strict):
    """Entities of the type are named by handles: ``@name``, ``snake_case`` or bare names."""

    roles: list[str] = Field(
        default_factory=list, description="words right before a bare handle ('follow x')"
    )
    attributes: list[str] = Field(
        default_factory=list,
        description="words after a possessive handle ('x's record')",
    )
    verbs: list[str] = Field(
        default_factory=list,
        description="verbs after a bare lower-case name in a subject's place ('x paused')",
    )
    context: list[str] = Field(
        default_factory=list,
        description="words that make a bare lower-case name a handle of this type",
    )


class EntityType(_Strict):
    """An entity type: how its entities are named, found and written in prototypes."""

    description: str = ""
    mask: str | None = Field(
        None,
        description="what a mention is replaced with before a clause is embedded "
        "(default 'the <type>')",
    )
    open: bool = Field(True, description="unseen names of the type may become new entities")
    codes: Codes | None = None
    handles: Handles | None = None
    patterns: list[str] = Field(
        default_factory=list,
        description="regular expressions that name an entity of the type ('INC-\\d+')",
    )
    entities: list[Entity] = Field(default_factory=list)


class Relation(_Strict):
    """A relation type: subject, value type, scope, phrases and what it means in plain words."""

    name: Name
    subject: Name = Field(description="entity type the relation describes")
    value: ValueType
    object: Name | None = Field(None, description="entity type of the value (value: entity)")
    values: dict[Name, list[str]] = Field(
        default_factory=dict,
        description="category values and the words that say them (value: category)",
    )
    named_by_values: bool = Field(
        False, description="a value word alone names the relation (no phrase needed)"
    )
    value_examples: dict[str, list[str]] = Field(
        default_factory=dict,
        description="statements that say a category value without its word, per value, and "
        "'_none' for clauses that say none (read by nearest exemplars)",
    )
    phrases: list[str] = Field(default_factory=list, description="words that name the relation")
    scope: Literal["shared", "private"] = Field(
        "shared", description="private: a fact about a person, seen by that person only"
    )
    half_life_days: float = Field(30.0, gt=0)
    description: str | list[str] = Field(description="what the relation means, in plain words")
    examples: list[str] = Field(default_factory=list, description="a few example statements")
    kinds: list[Name] = Field(default_factory=list, description="what intents need it for")
    anaphors: list[str] = Field(
        default_factory=list,
        description="nouns that refer back to the last value ('that exposure is gone')",
    )
    statistic: bool = Field(
        False, description="a threshold or condition ('alerts fire past 25%') asserts no value"
    )
    magnitude: bool = Field(False, description="a signed number is read as its size")
    quiet_on_endings: bool = Field(
        False,
        description="a clause that ends an entity value states no value of this relation (its "
        "value words there belong to the ending)",
    )
    cardinality: Literal["one", "many"] | None = Field(
        None,
        description="one value at a time (a new one replaces it) or a set; default: one for a "
        "literal value, many for an entity value",
    )

    @property
    def single(self) -> bool:
        """One value at a time: a new value of the subject contradicts the current one."""
        return self.cardinality == "one" or (self.cardinality is None and self.value != "entity")

    @property
    def descriptions(self) -> list[str]:
        return _lines(self.description)


class Intent(_Strict):
    """A task family: what requests of it look like and what knowledge they need."""

    name: Name
    description: str | list[str]
    examples: list[str] = Field(default_factory=list, description="example requests (masked)")
    cues: list[str] = Field(
        default_factory=list, description="cue words (stems) that decide the intent"
    )
    subjects: list[Name] = Field(
        default_factory=list, description="entity types a request of the family names"
    )
    needs: list[Name] = Field(
        default_factory=list, description="relation kinds (or relation names) it needs"
    )
    risk: RiskClass = "low"
    acts_for_user: bool = Field(
        False, description="acts for the asker: the asker's private relations always apply"
    )
    answers: list[Name] = Field(
        default_factory=list,
        description="a question about relations of these kinds only, with no cue word, is this "
        "family",
    )
    answers_unless_naming: list[Name] = Field(
        default_factory=list, description="... unless the request names an entity of these types"
    )
    concerns: list[str] = Field(
        default_factory=list,
        description="reference entities a request of the family is about even when it does not "
        "name them (a deploy check: the production environment)",
    )

    @property
    def descriptions(self) -> list[str]:
        return _lines(self.description)


class State(_Strict):
    """The state a fact is tagged with when it is written (decay weighs a state change)."""

    relation: Name = Field(description="a category relation whose value is the state")
    label: str = Field("state", description="its name in the context header ('market')")


class Trust(_Strict):
    """How far a source is believed: confidence by trust tier, hedged words, source types."""

    confidence: dict[int, float] = Field(default_factory=lambda: {1: 0.9, 2: 0.75, 3: 0.5})
    hedge_factor: float = Field(0.6, gt=0, le=1)
    sources: dict[str, int] = Field(
        default_factory=dict,
        description="source (speaker) or source type -> the best trust tier its events get "
        "(3: never believed over first-hand knowledge)",
    )


class Reader(_Strict):
    """Domain words of the reader (its English grammar stays in code)."""

    decoys: list[str] = Field(
        default_factory=list,
        description="words next to which a percentage is no relation's level (a return ...)",
    )
    no_relation_examples: list[str] = Field(
        default_factory=list,
        description="what a clause with a number is when it states no relation (prototype)",
    )
    thresholds: list[str] = Field(
        default_factory=list, description="words of thresholds and conditions ('stop loss')"
    )
    not_names: list[str] = Field(default_factory=list, description="words never taken for a handle")


class DomainPack(_Strict):
    """One domain, as data (see ``docs/custom-domains.md``)."""

    name: Name
    title: str = ""
    description: str = ""
    version: int = 1
    entity_types: dict[Name, EntityType]
    relations: list[Relation] = Field(min_length=1)
    intents: list[Intent] = Field(min_length=1)
    chatter: list[str] = Field(
        default_factory=list, description="requests that need no knowledge (intent 'other')"
    )
    risk_escalation: list[str] = Field(
        default_factory=list, description="words that make any request high-risk"
    )
    state: State | None = None
    trust: Trust = Field(default_factory=lambda: Trust.model_validate({}))
    reader: Reader = Field(default_factory=lambda: Reader.model_validate({}))
    extraction_prompt: str = Field(
        "Extract durable facts from an event.", description="first line of a chat extractor's"
    )
    sample_events: str | None = Field(None, description="bundled event stream, next to the pack")


class PackIssue(ValueError):
    """A pack that parses but does not hold together; ``loc`` points at the entry and field."""

    def __init__(self, loc: tuple[str | int, ...], message: str):
        super().__init__(message)
        self.loc = loc
        self.message = message


def word_regex(entry: str, prefix: bool = False) -> str:
    """The regex of one word-list entry (see the module docstring)."""
    if entry.startswith("re:"):
        return entry[3:]
    if entry.endswith("*"):
        return r"\b" + re.escape(entry[:-1]) + r"\w*"
    return r"\b" + re.escape(entry) + ("" if prefix else r"\b")


def check_pack(p: DomainPack) -> None:
    """Cross-references of a pack: types, kinds, values, regexes; raises :class:`PackIssue`."""
    types = set(p.entity_types) | {PERSON}
    _check_types(p)
    _words(("reader",), p.reader.model_dump())
    _words(("risk_escalation",), {"": p.risk_escalation})
    seen: set[str] = set()
    kinds: set[str] = set()
    for i, r in enumerate(p.relations):
        loc: tuple[str | int, ...] = ("relations", i)
        if r.name in seen:
            raise PackIssue((*loc, "name"), f"relation {r.name!r} is defined twice")
        seen.add(r.name)
        _check_relation(loc, r, types)
        kinds |= set(r.kinds)
    names = seen
    seen = set()
    ids = {e.id for et in p.entity_types.values() for e in et.entities}
    for i, it in enumerate(p.intents):
        loc = ("intents", i)
        if it.name == OTHER or it.name in seen:
            raise PackIssue((*loc, "name"), f"intent {it.name!r} is reserved or defined twice")
        seen.add(it.name)
        _check_intent(loc, it, types, kinds, names, ids)
    if p.state is not None:
        rel = next((r for r in p.relations if r.name == p.state.relation), None)
        if rel is None or rel.value != "category":
            raise PackIssue(
                ("state", "relation"),
                f"{p.state.relation!r} is not a category relation of the pack",
            )
    for st in p.trust.sources.values():
        if st not in p.trust.confidence:
            raise PackIssue(("trust", "sources"), f"tier {st} has no confidence")


def _check_types(p: DomainPack) -> None:
    """The entity types: 'person' plain, codes or handles, valid patterns, no empty alias."""
    if PERSON in p.entity_types:
        t = p.entity_types[PERSON]
        if t.codes or t.handles or t.patterns:
            raise PackIssue(
                ("entity_types", PERSON),
                "'person' is the group's people (the roster and the pack's entities): it takes "
                "no codes, handles or patterns",
            )
    for name, t in p.entity_types.items():
        if t.codes and t.handles:
            raise PackIssue(("entity_types", name), "a type has either 'codes' or 'handles'")
        for j, rx in enumerate(t.patterns):
            try:
                re.compile(rx)
            except re.error as exc:
                raise PackIssue(
                    ("entity_types", name, "patterns", j), f"{rx!r} is not a valid pattern: {exc}"
                ) from None
        for i, e in enumerate(t.entities):
            for j, a in enumerate(e.aliases):
                if not a.strip():
                    raise PackIssue(("entity_types", name, "entities", i, "aliases", j), "empty")


def _check_relation(loc: tuple[str | int, ...], r: Relation, types: set[str]) -> None:
    """One relation: its subject and object types, and the fields its value kind allows."""
    if r.subject not in types:
        raise PackIssue(
            (*loc, "subject"), f"{r.subject!r} is no entity type; use one of {sorted(types)}"
        )
    if r.value == "entity":
        if r.object not in types:
            raise PackIssue(
                (*loc, "object"), f"value 'entity' needs 'object': one of {sorted(types)}"
            )
    elif r.object is not None:
        raise PackIssue((*loc, "object"), f"only an entity value has an object ({r.value})")
    if r.value == "category":
        _check_values(loc, r)
    elif r.values or r.value_examples or r.named_by_values:
        raise PackIssue((*loc, "values"), f"only a category has values ({r.value})")
    if r.scope == "private" and r.subject != PERSON:
        raise PackIssue((*loc, "scope"), "a private relation describes a person (subject: person)")
    if r.anaphors and r.value != "entity":
        raise PackIssue((*loc, "anaphors"), "anaphors refer back to an entity value")
    if r.cardinality == "many" and r.value != "entity":
        raise PackIssue((*loc, "cardinality"), "a literal value is one at a time")
    if r.magnitude and r.value not in ("percent", "money", "duration"):
        raise PackIssue((*loc, "magnitude"), "only a number has a magnitude")
    if not r.phrases and not r.descriptions:
        raise PackIssue((*loc, "phrases"), "a relation needs phrases or a description")
    _words(loc, {"phrases": r.phrases})


def _check_intent(
    loc: tuple[str | int, ...],
    it: Intent,
    types: set[str],
    kinds: set[str],
    names: set[str],
    ids: set[str],
) -> None:
    """One intent: its subjects are entity types, its needs relation kinds or relations, its
    cues valid, its concerns reference entities (``ids``)."""
    for j, s in enumerate((*it.subjects, *it.answers_unless_naming)):
        if s not in types:
            raise PackIssue((*loc, "subjects", j), f"{s!r} is no entity type")
    for j, n in enumerate((*it.needs, *it.answers)):
        if n not in kinds and n not in names:
            raise PackIssue(
                (*loc, "needs", j),
                f"{n!r} is neither a relation kind {sorted(kinds)} nor a relation",
            )
    _words(loc, {"cues": it.cues})
    for j, ref in enumerate(it.concerns):
        if ref not in ids:
            raise PackIssue((*loc, "concerns", j), f"{ref!r} is no reference entity of the pack")


def _check_values(loc: tuple[str | int, ...], r: Relation) -> None:
    if not r.values:
        raise PackIssue((*loc, "values"), "a category needs values")
    owner: dict[str, str] = {}
    for v, words in r.values.items():
        for w in [v, *words]:
            prev = owner.setdefault(w.lower(), v)
            if prev != v:
                raise PackIssue((*loc, "values", v), f"the word {w!r} says both {prev!r} and {v!r}")
    for v in r.value_examples:
        if v != "_none" and v not in r.values:
            raise PackIssue((*loc, "value_examples", v), f"{v!r} is not one of the values")


def _words(loc: tuple[str | int, ...], lists: dict) -> None:
    for field_name, entries in lists.items():
        for j, w in enumerate(entries if isinstance(entries, list) else ()):
            try:
                re.compile(word_regex(w))
            except re.error as exc:
                where = (*loc, field_name, j) if field_name else (*loc, j)
                raise PackIssue(where, f"{w!r} is not a valid pattern: {exc}") from None

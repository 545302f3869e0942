"""The Writer-action contract: one function decides what a proposed action does to the store.

:func:`check_action` is the only place the contract is written. The ``Validate`` operator
(what the store enforces) and the training reward's action report
(:func:`speakerflow.training.action_report.report_actions`) both call it, so the reward
trains toward exactly what the store accepts. ``docs/write-path.md`` ("The action
contract") explains the decisions.

A :class:`Batch` holds what the check needs about one writing position: the roster and
aliases, the current heads, the segment's message ids (and earlier ``history`` ids), the
action budget, and what earlier actions of the same output already wrote. Each call returns
a :class:`Verdict`:

``write``
    the action writes one record; ``Verdict.action`` is the normalised action (canonical
    names, a known ``utype``, provenance, the UPDATE target resolved to the current head of
    its chain) and ``Verdict.entry_id`` the id the new record gets;
``noop``
    valid, writes nothing: a NOOP, or an UPDATE whose content equals its head's;
``duplicate``
    valid shape, writes nothing: repeats an earlier action of the output (same owner, layer
    and content) or, for an ADD, a current head;
``truncated``
    beyond the budget ``max(8, 2 n)`` (not checked further);
``reject``
    breaks the contract; ``Verdict.reason`` says why (prefixed with the field at fault).

Rules, in order: budget; a JSON object; ``action`` one of ADD / UPDATE / NOOP; non-empty
``content``; UPDATE: ``entry_id`` names a current head or a record this output wrote (an
UPDATE of a head this output already updated continues the chain from its newest record);
an UPDATE of anything else is an ADD when it carries owner, source and layer, else a reject;
content equal to the head's is a ``noop``; an UPDATE inherits the head's owner and layer,
and its source unless it names a roster member who says one of its cited messages of the
segment (another person's correction; any other named source is dropped); ADD: ``owner``
resolves (aliases, ``@handles``, any case) to a roster member or is ``GROUP``, ``source``
resolves to a roster member, ``layer`` is one of the four, person layers take a person
owner and group layers ``GROUP``;
an ADD equal to a current head is a ``duplicate``; cited ``from_ids`` are message ids of
the segment or its history, at least one of the segment; with none cited, code picks the
source's best-matching message; the content must be *grounded* in the cited messages
(:func:`grounding`: every number and name of the content is in them, and at least
:data:`MIN_SUPPORT` of its other words; an UPDATE may also use its head's words; a sentence
that instructs the memory system is no evidence); an unknown ``utype`` becomes ``fact``;
last, a write whose (owner, layer, content) an earlier write of the output already has is a
``duplicate``.

Repairs the check made on the way (``alias``, ``utype_coerced``, ``update_to_add``,
``provenance_filled``, ``source_inherited``) are listed in ``Verdict.repairs``; they never
change the verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from speakerflow.ops.text.people import PersonResolver
from speakerflow.ops.write.grounding import grounding
from speakerflow.ops.write.upsert import add_entry_id, entry_id
from speakerflow.schemas import GROUP_LAYERS, GROUP_OWNER, LAYERS, PERSON_LAYERS, RECORD_TYPES
from speakerflow.words import words

__all__ = [
    "Batch",
    "Verdict",
    "VerdictKind",
    "check_action",
    "norm_text",
    "store_ids",
    "writer_form",
    "fill_provenance",
    "MIN_BUDGET",
]

VerdictKind = Literal["write", "noop", "duplicate", "truncated", "reject"]
#: Budget of a writing position: max(MIN_BUDGET, 2 * number of messages).
MIN_BUDGET = 8
#: Fields a Writer writes (what :func:`writer_form` keeps), in a fixed order.
WRITER_FIELDS = (
    "action",
    "entry_id",
    "owner",
    "source",
    "layer",
    "utype",
    "content",
    "event",
    "from_ids",
)

#: ``new_id(batch, normalised action)`` -> id of the record the action writes.
IdScheme = Callable[["Batch", dict[str, Any]], str]


def norm_text(text: Any) -> str:
    """Lower-cased words joined by single spaces: how contents compare (no-op UPDATEs,
    duplicates)."""
    return " ".join(words(str(text or "")))


def store_ids(batch: Batch, action: dict[str, Any]) -> str:
    """The store's ids (:mod:`ops.write.upsert`): hashes of group, segment and action."""
    if action["action"] == "ADD":
        return add_entry_id(
            batch.group_id, batch.segment_id, action["owner"], action["layer"], action["content"]
        )
    return entry_id(
        batch.group_id, batch.segment_id, "UPDATE", action["entry_id"], action["content"]
    )


def fill_provenance(
    messages: Iterable[Mapping[str, Any]], source: str | None, content: str
) -> list[str]:
    """Message ids for an action that cites none: the source's best-matching message.

    Ranks ``messages`` by shared words with ``content`` (the source's own messages first);
    returns the best one, or the source's last message when nothing overlaps; ``[]`` when
    there are no messages.
    """
    msgs = list(messages)
    if not msgs:
        return []
    said = set(words(content))
    own = [m for m in msgs if m["speaker"] == source] or msgs
    best = max(own, key=lambda m: (len(said & set(words(m["text"]))), m["ts"]))
    return [best["msg_id"]]


@dataclass
class Verdict:
    """What one proposed action does (see the module docstring for the kinds)."""

    kind: VerdictKind
    reason: str | None = None
    action: dict[str, Any] | None = None
    entry_id: str | None = None
    repairs: tuple[str, ...] = ()
    #: the proposal as a Writer would have written it under the contract (canonical names,
    #: known utype, an UPDATE that became an ADD written as an ADD); None for rejects.
    proposal: dict[str, Any] | None = None

    @property
    def writes(self) -> bool:
        return self.kind == "write"


@dataclass
class Batch:
    """One writing position: what :func:`check_action` checks an output's actions against.

    ``heads`` are the current head records (dicts with ``entry_id``, ``owner``, ``source``,
    ``layer``, ``utype``, ``content``); ``messages`` the segment's messages (dicts with
    ``msg_id``, ``speaker``, ``text``, ``ts``); ``history_ids`` ids of earlier messages that
    may be cited beside a segment message. ``msg_ids`` None means the caller does not know
    the segment's messages: cited ``from_ids`` are then only shape-checked and provenance is
    not filled. ``new_id`` gives the id of each written record (default: the store's).
    """

    roster: tuple[str, ...]
    heads: tuple[dict[str, Any], ...] = ()
    aliases: Mapping[str, Iterable[str]] = field(default_factory=dict)
    messages: tuple[dict[str, Any], ...] = ()
    msg_ids: frozenset[str] | None = None
    history_ids: frozenset[str] = frozenset()
    max_actions: int = MIN_BUDGET
    group_id: str = ""
    segment_id: str = ""
    new_id: IdScheme = store_ids
    #: earlier messages (dicts as ``messages``) whose texts ground a record citing them
    history: tuple[dict[str, Any], ...] = ()
    #: check that contents are grounded in their evidence (:func:`grounding`); needs the
    #: messages' texts, so it applies only when ``msg_ids`` is known
    ground: bool = True
    # -- what earlier actions of this output did (filled by check_action) --
    written: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> normalised record
    moved: dict[str, str] = field(default_factory=dict)  # head updated here -> its new id
    keys: set[tuple[str, str, str]] = field(default_factory=set)  # (owner, layer, norm content)
    created: list[str] = field(default_factory=list)  # ids written, in order

    def __post_init__(self) -> None:
        self.people = _resolver(
            tuple(self.roster), tuple(sorted((k, tuple(v)) for k, v in dict(self.aliases).items()))
        )
        self.head_by_id = {h["entry_id"]: h for h in self.heads}
        self.head_keys = {(h["owner"], h["layer"], norm_text(h["content"])) for h in self.heads}

    @classmethod
    def from_segment(
        cls,
        segment: Any,
        *,
        heads: Iterable[dict[str, Any]] | None = None,
        new_id: IdScheme = store_ids,
    ) -> Batch:
        """The batch of a :class:`~speakerflow.ops.write.interfaces.Segment` (its heads unless
        ``heads`` is given)."""
        return cls(
            roster=tuple(segment.roster),
            heads=tuple(segment.heads if heads is None else heads),
            aliases=dict(segment.aliases),
            messages=tuple(segment.messages),
            msg_ids=frozenset(segment.msg_ids),
            history_ids=frozenset(segment.history_ids),
            max_actions=segment.max_actions,
            group_id=segment.group_id,
            segment_id=segment.segment_id,
            new_id=new_id,
            history=tuple(segment.history),
        )

    def message(self, msg_id: str) -> dict[str, Any] | None:
        """The segment or history message ``msg_id`` (``None`` if its text is not known)."""
        memo = self.__dict__.get("_by_id")
        if memo is None:
            memo = self.__dict__["_by_id"] = {
                m["msg_id"]: m for m in (*self.history, *self.messages)
            }
        return memo.get(msg_id)

    def target(self, eid: Any) -> dict[str, Any] | None:
        """The record an UPDATE of ``eid`` continues: the newest record of its chain."""
        eid = str(eid) if eid is not None else ""
        while eid in self.moved:
            eid = self.moved[eid]
        return self.written.get(eid) or self.head_by_id.get(eid)


@lru_cache(maxsize=256)
def _resolver(
    roster: tuple[str, ...], aliases: tuple[tuple[str, tuple[str, ...]], ...]
) -> PersonResolver:
    return PersonResolver(roster, dict(aliases))


def _reject(reason: str, repairs: list[str]) -> Verdict:
    return Verdict("reject", reason=reason, repairs=tuple(repairs))


def writer_form(action: Mapping[str, Any]) -> dict[str, Any]:
    """``action`` with only the fields a Writer writes (empty ones dropped)."""
    return {k: action[k] for k in WRITER_FIELDS if action.get(k) not in (None, "", [])}


def check_action(raw: Any, batch: Batch, position: int) -> Verdict:
    """The verdict of the ``position``-th proposed action ``raw`` of one output.

    ``raw`` is the parsed JSON value (normally a dict). A ``write`` verdict is recorded in
    ``batch``, so later actions of the output see it (duplicates, UPDATEs of it); call it
    once per action, in order.
    """
    repairs: list[str] = []
    shaped = _shaped(raw, batch, position, repairs)
    if isinstance(shaped, Verdict):
        return shaped
    raw, kind, content = shaped
    if kind == "UPDATE":
        updated = _update(raw, batch, content, repairs)
        if updated is not None:
            return updated
    placed = _placed(raw, batch, repairs)
    if isinstance(placed, Verdict):
        return placed
    owner, source, layer = placed
    if (owner, layer, norm_text(content)) in batch.head_keys:
        return Verdict(
            "duplicate",
            reason="duplicate of a current head (same owner, layer and content)",
            repairs=tuple(repairs),
        )
    return _finish(
        batch, raw, "ADD", owner, source, layer, raw.get("utype"), content, None, repairs
    )


def _shaped(
    raw: Any, batch: Batch, position: int, repairs: list[str]
) -> Verdict | tuple[dict[str, Any], str, str]:
    """``(raw, kind, content)`` of an ADD or UPDATE object with a content; else its verdict
    (over the limit, not an object, not an action, NOOP, no content)."""
    if position >= batch.max_actions:
        size = f" for {len(batch.messages)} message(s)" if batch.messages else ""
        return Verdict("truncated", reason=f"over the limit: max_actions={batch.max_actions}{size}")
    if isinstance(raw, dict) and set(raw) == {
        "_invalid"
    }:  # ChatWriter's marker for a non-object item
        raw = raw["_invalid"]
    if not isinstance(raw, dict):
        return _reject(f"shape: an action must be a JSON object, got {type(raw).__name__}", repairs)
    kind = str(raw.get("action", "")).strip().upper()
    if kind not in ("ADD", "UPDATE", "NOOP"):
        return _reject(f"action: {raw.get('action')!r} is not ADD, UPDATE or NOOP", repairs)
    if kind == "NOOP":
        return Verdict("noop", proposal={"action": "NOOP"})
    content = raw.get("content")
    if not isinstance(content, str) or not content.strip():
        return _reject("content: missing or empty; an action needs the memory text", repairs)
    return raw, kind, content.strip()


def _update(raw: dict[str, Any], batch: Batch, content: str, repairs: list[str]) -> Verdict | None:
    """The verdict of an UPDATE of a current head; ``None`` when it names no current head
    and carries owner, source and layer, so that it is checked as an ADD (``update_to_add``)."""
    head = batch.target(raw.get("entry_id"))
    if head is not None:
        if norm_text(head["content"]) == norm_text(content):
            return Verdict(
                "noop",
                reason="UPDATE changes nothing",
                proposal=writer_form({**raw, "action": "UPDATE"}),
            )
        return _finish(
            batch,
            raw,
            "UPDATE",
            head["owner"],
            _update_source(raw, batch, head, repairs),
            head["layer"],
            raw.get("utype") or head.get("utype"),
            content,
            head["entry_id"],
            repairs,
        )
    repairs.append("update_to_add")
    if not all(raw.get(k) for k in ("owner", "source", "layer")):
        return _reject(
            f"entry_id: {raw.get('entry_id')!r} is not a current head, and the action "
            "lacks owner/source/layer to be added instead",
            repairs,
        )
    return None


def _update_source(
    raw: dict[str, Any], batch: Batch, head: dict[str, Any], repairs: list[str]
) -> str:
    """The source of an UPDATE: the head's, or the person the action names when they are in
    the roster and say one of the cited messages of the segment (another person's correction:
    "it's 40, not 30"); a named source that fails this is dropped (``source_inherited``),
    never a reject."""
    named = raw.get("source")
    if not named:
        return str(head["source"])
    person = batch.people.resolve(str(named))
    if person is None or person == head["source"]:
        if person is None:
            repairs.append("source_inherited")
        return str(head["source"])
    cited = raw.get("from_ids")
    if not isinstance(cited, list):
        cited = []
    says = any(
        (m := batch.message(str(i))) is not None and m.get("speaker") == person for i in cited
    )
    if not says:
        repairs.append("source_inherited")
        return str(head["source"])
    return person


def _placed(
    raw: dict[str, Any], batch: Batch, repairs: list[str]
) -> Verdict | tuple[str, str, str]:
    """``(owner, source, layer)`` of an ADD, names resolved through the roster's aliases;
    else the verdict that refuses it (unknown person, unknown layer, owner unfit for it)."""
    raw_owner = str(raw.get("owner") or "")
    owner = (
        GROUP_OWNER if raw_owner.strip().upper() == GROUP_OWNER else batch.people.resolve(raw_owner)
    )
    if owner is None:
        return _reject(
            f"owner: {raw.get('owner')!r} is not in the roster {list(batch.roster)} nor GROUP",
            repairs,
        )
    source = batch.people.resolve(str(raw.get("source") or ""))
    if source is None:
        return _reject(
            f"source: {raw.get('source')!r} is not in the roster {list(batch.roster)}", repairs
        )
    if owner != raw.get("owner") or source != raw.get("source"):
        repairs.append("alias")
    layer = raw.get("layer")
    if layer not in LAYERS:
        return _reject(f"layer: {layer!r} is not one of {list(LAYERS)}", repairs)
    if layer in GROUP_LAYERS and owner != GROUP_OWNER:
        return _reject(f"owner: layer {layer} holds GROUP records, owner is {owner!r}", repairs)
    if layer in PERSON_LAYERS and owner == GROUP_OWNER:
        return _reject(f"owner: layer {layer} holds person records, owner is GROUP", repairs)
    return owner, source, layer


def _finish(
    batch: Batch,
    raw: dict[str, Any],
    kind: str,
    owner: str,
    source: str,
    layer: str,
    utype: Any,
    content: str,
    target: str | None,
    repairs: list[str],
) -> Verdict:
    cited = raw.get("from_ids")
    from_ids = _provenance(cited, batch, source, content, repairs)
    if isinstance(from_ids, Verdict):
        return from_ids
    if utype not in RECORD_TYPES:
        if utype is not None:
            repairs.append("utype_coerced")
        utype = "fact"
    event = raw.get("event") if isinstance(raw.get("event"), str) and raw["event"].strip() else None
    key = (owner, layer, norm_text(content))
    if key in batch.keys:
        return Verdict(
            "duplicate",
            reason="duplicate of an earlier action in this batch",
            repairs=tuple(repairs),
        )
    head = batch.target(target) if target is not None else None
    if batch.ground and batch.msg_ids is not None:
        cited_msgs = [m for m in (batch.message(i) for i in from_ids) if m is not None]
        evidence = [m.get("text") or "" for m in cited_msgs] + ([head["content"]] if head else [])
        g = grounding(
            content,
            evidence,
            [m.get("ts") for m in cited_msgs],
            [*batch.roster, *(a for al in dict(batch.aliases).values() for a in al)],
            counts=(len(cited_msgs), len({m.get("session_id") for m in cited_msgs})),
        )
        why = g.reason()
        if why is not None:
            return _reject(why, repairs)
    action = {
        "action": kind,
        "segment_id": batch.segment_id,
        "layer": layer,
        "owner": owner,
        "source": source,
        "utype": utype,
        "content": content,
        "event": event,
        "entry_id": target,
        "from_ids": from_ids,
    }
    new = batch.new_id(batch, action)
    batch.keys.add(key)
    batch.written[new] = {**action, "entry_id": new}
    if target is not None:
        batch.moved[target] = new
    batch.created.append(new)
    proposal = writer_form({**action, "from_ids": from_ids if cited else None})
    if kind == "UPDATE":  # a Writer names the record it continues; owner and layer are
        # inherited, and the source too unless another person says the new state
        drop = ["owner", "layer"]
        if head is None or head["source"] == source:
            drop.append("source")
        proposal = {k: v for k, v in proposal.items() if k not in drop}
    return Verdict("write", action=action, entry_id=new, repairs=tuple(repairs), proposal=proposal)


def _provenance(
    cited: Any, batch: Batch, source: str, content: str, repairs: list[str]
) -> Verdict | list[str]:
    """The message ids an action cites (each once, in order), checked against the segment;
    when it cites none, the source's best-matching message (``provenance_filled``)."""
    if not cited:
        repairs.append("provenance_filled")
        return fill_provenance(batch.messages, source, content)
    if not isinstance(cited, list) or not all(isinstance(c, str) for c in cited):
        return _reject("from_ids: must be a list of message ids", repairs)
    if batch.msg_ids is not None:
        outside = [c for c in cited if c not in batch.msg_ids and c not in batch.history_ids]
        if outside:
            return _reject(
                f"from_ids: {outside} are not messages of segment {batch.segment_id}", repairs
            )
        if not any(c in batch.msg_ids for c in cited):
            return _reject(
                f"from_ids: cite at least one message of segment {batch.segment_id} "
                "(earlier messages only beside it)",
                repairs,
            )
    return list(dict.fromkeys(cited))

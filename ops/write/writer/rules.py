"""The ``rules`` WriterBackend: deterministic extraction, the offline default.

Each message is split into sentences; each sentence that says something (questions,
greetings and acknowledgements are skipped) becomes at most one action, by the first rule
that fits:

1. decision ("let's go with", "it's settled", "we agreed", "final call", "decided" ...)
   -> owner GROUP, ``group_interaction``, utype ``decision``, source = the speaker;
2. norm ("we always", "everyone should", "the rule is" ...) -> GROUP ``group_insight``, ``norm``;
3. proposal for the group ("we should", "we need to" ...) -> GROUP ``group_interaction``,
   ``procedure``;
4. a statement about another roster member (named, possessive, or "you" in a reply to /
   an address of that member) -> ``per_speaker_profile``, owner = that member, source = speaker;
5. a first-person statement (or an elided subject: "Booked mine weeks ago") ->
   ``per_speaker_core``, owner = source = speaker; ``preference`` / ``stance`` / ``observation``
   (recurring behaviour) / ``fact`` by cue words;
6. any other substantive claim (2+ content words) -> ``per_speaker_core`` of the speaker;
7. a substantive question (3+ content words) -> an ``observation`` "asked: ..." of the asker
   (or a profile of the member it asks about: "asked: Did Jordan ever recover ...").

A short answer to a question addressed to the speaker is recorded with the question, so
"Every morning, 5k before work." becomes "Asked by Ben 'you still run every morning?', Chloe
answered: ...".

Content is the sentence with leading fillers and an opening vocative removed, the
first/second person rewritten in the third person (``I live`` -> ``Dev lives``) and the
owner dropped as opening subject, since the owner field says whom it is about (``lives in
Vienna now``); a self-report names its owner nowhere (``elide``), a view of another member
opens with its source (``attribute``: "Ana says Ben always books early"). Consecutive
statements of one message about its speaker become one record whatever the matter
(``message_merge``; single-valued matters and preferences stay apart), other consecutive
statements of one kind of matter too (joined with "; "); a person record needs two content
words (``min_topic_words``). The matter key
(:func:`~.rules_text.family`, topic words) is kept in the record's ``event`` so later
statements find the slot: same owner (for profiles also same source; for GROUP any source
and either group layer) and same matter -> UPDATE of that head (or of an ADD made earlier
in the same segment); a restatement that adds no new topic words or numbers -> nothing;
a recurring behaviour seen again -> UPDATE noting the new occurrence. Provenance is the
message the sentence came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from speakerflow.ops.text.people import PersonResolver
from speakerflow.ops.write.interfaces import Segment, WriterOutput
from speakerflow.ops.write.writer import consolidate as cs
from speakerflow.ops.write.writer import rules_text as rt
from speakerflow.ops.write.writer.rules_config import RulesConfig
from speakerflow.ops.write.writer.rules_content import (
    VIEWS,
    Slot,
    attributed,
    cap,
    day_str,
    last_clause,
    merge_statements,
    thread_content,
)
from speakerflow.ops.write.writer.rules_message import MessageReader
from speakerflow.ops.write.writer.rules_norms import NormWriter
from speakerflow.ops.write.writer.rules_revise import (
    MatterVectors,
    revised_slot,
    write_revision,
)
from speakerflow.ops.write.writer.rules_slots import SlotFinder, matter_key, parse_key
from speakerflow.schemas import GROUP_OWNER
from speakerflow.words import CHANGE_STATEMENT


@dataclass
class _Run:
    """What one segment's proposal reads and builds up, message by message."""

    segment: Segment
    people: PersonResolver
    exclude: set[str]
    known: list[dict[str, Any]]  # the history, then the segment's messages
    at: dict[str, int]  # msg id -> its position in ``known``
    stats: cs.WordStats
    slots: list[Slot]  # the heads, then the records made in this segment
    by_id: dict[str, dict[str, Any]]  # the segment's messages by id
    texts: dict[str, str]  # msg id -> text, of ``known``
    vectors: MatterVectors | None = None  # the revision test's message vectors
    actions: list[dict[str, Any]] = field(default_factory=list)
    # msg id -> (its GROUP action, topics)
    group_acts: dict[str, tuple[dict[str, Any], set[str]]] = field(default_factory=dict)
    # msg id of a GROUP action -> agreeing messages
    agreed: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _head_slot(head: dict[str, Any], exclude: set[str], at: dict[str, int]) -> Slot:
    """The slot of an existing head (its cited messages: those still known)."""
    fam, topics = parse_key(head.get("event"), head["content"], exclude)
    return Slot(
        head["entry_id"],
        head["owner"],
        head["source"],
        head["layer"],
        fam,
        topics,
        head["content"],
        [i for i in (head.get("from_ids") or []) if i in at],
        head.get("utype") or "fact",
    )


def _move(slot: Slot, topics: set[str], content: str, cited: list[str], key: str) -> None:
    """``slot`` now holds ``content`` on the matter ``key`` (its entry id is the caller's)."""
    slot.topics, slot.content, slot.from_ids = topics, content, cited
    slot.family = key.partition(":")[0]


class RulesWriter(SlotFinder):
    """Rule-based WriterBackend (see the module docstring for the rules)."""

    name = "rules"

    def __init__(self, **config: Any):
        self.config = RulesConfig(**config)
        self.reader = MessageReader(self.config)

    # -- WriterBackend ------------------------------------------------------------------
    def propose(self, segment: Segment) -> WriterOutput:
        run = self._start(segment)
        previous: dict[str, Any] | None = None
        for msg in segment.messages:
            self._read(run, msg, previous)
            previous = msg
        self._consensus(run)
        if self.config.norms:
            run.actions.extend(
                NormWriter(self.config, self.__dict__["_memo"]).norms(
                    segment, run.known, run.stats, run.people, run.slots
                )
            )
        if self.config.attribute:
            self._attribute(run)
        return WriterOutput(actions=run.actions[: segment.max_actions])

    def _start(self, segment: Segment) -> _Run:
        """The state of a segment's proposal before its first message."""
        exclude = {w.lower() for name in segment.roster for w in name.split()}
        known = [*segment.history, *segment.messages]
        at = {m["msg_id"]: i for i, m in enumerate(known)}
        return _Run(
            segment=segment,
            people=PersonResolver(segment.roster, segment.aliases),
            exclude=exclude,
            known=known,
            at=at,
            stats=cs.WordStats(known, exclude, self._words_memo(segment.group_id)),
            slots=[_head_slot(h, exclude, at) for h in segment.heads],
            by_id={m["msg_id"]: m for m in segment.messages},
            texts={m["msg_id"]: m["text"] for m in known},
            vectors=self._vectors(segment.group_id) if self.config.revise else None,
        )

    def _read(self, run: _Run, msg: dict[str, Any], previous: dict[str, Any] | None) -> None:
        """Write the statements of one message (``previous``: the message before it)."""
        target = run.by_id.get(msg.get("reply_to") or "") or previous
        if (
            target is not None
            and target["msg_id"] in run.group_acts
            and target["speaker"] != msg["speaker"]
            and cs.accepts(msg["text"])
        ):
            run.agreed.setdefault(target["msg_id"], []).append(msg)
        candidates = merge_statements(
            list(self.reader.actions(msg, previous, run.by_id, run.people, run.exclude)),
            self.config.message_merge,
        )
        for act, _, topics in candidates:
            if act["owner"] == GROUP_OWNER and msg["msg_id"] not in run.group_acts:
                run.group_acts[msg["msg_id"]] = (act, topics)
        revised = (
            revised_slot(
                msg,
                previous,
                run.slots,
                run.texts,
                run.stats,
                run.exclude,
                self.config.revise_similarity,
                run.vectors,
                self.config.revise_cosine,
            )
            if self.config.revise
            else None
        )
        if revised is not None:
            # a change of mind: the person's statements of this message update the record
            # they revise (its chain's head becomes the current view)
            candidates = write_revision(
                self.config,
                run.segment,
                msg,
                revised,
                candidates,
                run.actions,
                run.known,
                run.at,
                run.people,
            )
        for act, fam, topics in candidates:
            if not self._says_little(act, fam, topics):
                self._write(run, msg, act, fam, topics)

    def _says_little(self, act: dict[str, Any], fam: str, topics: set[str]) -> bool:
        """A person record too short, or with too few topic words, to be worth writing."""
        if act["owner"] == GROUP_OWNER:
            return False
        if self.config.min_record_words and (
            len(rt.words(act["content"])) < self.config.min_record_words
        ):
            return True
        # "Booked!", "Uncle Emmanuel is WRONG": one content word says too little;
        # a habit's verb and a view without a topic are exempt
        return (
            len(topics) < self.config.min_topic_words
            and fam not in rt.OPEN_TOPIC
            and fam != "habit"
        )

    def _write(
        self, run: _Run, msg: dict[str, Any], act: dict[str, Any], fam: str, topics: set[str]
    ) -> None:
        """Write one statement: into the slot it continues, else as a new record."""
        if act["utype"] == "decision":  # the proposal, objections and agreement that led to it
            argued = cs.discussion(
                run.known, run.at[msg["msg_id"]], topics, run.stats, self.config.decision_lookback
            )
            act["from_ids"] = cap(
                list(dict.fromkeys([*argued, *act["from_ids"]])),
                self.config.max_cited + 2,
                keep_first=True,
            )
        slot, thread = self._continued(run, msg, act, fam, topics)
        if slot is not None:
            if not thread and self._restates(slot, act["content"], topics, fam):
                return
            rest = self._continue(run, msg, act, fam, topics, slot, thread)
            if rest is None:
                return
            fam, topics = rest
        self._add(run, act, fam, topics)

    def _continued(
        self, run: _Run, msg: dict[str, Any], act: dict[str, Any], fam: str, topics: set[str]
    ) -> tuple[Slot | None, bool]:
        """The slot the statement continues (or None) and whether it is a thread."""
        slot = self._find_slot(run.slots, act, fam, topics)
        if (
            slot is not None
            and act["utype"] == "decision"
            and slot.source != act["source"]
            and fam not in rt.SINGLE_VALUED
        ):
            # a decision is the announcer's record, not an update of someone's proposal
            slot = None
        if slot is None and act["owner"] != GROUP_OWNER:
            slot = self._find_thread(run.slots, act, msg["msg_id"], topics, run.stats)
            return slot, slot is not None
        return slot, False

    def _continue(
        self,
        run: _Run,
        msg: dict[str, Any],
        act: dict[str, Any],
        fam: str,
        topics: set[str],
        slot: Slot,
        thread: bool,
    ) -> tuple[str, set[str]] | None:
        """Continue ``slot`` with the statement: join it to a record of this segment, or
        UPDATE the head (None: done); else the (family, topics) of this session's own record
        on the matter, citing the earlier messages."""
        from speakerflow.ops.write.upsert import add_entry_id

        segment = run.segment
        new_topics = (slot.topics | topics) if fam not in rt.SINGLE_VALUED else topics
        content = act["content"]
        decision = act["utype"] == "decision"
        cited = cap(
            list(dict.fromkeys([*slot.from_ids, *act["from_ids"]])),
            self.config.max_cited + 2 * decision,
            keep_first=decision,
        )
        key = matter_key(slot.family if thread else fam, new_topics)
        merged = (
            thread_content(slot.content, content, self.config.thread_clauses + 2)
            if last_clause(content) not in slot.content
            else slot.content
        )
        if slot.pending is not None and len(rt.words(merged)) <= self.config.merge_words:
            # the record was made in this segment: one record per person and matter per
            # segment, the statements joined (no chain inside one segment)
            slot.pending.update(content=merged, from_ids=cited, event=key)
            if decision or slot.utype == "fact":
                slot.pending["utype"] = slot.utype = act["utype"]
            _move(slot, new_topics, merged, cited, key)
            slot.entry_id = add_entry_id(
                segment.group_id, segment.segment_id, slot.owner, slot.layer, merged
            )
            return None
        before = run.known[run.at[slot.from_ids[-1]]]["ts"] if slot.from_ids else None
        change = (
            act["owner"] != GROUP_OWNER
            and bool(CHANGE_STATEMENT.search(content))
            and before is not None
        )
        if not self._supersedes(act, fam, slot, thread, change):
            # the matter continues in a new session: this session's own record, citing the
            # earlier messages on it (the earlier record stays a current head)
            act["from_ids"] = cap(
                list(dict.fromkeys([*slot.from_ids, *act["from_ids"]])),
                self.config.max_cited,
                keep_first=False,
            )
            return key.partition(":")[0], new_topics
        if change:
            content = f"{content} (before, {day_str(before)}: {last_clause(slot.content)})"
        elif thread:
            content = thread_content(slot.content, content, self.config.thread_clauses)
        elif fam == "habit":
            content = f"{content} (again, {day_str(msg['ts'])})"
        self._update(run, slot, act["utype"], content, key, cited, new_topics)
        return None

    def _supersedes(
        self, act: dict[str, Any], fam: str, slot: Slot, thread: bool, change: bool
    ) -> bool:
        """Whether the statement replaces an earlier session's head (an UPDATE) rather than
        starting this session's own record on the matter."""
        return slot.pending is None and (
            self.config.update_on == "continue"
            or change
            or fam in rt.SINGLE_VALUED
            or (fam == "habit" and not thread)  # a recurring behaviour seen again
            # a view moves: a new preference / stance on the matter replaces the earlier one
            or ((fam in rt.OPEN_TOPIC or act["utype"] in VIEWS) and slot.utype in VIEWS)
            or (act["utype"] == "decision" and slot.utype == "decision")
        )

    @staticmethod
    def _update(
        run: _Run,
        slot: Slot,
        utype: str,
        content: str,
        key: str,
        cited: list[str],
        topics: set[str],
    ) -> None:
        """Append the UPDATE of ``slot``'s head; the slot holds the new head."""
        from speakerflow.ops.write.upsert import entry_id

        run.actions.append(
            {
                "action": "UPDATE",
                "entry_id": slot.entry_id,
                "content": content,
                "utype": utype,
                "event": key,
                "from_ids": cited,
            }
        )
        _move(slot, topics, content, cited, key)
        slot.entry_id = entry_id(
            run.segment.group_id, run.segment.segment_id, "UPDATE", slot.entry_id, content
        )

    @staticmethod
    def _add(run: _Run, act: dict[str, Any], fam: str, topics: set[str]) -> None:
        """Append ``act`` as a new record and its slot, unless its owner's layer already
        holds it in the same words."""
        from speakerflow.ops.write.upsert import add_entry_id

        said = {act["content"], attributed(act["content"], act["source"])}
        if any(
            sl.owner == act["owner"] and sl.layer == act["layer"] and sl.content in said
            for sl in run.slots
        ):
            return  # said before in the same words: that record stands
        act["event"] = matter_key(fam, topics)
        run.actions.append(act)
        eid = add_entry_id(
            run.segment.group_id,
            run.segment.segment_id,
            act["owner"],
            act["layer"],
            act["content"],
        )
        run.slots.append(
            Slot(
                eid,
                act["owner"],
                act["source"],
                act["layer"],
                fam,
                topics,
                act["content"],
                list(act["from_ids"]),
                act["utype"],
                pending=act,
            )
        )

    def _consensus(self, run: _Run) -> None:
        """The agreement with each GROUP proposal of the segment: a consensus record (or, with
        ``consensus_record`` off, the proposal's record becomes the group's decision)."""
        for target_id, msgs in run.agreed.items():
            act, topics = run.group_acts[target_id]
            names = list(dict.fromkeys(m["speaker"] for m in msgs))
            agreeing = [m["msg_id"] for m in msgs]
            into = _proposal_record(run.actions, target_id)
            if not self.config.consensus_record and into is not None:
                # agreed: the proposal is what the group settled; its record cites the agreement
                into["from_ids"] = list(dict.fromkeys([*into["from_ids"], *agreeing]))
                into.update(utype="decision", layer="group_interaction")
                continue
            proposal = run.by_id[target_id]
            # in the cited messages' words (Validate refuses content they do not support)
            content = (
                f"{', '.join(names)} with {proposal['speaker']} ({day_str(proposal['ts'])}): "
                f"{act['content']}"
            )
            run.actions.append(
                {
                    "action": "ADD",
                    "owner": GROUP_OWNER,
                    "source": names[0],
                    "layer": "group_insight",
                    "utype": "stance",
                    "content": content,
                    "event": matter_key("consensus", topics),
                    "from_ids": [target_id, *agreeing],
                }
            )

    @staticmethod
    def _attribute(run: _Run) -> None:
        """Open each new view of another member with its source ('Ana says Ben ...') where
        the cited messages still ground it."""
        from speakerflow.ops.write.grounding import grounding

        for act in run.actions:
            if act["action"] != "ADD" or act["layer"] != "per_speaker_profile":
                continue
            content = attributed(act["content"], act["source"])
            evidence = [run.texts[i] for i in act["from_ids"] if i in run.texts]
            if grounding(content, evidence, names=run.segment.roster).reason() is None:
                act["content"] = content

    def _vectors(self, group_id: str) -> MatterVectors | None:
        """The revision test's message vectors of the group (None for ``revise_embedder``
        ``none``), kept across its segments; the model loads once per process, when first
        needed."""
        kind = self.config.revise_embedder
        if kind in ("", "none"):
            return None
        held = self.__dict__.get("_vectors_of")
        if held is None or held[0] != group_id:
            held = self.__dict__["_vectors_of"] = (group_id, MatterVectors(kind))
        return held[1]

    def _words_memo(self, group_id: str) -> dict[str, frozenset[str]]:
        """Content words per message id, kept across the segments of one group."""
        memo = self.__dict__.setdefault("_memo", {})
        if memo.get("group") != group_id:
            memo.clear()
            memo["group"], memo["words"] = group_id, {}
        return memo["words"]


def _proposal_record(actions: list[dict[str, Any]], target_id: str) -> dict[str, Any] | None:
    """The GROUP record a proposal went into (the newest ADD of this segment citing it)."""
    return next(
        (
            a
            for a in reversed(actions)
            if target_id in (a.get("from_ids") or [])
            and a["action"] == "ADD"
            and a.get("owner") == GROUP_OWNER
        ),
        None,
    )

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

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from speakerflow.ops.text.people import PersonResolver
from speakerflow.ops.write.interfaces import Segment, WriterOutput
from speakerflow.ops.write.writer import consolidate as cs
from speakerflow.ops.write.writer import rules_text as rt
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
from speakerflow.ops.write.writer.rules_revise import revised_slot, write_revision
from speakerflow.ops.write.writer.rules_slots import SlotFinder, matter_key, parse_key
from speakerflow.schemas import GROUP_OWNER
from speakerflow.words import CHANGE_STATEMENT


class RulesConfig(BaseModel):
    """Knobs of the rules Writer."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    min_topic_words: int = Field(
        default=2,
        ge=0,
        description="content words a person record needs (its message's statements about one "
        "person together; one says too little: 'Booked!', 'Uncle Emmanuel is WRONG'); each "
        "statement needs one",
    )
    min_claim_words: int = Field(
        default=2, ge=0, description="content words an unattributed claim needs (rule 6)"
    )
    slot_overlap: float = Field(
        default=1 / 3, ge=0.0, le=1.0, description="topic Jaccard to continue a slot"
    )
    min_question_words: int = Field(
        default=3, ge=0, description="content words a question needs to be recorded"
    )
    short_answer_words: int = Field(
        default=14, ge=1, description="an answer this short is stored with its question"
    )
    # consolidation (records spanning messages)
    thread_similarity: float = Field(
        default=0.15,
        ge=0.0,
        le=1.0,
        description="IDF-weighted word similarity (with a shared rare word) that continues a "
        "thread",
    )
    thread_clauses: int = Field(
        default=3, ge=1, description="statements a thread record keeps in its content (newest)"
    )
    max_cited: int = Field(
        default=8,
        ge=1,
        description="messages a record cites at most: the newest (a decision "
        "two more: its proposal and the newest); older ones stay cited by the chain's earlier "
        "records",
    )
    decision_lookback: int = Field(
        default=10,
        ge=0,
        description="messages of the session before a decision searched for its discussion",
    )
    norms: bool = Field(
        default=True, description="write recurring-activity norms (who keeps / misses them)"
    )
    min_norm_sessions: int = Field(
        default=2, ge=1, description="sessions an activity must come up in to be a norm"
    )
    min_record_words: int = Field(
        default=4,
        ge=0,
        description="words a person record's content needs (shorter ones "
        "say too little to be worth a record; the message stays in System 1)",
    )
    update_on: str = Field(
        default="change",
        pattern="^(change|continue)$",
        description="when a statement continuing an earlier session's record supersedes it: "
        "'change' only when the state changes (a change cue, a single-valued matter, a later "
        "decision); other continuations become this session's own record citing the earlier "
        "messages. 'continue': every continuation is an UPDATE (the thread is one chain)",
    )
    consensus_record: bool = Field(
        default=True,
        description="write agreement with a group proposal as a separate "
        "record ('Ben, Chloe with Ana (date): ...'); else the proposal itself becomes "
        "the group's decision, citing the agreeing messages",
    )
    merge_words: int = Field(
        default=22,
        ge=0,
        description="words a record merged from one segment's statements "
        "may reach; a statement that would make it longer starts its own record",
    )
    questions: bool = Field(
        default=True, description="record substantive questions as 'asked: ...' observations"
    )
    elide: bool = Field(
        default=True,
        description="a self-report does not repeat its owner's name ('team is at eight', not "
        "'Mei's team is at eight'): the owner field says whose it is",
    )
    message_merge: bool = Field(
        default=False,
        description="a person's consecutive statements about themselves in one message are one "
        "record whatever the matter (SpeakerLevenshtein +0.004, but LoCoMo dev recall@10 -0.005 "
        "with attribute on: off by default)",
    )
    revise: bool = Field(
        default=True,
        description="a later message of a person that revises their record on the same matter "
        "(rules_revise: words shared with the record's messages, and a change word, moved "
        "numbers, a negated word of it or a turned stance) becomes an UPDATE of it",
    )
    revise_similarity: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="IDF-weighted word similarity (with a shared rare word) between a message "
        "(read with the one before it) and a record's messages for a revision",
    )
    attribute: bool = Field(
        default=True,
        description="a view of another member opens with its source ('Ana says Ben ...', "
        "'Ana asks ...'): the record's owner is whom it is about, its words say who holds it",
    )


class RulesWriter(SlotFinder):
    """Rule-based WriterBackend (see the module docstring for the rules)."""

    name = "rules"

    def __init__(self, **config: Any):
        self.config = RulesConfig(**config)
        self.reader = MessageReader(self.config)

    # -- WriterBackend ------------------------------------------------------------------
    def propose(self, segment: Segment) -> WriterOutput:
        from speakerflow.ops.write.upsert import add_entry_id, entry_id

        people = PersonResolver(segment.roster, segment.aliases)
        exclude = {w.lower() for name in segment.roster for w in name.split()}
        known = [*segment.history, *segment.messages]
        at = {m["msg_id"]: i for i, m in enumerate(known)}
        stats = cs.WordStats(known, exclude, self._words_memo(segment.group_id))
        slots = []
        for h in segment.heads:
            fam, topics = parse_key(h.get("event"), h["content"], exclude)
            slots.append(
                Slot(
                    h["entry_id"],
                    h["owner"],
                    h["source"],
                    h["layer"],
                    fam,
                    topics,
                    h["content"],
                    [i for i in (h.get("from_ids") or []) if i in at],
                    h.get("utype") or "fact",
                )
            )
        by_id = {m["msg_id"]: m for m in segment.messages}
        texts = {m["msg_id"]: m["text"] for m in known}
        actions: list[dict[str, Any]] = []
        previous: dict[str, Any] | None = None
        group_acts: dict[
            str, tuple[dict[str, Any], set[str]]
        ] = {}  # msg id -> (its GROUP action, topics)
        agreed: dict[
            str, list[dict[str, Any]]
        ] = {}  # msg id of a GROUP action -> agreeing messages
        for msg in segment.messages:
            target = by_id.get(msg.get("reply_to") or "") or previous
            if (
                target is not None
                and target["msg_id"] in group_acts
                and target["speaker"] != msg["speaker"]
                and cs.accepts(msg["text"])
            ):
                agreed.setdefault(target["msg_id"], []).append(msg)
            candidates = merge_statements(
                list(self.reader.actions(msg, previous, by_id, people, exclude)),
                self.config.message_merge,
            )
            for act, _, topics in candidates:
                if act["owner"] == GROUP_OWNER and msg["msg_id"] not in group_acts:
                    group_acts[msg["msg_id"]] = (act, topics)
            revised = (
                revised_slot(
                    msg, previous, slots, texts, stats, exclude, self.config.revise_similarity
                )
                if self.config.revise
                else None
            )
            previous = msg
            if revised is not None:
                # a change of mind: the person's statements of this message update the record
                # they revise (its chain's head becomes the current view)
                candidates = write_revision(
                    self.config, segment, msg, revised, candidates, actions, known, at
                )
            for act, fam, topics in candidates:
                if act["owner"] != GROUP_OWNER and (
                    (
                        self.config.min_record_words
                        and len(rt.words(act["content"])) < self.config.min_record_words
                    )
                    # "Booked!", "Uncle Emmanuel is WRONG": one content word says too little;
                    # a habit's verb and a view without a topic are exempt
                    or (
                        len(topics) < self.config.min_topic_words
                        and fam not in rt.OPEN_TOPIC
                        and fam != "habit"
                    )
                ):
                    continue
                if (
                    act["utype"] == "decision"
                ):  # the proposal, objections and agreement that led to it
                    argued = cs.discussion(
                        known, at[msg["msg_id"]], topics, stats, self.config.decision_lookback
                    )
                    act["from_ids"] = cap(
                        list(dict.fromkeys([*argued, *act["from_ids"]])),
                        self.config.max_cited + 2,
                        keep_first=True,
                    )
                slot = self._find_slot(slots, act, fam, topics)
                if (
                    slot is not None
                    and act["utype"] == "decision"
                    and slot.source != act["source"]
                    and fam not in rt.SINGLE_VALUED
                ):
                    # a decision is the announcer's record, not an update of someone's proposal
                    slot = None
                thread = False
                if slot is None and act["owner"] != GROUP_OWNER:
                    slot = self._find_thread(slots, act, msg["msg_id"], topics, stats)
                    thread = slot is not None
                if slot is not None:
                    if not thread and self._restates(slot, act["content"], topics, fam):
                        continue
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
                    if (
                        slot.pending is not None
                        and len(rt.words(merged)) <= self.config.merge_words
                    ):
                        # the record was made in this segment: one record per person and matter per
                        # segment, the statements joined (no chain inside one segment)
                        content = merged
                        slot.pending.update(content=content, from_ids=cited, event=key)
                        if act["utype"] == "decision" or slot.utype == "fact":
                            slot.pending["utype"] = slot.utype = act["utype"]
                        slot.topics, slot.content, slot.from_ids = new_topics, content, cited
                        slot.family = key.partition(":")[0]
                        slot.entry_id = add_entry_id(
                            segment.group_id, segment.segment_id, slot.owner, slot.layer, content
                        )
                        continue
                    before = known[at[slot.from_ids[-1]]]["ts"] if slot.from_ids else None
                    change = (
                        act["owner"] != GROUP_OWNER
                        and bool(CHANGE_STATEMENT.search(content))
                        and before is not None
                    )
                    supersedes = slot.pending is None and (
                        self.config.update_on == "continue"
                        or change
                        or fam in rt.SINGLE_VALUED
                        or (fam == "habit" and not thread)  # a recurring behaviour seen again
                        # a view moves: a new preference / stance on the matter replaces the earlier
                        # one
                        or ((fam in rt.OPEN_TOPIC or act["utype"] in VIEWS) and slot.utype in VIEWS)
                        or (decision and slot.utype == "decision")
                    )
                    if not supersedes:
                        # the matter continues in a new session: this session's own record, citing
                        # the
                        # earlier messages on it (the earlier record stays a current head)
                        act["from_ids"] = cap(
                            list(dict.fromkeys([*slot.from_ids, *act["from_ids"]])),
                            self.config.max_cited,
                            keep_first=False,
                        )
                        topics, fam = new_topics, key.partition(":")[0]
                    else:
                        if change:
                            old = last_clause(slot.content)
                            content = f"{content} (before, {day_str(before)}: {old})"
                        elif thread:
                            content = thread_content(
                                slot.content, content, self.config.thread_clauses
                            )
                        elif fam == "habit":
                            content = f"{content} (again, {day_str(msg['ts'])})"
                        actions.append(
                            {
                                "action": "UPDATE",
                                "entry_id": slot.entry_id,
                                "content": content,
                                "utype": act["utype"],
                                "event": key,
                                "from_ids": cited,
                            }
                        )
                        slot.topics, slot.content, slot.from_ids = new_topics, content, cited
                        slot.family = key.partition(":")[0]
                        slot.entry_id = entry_id(
                            segment.group_id, segment.segment_id, "UPDATE", slot.entry_id, content
                        )
                        continue
                said = {act["content"], attributed(act["content"], act["source"])}
                if any(
                    sl.owner == act["owner"] and sl.layer == act["layer"] and sl.content in said
                    for sl in slots
                ):
                    continue  # said before in the same words: that record stands
                act["event"] = matter_key(fam, topics)
                actions.append(act)
                eid = add_entry_id(
                    segment.group_id, segment.segment_id, act["owner"], act["layer"], act["content"]
                )
                slots.append(
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
        for target_id, msgs in agreed.items():
            act, topics = group_acts[target_id]
            names = list(dict.fromkeys(m["speaker"] for m in msgs))
            agreeing = [m["msg_id"] for m in msgs]
            # the record the proposal went into (made or updated in this segment)
            into = next(
                (
                    a
                    for a in reversed(actions)
                    if target_id in (a.get("from_ids") or [])
                    and a["action"] == "ADD"
                    and a.get("owner") == GROUP_OWNER
                ),
                None,
            )
            if not self.config.consensus_record and into is not None:
                # agreed: the proposal is what the group settled; its record cites the agreement
                into["from_ids"] = list(dict.fromkeys([*into["from_ids"], *agreeing]))
                into.update(utype="decision", layer="group_interaction")
                continue
            proposal = by_id[target_id]
            # in the cited messages' words (Validate refuses content they do not support)
            content = (
                f"{', '.join(names)} with {proposal['speaker']} ({day_str(proposal['ts'])}): "
                f"{act['content']}"
            )
            actions.append(
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
        if self.config.norms:
            actions.extend(
                NormWriter(self.config, self.__dict__["_memo"]).norms(
                    segment, known, stats, people, slots
                )
            )
        if self.config.attribute:
            from speakerflow.ops.write.grounding import grounding

            texts = {m["msg_id"]: m["text"] for m in known}
            for act in actions:
                if act["action"] != "ADD" or act["layer"] != "per_speaker_profile":
                    continue
                content = attributed(act["content"], act["source"])
                evidence = [texts[i] for i in act["from_ids"] if i in texts]
                if grounding(content, evidence, names=segment.roster).reason() is None:
                    act["content"] = content
        return WriterOutput(actions=actions[: segment.max_actions])

    def _words_memo(self, group_id: str) -> dict[str, frozenset[str]]:
        """Content words per message id, kept across the segments of one group."""
        memo = self.__dict__.setdefault("_memo", {})
        if memo.get("group") != group_id:
            memo.clear()
            memo["group"], memo["words"] = group_id, {}
        return memo["words"]

    # -- consolidation ------------------------------------------------------------------

    # -- one message -> candidate ADDs -----------------------------------------------------

    # -- slots --------------------------------------------------------------------------

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

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from speakerflow.ops.text.people import PersonResolver
from speakerflow.ops.text.temporal import describe as describe_time
from speakerflow.ops.text.temporal import resolve as resolve_time
from speakerflow.ops.write.interfaces import Segment, WriterOutput
from speakerflow.ops.write.writer import consolidate as cs
from speakerflow.ops.write.writer import rules_text as rt
from speakerflow.schemas import GROUP_OWNER


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
    attribute: bool = Field(
        default=True,
        description="a view of another member opens with its source ('Ana says Ben ...', "
        "'Ana asks ...'): the record's owner is whom it is about, its words say who holds it",
    )


@dataclass
class _Slot:
    """A head the Writer can continue: an existing record or an ADD made in this segment."""

    entry_id: str
    owner: str
    source: str
    layer: str
    family: str
    topics: set[str]
    content: str
    from_ids: list[str] = field(default_factory=list)
    utype: str = "fact"
    #: the ADD action when the record is made in this segment (continuations merge into it)
    pending: dict[str, Any] | None = None


def matter_key(fam: str, topics: set[str]) -> str:
    return f"{fam}:{' '.join(sorted(topics)[:10])}"


def parse_key(event: str | None, content: str, exclude: set[str]) -> tuple[str, set[str]]:
    """(family, topics) of a head: from its ``event`` key, else computed from its content."""
    if event and ":" in event:
        fam, _, topics = event.partition(":")
        return fam, set(topics.split())
    return rt.family(content), rt.topic_words(content, exclude)


class RulesWriter:
    """Rule-based WriterBackend (see the module docstring for the rules)."""

    name = "rules"

    def __init__(self, **config: Any):
        self.config = RulesConfig(**config)

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
                _Slot(
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
            candidates = _merge(
                list(self._message_actions(msg, previous, by_id, people, exclude)),
                self.config.message_merge,
            )
            for act, _, topics in candidates:
                if act["owner"] == GROUP_OWNER and msg["msg_id"] not in group_acts:
                    group_acts[msg["msg_id"]] = (act, topics)
            previous = msg
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
                    act["from_ids"] = _cap(
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
                    cited = _cap(
                        list(dict.fromkeys([*slot.from_ids, *act["from_ids"]])),
                        self.config.max_cited + 2 * decision,
                        keep_first=decision,
                    )
                    key = matter_key(slot.family if thread else fam, new_topics)
                    merged = (
                        _thread_content(slot.content, content, self.config.thread_clauses + 2)
                        if _last_clause(content) not in slot.content
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
                        and bool(rt.CHANGE.search(content))
                        and before is not None
                    )
                    supersedes = slot.pending is None and (
                        self.config.update_on == "continue"
                        or change
                        or fam in rt.SINGLE_VALUED
                        or (fam == "habit" and not thread)  # a recurring behaviour seen again
                        # a view moves: a new preference / stance on the matter replaces the earlier
                        # one
                        or (
                            (fam in rt.OPEN_TOPIC or act["utype"] in _VIEWS)
                            and slot.utype in _VIEWS
                        )
                        or (decision and slot.utype == "decision")
                    )
                    if not supersedes:
                        # the matter continues in a new session: this session's own record, citing
                        # the
                        # earlier messages on it (the earlier record stays a current head)
                        act["from_ids"] = _cap(
                            list(dict.fromkeys([*slot.from_ids, *act["from_ids"]])),
                            self.config.max_cited,
                            keep_first=False,
                        )
                        topics, fam = new_topics, key.partition(":")[0]
                    else:
                        if change:
                            content = (
                                f"{content} (before, {_day(before)}: {_last_clause(slot.content)})"
                            )
                        elif thread:
                            content = _thread_content(
                                slot.content, content, self.config.thread_clauses
                            )
                        elif fam == "habit":
                            content = f"{content} (again, {_day(msg['ts'])})"
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
                said = {act["content"], _attributed(act["content"], act["source"])}
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
                    _Slot(
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
                f"{', '.join(names)} with {proposal['speaker']} ({_day(proposal['ts'])}): "
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
            actions.extend(self._norms(segment, known, stats, people, slots))
        if self.config.attribute:
            from speakerflow.ops.write.contract import grounding

            texts = {m["msg_id"]: m["text"] for m in known}
            for act in actions:
                if act["action"] != "ADD" or act["layer"] != "per_speaker_profile":
                    continue
                content = _attributed(act["content"], act["source"])
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
    def _find_thread(
        self,
        slots: list[_Slot],
        act: dict[str, Any],
        msg_id: str,
        topics: set[str],
        stats: cs.WordStats,
    ) -> _Slot | None:
        """The newest head of the same owner, source and layer whose messages this statement
        continues."""
        if not topics:
            return None
        for slot in reversed(slots):
            if (slot.owner, slot.source, slot.layer) != (act["owner"], act["source"], act["layer"]):
                continue
            if slot.from_ids and stats.linked(
                msg_id, topics, slot.from_ids, self.config.thread_similarity
            ):
                return slot
        return None

    def _norms(
        self,
        segment: Segment,
        known: list[dict[str, Any]],
        stats: cs.WordStats,
        people: PersonResolver,
        slots: list[_Slot],
    ) -> list[dict[str, Any]]:
        """GROUP norms from recurring activities: who keeps taking part, who keeps missing them.

        An activity is a content word of a message saying someone is not taking part
        ("Not coming to pottery today") that the group talks about in at least
        ``min_norm_sessions`` sessions. One record per activity (``event`` ``recurring:<word>``),
        updated whenever a later segment adds an absence; it cites the absences and the
        latest plans.
        """
        from speakerflow.ops.write.upsert import add_entry_id, entry_id

        memo = self.__dict__["_memo"].setdefault("cues", {})
        for m in known:
            if m["msg_id"] not in memo:
                memo[m["msg_id"]] = (
                    cs.is_plan(m["text"]),
                    bool(cs.ABSENCE.search(m["text"])) and not rt.is_question(m["text"]),
                )
        plan_sessions: dict[
            str, set[str]
        ] = {}  # content word of plans -> sessions it is planned in
        session_plans: dict[str, Counter[str]] = {}  # session -> its plan words
        for m in known:
            if memo[m["msg_id"]][0]:
                ws = cs.activity_words(stats.words.get(m["msg_id"], frozenset()))
                session_plans.setdefault(m["session_id"], Counter()).update(ws)
                for w in ws:
                    plan_sessions.setdefault(w, set()).add(m["session_id"])
        said_sessions: dict[str, set[str]] = {}  # any content word -> sessions it is said in
        session_words: dict[str, Counter[str]] = {}
        for m in known:
            ws = cs.activity_words(stats.words.get(m["msg_id"], frozenset()))
            session_words.setdefault(m["session_id"], Counter()).update(ws)
            for w in ws:
                said_sessions.setdefault(w, set()).add(m["session_id"])
        # planned at least once, talked about in several sessions
        recurring = {
            w for w in plan_sessions if len(said_sessions[w]) >= self.config.min_norm_sessions
        }
        acts: dict[str, list[dict[str, Any]]] = {}
        for m in segment.messages:
            if not cs.ABSENCE.search(m["text"]) or rt.is_question(m["text"]):
                continue
            own = [
                w
                for w in cs.activity_words(stats.words.get(m["msg_id"], frozenset()))
                if w in recurring
            ]
            here = session_plans.get(m["session_id"], Counter())
            talk = session_words.get(m["session_id"], Counter())
            # the activity it names, else what its session is about ("Not coming. Riding." on brunch
            # day)
            cands = own or [w for w in talk if w in recurring]
            if cands:
                word = max(
                    cands,
                    key=lambda w: (
                        w in own,
                        len(plan_sessions[w]),
                        here.get(w, 0),
                        talk.get(w, 0),
                        -stats.df[w],
                        w,
                    ),
                )
                acts.setdefault(word, []).append(m)
        out = []
        for word in sorted(acts):
            absent: dict[str, list[str]] = {}
            callouts: list[str] = []
            plans: list[dict[str, Any]] = []
            named = {m["msg_id"] for ms in acts.values() for m in ms}
            last_absent: dict[str, Any] = {}
            reasons: list[
                str
            ] = []  # the absentee's own reply to being called out (their explanation)
            waiting: dict[str, Any] = {}
            for m in known:
                said = stats.words.get(m["msg_id"], frozenset())
                plan, absence = memo[m["msg_id"]]
                if waiting and (m["session_id"] != waiting["session"] or waiting["left"] <= 0):
                    waiting = {}
                if waiting and m["speaker"] == waiting["who"] and not absence:
                    reasons.append(m["msg_id"])
                    waiting = {}
                elif waiting:
                    waiting["left"] -= 1
                if absence and (word in said or m["msg_id"] in named):
                    who = self._absentee(m, people)
                    absent.setdefault(who, []).append(m["msg_id"])
                    last_absent = {"session": m["session_id"], "who": who}
                    if who != m["speaker"]:
                        waiting = {"session": m["session_id"], "who": who, "left": 4}
                elif (
                    last_absent.get("session") == m["session_id"]
                    and cs.CALLOUT.search(m["text"])
                    and m["speaker"] != last_absent["who"]
                ):  # "Jordan!! this is like the third time"
                    absent[last_absent["who"]].append(m["msg_id"])
                    callouts.append(m["msg_id"])
                elif word in said and plan:
                    plans.append(m)
            keep = [p for p in dict.fromkeys(m["speaker"] for m in plans) if p not in absent]
            missed = ", ".join(
                f"{p} ({len(ids)}x)" if len(ids) > 1 else p for p, ids in absent.items()
            )
            # the latest absences and the latest call-out (a record's messages are cited together)
            absences = sorted(
                (i for ids in absent.values() for i in ids if i not in callouts),
                key=lambda i: stats_order(i, known),
            )
            cited = sorted(
                {*absences[-self.config.max_cited :], *callouts[-1:], *reasons[-1:]},
                key=lambda i: stats_order(i, known),
            )
            if not any(i in segment.msg_ids for i in cited):
                continue
            # in the cited messages' own words (Validate refuses content its messages do not
            # support):
            # the activity, who missed it and how they said so ("not coming", "skipped")
            by_id_known = {m["msg_id"]: m for m in known}
            cues = list(
                dict.fromkeys(
                    c.group(0).lower()
                    for i in cited
                    for c in [cs.ABSENCE.search(by_id_known[i]["text"])]
                    if c
                )
            )
            content = (
                f"{word}: {missed}"
                + (f" ({', '.join(cues[-3:])})" if cues else "")
                + (f"; with {', '.join(keep)}" if keep else "")
            )
            source = acts[word][-1]["speaker"]
            key = f"recurring:{word}"
            slot = next(
                (
                    s
                    for s in reversed(slots)
                    if s.owner == GROUP_OWNER and s.family == "recurring" and s.topics == {word}
                ),
                None,
            )
            if slot is not None:
                if slot.content == content:
                    continue
                out.append(
                    {
                        "action": "UPDATE",
                        "entry_id": slot.entry_id,
                        "content": content,
                        "utype": "norm",
                        "event": key,
                        "from_ids": cited,
                    }
                )
                slot.entry_id = entry_id(
                    segment.group_id, segment.segment_id, "UPDATE", slot.entry_id, content
                )
                slot.content, slot.from_ids = content, cited
                continue
            out.append(
                {
                    "action": "ADD",
                    "owner": GROUP_OWNER,
                    "source": source,
                    "layer": "group_insight",
                    "utype": "norm",
                    "content": content,
                    "event": key,
                    "from_ids": cited,
                }
            )
            eid = add_entry_id(
                segment.group_id, segment.segment_id, GROUP_OWNER, "group_insight", content
            )
            slots.append(
                _Slot(
                    eid, GROUP_OWNER, source, "group_insight", "recurring", {word}, content, cited
                )
            )
        return out

    @staticmethod
    def _absentee(msg: dict[str, Any], people: PersonResolver) -> str:
        """Who is not taking part: a member the message names ("Ravi skipped again"), else the
        speaker."""
        named = [n for n, _, _ in people.mentions(msg["text"]) if n != msg["speaker"]]
        return named[0] if named else msg["speaker"]

    # -- one message -> candidate ADDs -----------------------------------------------------
    def _message_actions(
        self,
        msg: dict[str, Any],
        previous: dict[str, Any] | None,
        by_id: dict[str, Any],
        people: PersonResolver,
        exclude: set[str],
    ):
        speaker = msg["speaker"]
        asked = self._question_for(msg, previous, by_id, people)
        text = msg["text"]
        if (
            asked is not None
            and len(rt.words(text)) <= self.config.short_answer_words
            and not text.rstrip().endswith("?")
        ):
            asker, question, asked_id = asked
            question = (
                re.sub(rf"^\W*{re.escape(speaker)}\W+", "", question) or question
            )  # drop "Chloe, "
            q = rt.third_person(rt.strip_filler(question), asker, addressee=speaker)
            answer = rt.third_person(rt.strip_filler(text) or text, speaker)
            content = f'Asked by {asker} "{q}", {speaker} answered: {answer}'
            topics = rt.topic_words(f"{question} {text}", exclude)
            if topics or rt.words(answer):
                act = self._add(speaker, speaker, "per_speaker_core", _utype(text), content, msg)
                act["from_ids"] = [
                    asked_id,
                    msg["msg_id"],
                ]  # the question is half of what the record says
                yield act, rt.family(text + " " + question), topics
            return
        addressee, named = self._addressee(msg, previous, by_id, people)
        for raw in rt.sentences(text):
            sent = rt.strip_filler(raw)
            asking = rt.is_question(raw) or rt.is_question(sent)
            voc = _VOCATIVE.match(sent)
            if voc and (who := people.resolve(voc.group(1))) and who != speaker:
                addressee, named, sent = who, True, sent[voc.end() :]
                sent = sent[:1].upper() + sent[1:]
                asking = asking or rt.is_question(sent)
            elif (lead := _LEAD_NAME.match(sent)) and (
                (who := people.resolve(lead.group(1))) or lead.group(1).lower() in _KIN
            ):
                # "Adaora I will be making egusi", "Mum there will be enough food": a vocative,
                # not the subject
                if who and who != speaker:
                    addressee, named = who, True
                if who != speaker:
                    sent = sent[lead.end() :]
            you = (
                named or bool(re.search(r"\b(you|your|you're|you've|yours)\b", sent, re.I))
            ) and not _GENERIC_YOU.search(sent)
            if asking:  # a question says what the asker wants to know or cares about
                if not self.config.questions:
                    continue
                topics = rt.topic_words(sent, exclude)
                if len(topics) >= self.config.min_question_words:
                    target = self._about(sent, speaker, addressee if you else None, people)
                    opening = people.mentions(sent[:40])  # "Priya, how's the practice going?"
                    if (
                        target is None
                        and opening
                        and opening[0][1] < 2
                        and opening[0][0] != speaker
                    ):
                        target = opening[0][0]
                    owner, layer = (
                        (target, "per_speaker_profile") if target else (speaker, "per_speaker_core")
                    )
                    content = rt.third_person(
                        sent, speaker, addressee=target if target == addressee else None
                    )
                    content = "asked: " + content
                    yield (
                        self._add(owner, speaker, layer, "observation", content, msg),
                        "asked",
                        topics,
                    )
                continue
            topics = rt.topic_words(sent, exclude)
            fam = rt.family(sent)
            # "Either works for me" is a stance and "I'll book mine, as usual" a habit, though short
            # a sentence needs a content word; the record a message's statements make needs
            # min_topic_words (checked in propose, after the statements are merged)
            needed = 0 if fam in rt.OPEN_TOPIC and rt.first_person(sent) else 1
            if not sent or len(topics) < needed:
                continue
            replying = (by_id.get(msg.get("reply_to") or "") or previous or {}).get(
                "speaker"
            ) not in (None, speaker)
            if rt.DECISION.search(sent) or (replying and cs.concludes(sent)):
                yield (
                    self._add(
                        GROUP_OWNER,
                        speaker,
                        "group_interaction",
                        "decision",
                        _said(sent, speaker),
                        msg,
                    ),
                    fam,
                    topics,
                )
            elif rt.NORM.search(sent):
                yield (
                    self._add(
                        GROUP_OWNER, speaker, "group_insight", "norm", _said(sent, speaker), msg
                    ),
                    fam,
                    topics,
                )
            elif rt.PROPOSAL.search(sent):
                yield (
                    self._add(
                        GROUP_OWNER,
                        speaker,
                        "group_interaction",
                        "procedure",
                        rt.third_person(sent, speaker),
                        msg,
                    ),
                    fam,
                    topics,
                )
            elif rt.PLAN.search(sent):
                yield (
                    self._add(
                        GROUP_OWNER,
                        speaker,
                        "group_interaction",
                        "procedure",
                        _said(sent, speaker),
                        msg,
                    ),
                    fam,
                    topics,
                )
            elif (
                target := self._about(sent, speaker, addressee if you else None, people)
            ) is not None:
                content = rt.third_person(
                    sent, speaker, addressee=target if target == addressee else None
                )
                yield (
                    self._add(
                        target,
                        speaker,
                        "per_speaker_profile",
                        _utype(sent, profile=True),
                        content,
                        msg,
                    ),
                    fam,
                    topics,
                )
            elif rt.first_person(sent):
                yield (
                    self._add(
                        speaker,
                        speaker,
                        "per_speaker_core",
                        _utype(sent),
                        rt.elided_to_third(sent, speaker),
                        msg,
                    ),
                    fam,
                    topics,
                )
            elif len(topics) >= self.config.min_claim_words:
                yield (
                    self._add(
                        speaker,
                        speaker,
                        "per_speaker_core",
                        _utype(sent),
                        f"{speaker} says: {sent}",
                        msg,
                    ),
                    fam,
                    topics,
                )

    def _add(
        self, owner: str, source: str, layer: str, utype: str, content: str, msg: dict[str, Any]
    ) -> dict[str, Any]:
        elide = self.config.elide
        return {
            "action": "ADD",
            "owner": owner,
            "source": source,
            "layer": layer,
            "utype": utype,
            "content": dated(
                _concise(content, owner, source, elide, self.config.attribute), msg.get("ts")
            ),
            "from_ids": [msg["msg_id"]],
        }

    @staticmethod
    def _about(
        sent: str, speaker: str, addressee: str | None, people: PersonResolver
    ) -> str | None:
        """The roster member (not the speaker) this sentence is about, if any.

        A named member counts when the name is a subject or possessive (followed by a verb
        or adverb, or ``'s``), not a bare greeting ("Thanks Chloe."). "you"/"your" count
        for the addressee.
        """
        for name, start, end in people.mentions(sent):
            if name == speaker:
                continue
            tail = sent[end : end + 24]
            if sent[start:end].endswith(("'s", "\u2019s")) or re.match(
                r"\s+(?:is|was|has|had|have|seems?|looks?|sounds?|did|does|will|would|can|could|"
                r"always|never|"
                r"really|just|still|also|clearly|obviously|usually|definitely|[a-z]+n['\u2019]t|"
                r"[a-z]+(?:s|ed)|" + _IRREGULAR_PAST + r")\b",
                tail,
            ):
                return name
        if (
            addressee
            and addressee != speaker
            and re.search(r"\b(you|your|you're|you've)\b", sent, re.I)
        ):
            return addressee
        return None

    @staticmethod
    def _addressee(
        msg: dict[str, Any],
        previous: dict[str, Any] | None,
        by_id: dict[str, Any],
        people: PersonResolver,
    ) -> tuple[str | None, bool]:
        """Whom "you" means, and whether that member was named (a vocative opening the message).

        Without a vocative it is the replied-to (or previous) speaker, trusted only for
        sentences that open with "you"/"your" (a generic "you" elsewhere is not an address).
        """
        names = people.mentions(msg["text"][:40])
        if names and names[0][1] < 3 and names[0][0] != msg["speaker"]:
            return names[0][0], True
        target = by_id.get(msg.get("reply_to") or "") or previous
        if target is not None and target["speaker"] != msg["speaker"]:
            return target["speaker"], False
        return None, False

    @staticmethod
    def _question_for(
        msg: dict[str, Any],
        previous: dict[str, Any] | None,
        by_id: dict[str, Any],
        people: PersonResolver,
    ) -> tuple[str, str, str] | None:
        """(asker, question, its message id) when ``msg`` answers a question put to its speaker."""
        target = by_id.get(msg.get("reply_to") or "") or previous
        if target is None or target["speaker"] == msg["speaker"]:
            return None
        questions = [s for s in rt.sentences(target["text"]) if s.endswith("?")]
        if not questions:
            return None
        named = msg["speaker"] in people.names_in(target["text"])
        direct = msg.get("reply_to") == target["msg_id"]
        if not (named or direct) or not re.search(r"\b(you|your)\b", questions[-1], re.I):
            return None
        return target["speaker"], questions[-1], target["msg_id"]

    # -- slots --------------------------------------------------------------------------
    def _find_slot(
        self, slots: list[_Slot], act: dict[str, Any], fam: str, topics: set[str]
    ) -> _Slot | None:
        """The most recent head continuing this statement's matter, or ``None``."""
        group = act["owner"] == GROUP_OWNER
        for slot in reversed(slots):
            if slot.owner != act["owner"]:
                continue
            if not group and slot.layer != act["layer"]:
                continue
            if (
                group
                and fam not in rt.SINGLE_VALUED
                and (slot.utype == "decision") != (act["utype"] == "decision")
            ):
                continue  # a decision is continued by a later decision only
            if act["layer"] == "per_speaker_profile" and slot.source != act["source"]:
                continue  # A's view of B is not continued by C's view
            if fam != slot.family:
                continue
            if fam in rt.SINGLE_VALUED:
                return slot
            if fam == "habit":
                if rt.habit_verb(act["content"], {act["owner"]}) == rt.habit_verb(
                    slot.content, {slot.owner}
                ):
                    return slot
                continue
            if not topics or not slot.topics:
                if fam in rt.OPEN_TOPIC:
                    return slot
                continue
            if len(topics & slot.topics) / len(topics | slot.topics) >= self.config.slot_overlap:
                return slot
        return None

    @staticmethod
    def _restates(slot: _Slot, content: str, topics: set[str], fam: str) -> bool:
        """True when the statement adds nothing to the slot: no new topic words or numbers and no
        change cue."""
        if fam == "habit":
            return False
        if rt.CHANGE.search(content):
            return False
        return topics <= slot.topics and rt.numbers(content) <= rt.numbers(slot.content)


#: irregular past forms that follow a subject ("Ravi forgot his apron again")
_IRREGULAR_PAST = "|".join(
    sorted(
        rt._MODALS
        | {
            "forgot",
            "broke",
            "brought",
            "chose",
            "drank",
            "fell",
            "forgave",
            "hid",
            "rode",
            "sang",
            "slept",
            "spoke",
            "stood",
            "swam",
            "threw",
            "wore",
            "won",
        }
    )
)

#: "you" that means people in general or the whole group, not the addressee
_GENERIC_YOU = re.compile(
    r"\b(you know|you never know|if you|when you|whenever you|you can'?t|you have to|you gotta|"
    r"you need to|makes you|gives you|you see|mind you|thank you|you guys|you all|y'all|all of you|"
    r"see you|you two|both of you|each of you)\b",
    re.I,
)
_VOCATIVE = re.compile(
    r"^\W*@?([A-Z][\w'\u2019-]*)\s*,?\s+"
    r"(?=(?:(?:are|do|did|have|can|will|were|would|could)\s+)?(?:you|your|you're|you've)\b)",
    re.I,
)

#: a name opening a sentence before its own subject or verb ("Chidi I can announce ...")
_LEAD_NAME = re.compile(
    r"^\W*@?([A-Z][\w'\u2019-]*)[,!:]?\s+(?=(?:I|I'm|I'll|I've|I'd|(?i:we|we're|we'll|my|our|"
    r"there|that|that's|it's|he|she|they|don't|do|did|is|are|can|could|will|would|what|how|"
    r"please|just|let's|let|no|not))\b)"
)
#: kinship words used to address a member ("Mum I wanted to mention something")
_KIN = frozenset("mum mom mam mama mommy mummy dad daddy papa grandma grandpa nan nana".split())

#: record kinds that hold a view (one current view per matter: a later one supersedes)
_VIEWS = frozenset({"preference", "stance"})


def _utype(sentence: str, profile: bool = False) -> str:
    if rt.HABIT.search(sentence):
        return "observation"
    if profile:
        return "observation"
    if rt.PREFERENCE.search(sentence):
        return "preference"
    if rt.STANCE.search(sentence):
        return "stance"
    return "fact"


def _merge(
    candidates: list[tuple[dict[str, Any], str, set[str]]], any_matter: bool = False
) -> list[tuple[dict[str, Any], str, set[str]]]:
    """Join consecutive statements of one message on one matter kind into one record.

    Same owner, source, layer and slot family (facts with facts, stances with stances)
    are joined with "; " (a message's "TechCrunch covered us. Close to profitability."
    is one fact record); single-valued families and habits stay apart so their slots
    keep updating on their own.
    """
    out: list[tuple[dict[str, Any], str, set[str]]] = []
    for act, fam, topics in candidates:
        prev = out[-1] if out else None
        if (
            prev is not None
            and fam not in rt.SINGLE_VALUED  # a single-valued slot keeps updating on its own
            and prev[1] not in rt.SINGLE_VALUED
            # a preference is its own slot: a later "I prefer Porto now" updates it alone
            and (fam == "preference") == (prev[1] == "preference")
            and (
                (any_matter and act["owner"] == act["source"])
                or (fam == prev[1] and fam != "habit")
            )
            and (topics or any_matter)
            and (prev[2] or any_matter)
            and all(prev[0][k] == act[k] for k in ("owner", "source", "layer"))
        ):
            merged = {**prev[0], "content": f"{prev[0]['content'].rstrip('.')}; {act['content']}"}
            out[-1] = (merged, fam, prev[2] | topics)
        else:
            out.append((act, fam, topics))
    return out


def _attributed(content: str, source: str) -> str:
    """A view of another member in its holder's words: "Ana says ...", "Ana asks ..."."""
    if content.startswith(source):
        return content
    if content.startswith("asked: "):
        return f"{source} asks {_lower_first(content.removeprefix('asked: '))}"
    return f"{source} says {_lower_first(content)}"


def _lower_first(text: str) -> str:
    """Lower-case the first letter unless the first word is a name or "I" ("Ben's" stays)."""
    first = text.split(" ", 1)[0]
    if not first or first == "I" or first.startswith("I'") or not first[:1].isupper():
        return text
    if len(first) > 1 and not first[1:].islower():  # "WRONG", "TechCrunch"
        return text
    return text[:1].lower() + text[1:] if first.lower() in _COMMON_OPENERS else text


#: Sentence-opening words that are not names (lower-cased when a clause follows "says").
_COMMON_OPENERS = frozenset(
    """the a an this that these those it its there here he she they we you his her their our
    your what how when where why who which if so but and or not no yes just still also
    maybe probably definitely really honestly anyway all every each some any one both
    glad good great nice sounds looks seems can could would should will did does do is are
    was were has have had""".split()
)


def _concise(
    content: str, owner: str, source: str, elide: bool = False, keep_owner: bool = False
) -> str:
    """Drop what the record's fields already say: "<source> says: ", "(said by <source>)",
    and the owner as the opening subject ("Dev lives in Vienna" -> "lives in Vienna")."""
    content = content.removeprefix(f"{source} says: ").removesuffix(f" (said by {source})")
    m = re.match(rf"{re.escape(owner)}\s+(?=[a-z])", content)
    # a view of another member keeps them as its subject: it opens with its source ("Ana says
    # Ben returns ..."), so the owner is not the opening word
    content = content[m.end() :] if m and not (keep_owner and owner != source) else content
    if elide and owner == source:
        # a self-report names its owner nowhere: the owner field does ("Mei's team is at eight
        # so Mei will need a hard stop" -> "team is at eight so will need a hard stop")
        name = re.escape(owner)
        content = re.sub(rf"\b{name}['\u2019]s\s+(?=\w)", "", content)
        content = re.sub(
            rf"(^|[,;:]\s+|\b(?:but|so|because|that|if|when|though|as)\s+){name}\s+"
            r"(?=[a-z])",
            r"\1",
            content,
        )
    # trailing chat fillers say nothing about the matter
    content = re.sub(
        r"[\s,]+(?:ngl|tbh|lol|haha+|honestly|please|though|anyway|tho)\W*$",
        "",
        content,
        flags=re.I,
    )
    return content.strip() or content


def _said(sentence: str, speaker: str) -> str:
    """A group record's content: the sentence with the speaker's "I" rewritten, and who said it."""
    return f"{rt.third_person(sentence, speaker)} (said by {speaker})"


def dated(content: str, ts: Any) -> str:
    """Relative time words resolved against the message time, written beside them.

    "went to the support group yesterday" said on 8 May 2023 ->
    "went to the support group yesterday (7 May 2023)" (:mod:`speakerflow.ops.text.temporal`);
    expressions that already carry a year stay as they are.
    """
    if not hasattr(ts, "year") or not re.search(_TIME_HINT, content, re.I):
        return content
    out, shift = content, 0
    for span in resolve_time(content, ts):
        if re.search(r"\b\d{4}\b", span.text) or _BARE_WEEKDAY.match(span.text):
            # already absolute; a bare weekday is as often a habit ("on Sundays") as a date
            continue
        at = span.offset + shift + len(span.text)
        if _MONTH_AFTER.match(out, at):
            continue  # "a long weekend in October", "the last Saturday of July": not this week's
        desc = describe_time(span)
        opening = re.match(r"(?:in|on|of|by|at|during)\s+", span.text, re.I)
        lead = opening.group(0) if opening else ""
        if set(rt.words(span.text[len(lead) :])) <= set(rt.words(desc)):
            # "in October" -> "in October 2025", not "in October (October 2025)"
            start = span.offset + shift
            out = out[:start] + lead + desc + out[at:]
            shift += len(lead) + len(desc) - len(span.text)
            continue
        note = f" ({desc})"
        out = out[:at] + note + out[at:]
        shift += len(note)
    return out


_MONTH_AFTER = re.compile(
    r"\s+(?:in|of)\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.I
)
_BARE_WEEKDAY = re.compile(
    r"^(?:on |by |this )?(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?s?$", re.I
)
#: words without which no time expression can match (skips the resolver for most sentences)
_TIME_HINT = (
    r"\b(?:ago|yesterday|today|tonight|tomorrow|last|next|this|week|weekend|month|year|morning|"
    r"night|"
    r"mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|day|days|in \d)"
)


def stats_order(msg_id: str, known: list[dict[str, Any]]) -> int:
    """Position of a message among those the segment sees (for citing in said order)."""
    for i, m in enumerate(known):
        if m["msg_id"] == msg_id:
            return i
    return -1


def _cap(ids: list[str], n: int, keep_first: bool = False) -> list[str]:
    """At most ``n`` ids: the newest, or (``keep_first``) the first and the newest ``n - 1``.

    A record's messages are cited together at its rank in a composed answer, so a long list
    would push other evidence out; the older messages of a thread stay cited by its earlier
    records (the UPDATE chain)."""
    if len(ids) <= n:
        return ids
    return [ids[0], *ids[len(ids) - n + 1 :]] if keep_first and n > 1 else ids[-n:]


def _last_clause(content: str) -> str:
    """The newest statement of a (possibly consolidated) record, without its notes."""
    last = content.split("; ")[-1]
    return re.sub(r"\s*\((?:before|again),[^)]*\)\s*$", "", last).strip()


def _thread_content(old: str, new: str, keep: int) -> str:
    """A thread's content: its newest ``keep`` statements joined with "; " (oldest first)."""
    parts = [p for p in old.split("; ") if p] + [new]
    parts = list(dict.fromkeys(p.strip() for p in parts))
    return "; ".join(parts[-keep:])


def _day(ts: Any) -> str:
    return ts.strftime("%Y-%m-%d") if hasattr(ts, "strftime") else str(ts)[:10]

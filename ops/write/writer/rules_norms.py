"""GROUP norms of the rules Writer from recurring activities: who keeps taking part and who
keeps missing them."""

from __future__ import annotations

from collections import Counter
from typing import Any

from speakerflow.ops.text.people import PersonResolver
from speakerflow.ops.write.interfaces import Segment
from speakerflow.ops.write.writer import consolidate as cs
from speakerflow.ops.write.writer import rules_text as rt
from speakerflow.ops.write.writer.rules_content import Slot, stats_order
from speakerflow.schemas import GROUP_OWNER


class NormWriter:
    """The norms pass of :class:`~.rules.RulesWriter` (its config and per-group memo)."""

    def __init__(self, config, memo: dict):
        self.config = config
        self.memo = memo

    def norms(
        self,
        segment: Segment,
        known: list[dict[str, Any]],
        stats: cs.WordStats,
        people: PersonResolver,
        slots: list[Slot],
    ) -> list[dict[str, Any]]:
        """GROUP norms from recurring activities: who keeps taking part, who keeps missing them.

        An activity is a content word of a message saying someone is not taking part
        ("Not coming to pottery today") that the group talks about in at least
        ``min_norm_sessions`` sessions. One record per activity (``event`` ``recurring:<word>``),
        updated whenever a later segment adds an absence; it cites the absences and the
        latest plans.
        """
        from speakerflow.ops.write.upsert import add_entry_id, entry_id

        memo = self.memo.setdefault("cues", {})
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
                Slot(eid, GROUP_OWNER, source, "group_insight", "recurring", {word}, content, cited)
            )
        return out

    @staticmethod
    def _absentee(msg: dict[str, Any], people: PersonResolver) -> str:
        """Who is not taking part: a member the message names ("Ravi skipped again"), else the
        speaker."""
        named = [n for n, _, _ in people.mentions(msg["text"]) if n != msg["speaker"]]
        return named[0] if named else msg["speaker"]

"""GROUP norms of the rules Writer from recurring activities: who keeps taking part and who
keeps missing them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from speakerflow.ops.text.people import PersonResolver
from speakerflow.ops.write.interfaces import Segment
from speakerflow.ops.write.writer import consolidate as cs
from speakerflow.ops.write.writer import rules_text as rt
from speakerflow.ops.write.writer.rules_content import Slot, stats_order
from speakerflow.schemas import GROUP_OWNER


@dataclass
class _Talk:
    """Where the activity words (content words, :func:`~.consolidate.activity_words`) of the
    known messages come up."""

    plan_sessions: dict[str, set[str]] = field(default_factory=dict)  # word -> sessions planning it
    session_plans: dict[str, Counter[str]] = field(default_factory=dict)  # session -> plan words
    said_sessions: dict[str, set[str]] = field(default_factory=dict)  # word -> sessions saying it
    session_words: dict[str, Counter[str]] = field(default_factory=dict)  # session -> its words


@dataclass
class _Tally:
    """One activity over the known messages: who missed it and the messages saying so."""

    absent: dict[str, list[str]] = field(default_factory=dict)  # absentee -> msg ids
    callouts: list[str] = field(default_factory=list)
    plans: list[dict[str, Any]] = field(default_factory=list)
    # the absentee's own reply to being called out (their explanation)
    reasons: list[str] = field(default_factory=list)


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
        cues = self._cues(known)
        talk = _talk(known, stats, cues)
        # planned at least once, talked about in several sessions
        recurring = {
            w
            for w in talk.plan_sessions
            if len(talk.said_sessions[w]) >= self.config.min_norm_sessions
        }
        acts = _absences(segment, stats, talk, recurring)
        named = {m["msg_id"] for ms in acts.values() for m in ms}
        out: list[dict[str, Any]] = []
        for word in sorted(acts):
            tally = _tally(word, known, cues, stats, people, named)
            cited = self._cited(tally, known)
            if not any(i in segment.msg_ids for i in cited):
                continue
            content = _content(word, tally, cited, known)
            _write(out, slots, segment, word, acts[word][-1]["speaker"], content, cited)
        return out

    def _cues(self, known: list[dict[str, Any]]) -> dict[str, tuple[bool, bool]]:
        """(is a plan, says someone is not taking part) per message id, kept in the memo."""
        memo = self.memo.setdefault("cues", {})
        for m in known:
            if m["msg_id"] not in memo:
                memo[m["msg_id"]] = (
                    cs.is_plan(m["text"]),
                    bool(cs.ABSENCE.search(m["text"])) and not rt.is_question(m["text"]),
                )
        return memo

    def _cited(self, tally: _Tally, known: list[dict[str, Any]]) -> list[str]:
        """The latest absences and the latest call-out and reason (a record's messages are
        cited together), in message order."""
        absences = sorted(
            (i for ids in tally.absent.values() for i in ids if i not in tally.callouts),
            key=lambda i: stats_order(i, known),
        )
        return sorted(
            {*absences[-self.config.max_cited :], *tally.callouts[-1:], *tally.reasons[-1:]},
            key=lambda i: stats_order(i, known),
        )


def _talk(
    known: list[dict[str, Any]], stats: cs.WordStats, cues: dict[str, tuple[bool, bool]]
) -> _Talk:
    """The sessions that plan and that mention each activity word."""
    talk = _Talk()
    for m in known:
        if cues[m["msg_id"]][0]:
            ws = cs.activity_words(stats.words.get(m["msg_id"], frozenset()))
            talk.session_plans.setdefault(m["session_id"], Counter()).update(ws)
            for w in ws:
                talk.plan_sessions.setdefault(w, set()).add(m["session_id"])
    for m in known:
        ws = cs.activity_words(stats.words.get(m["msg_id"], frozenset()))
        talk.session_words.setdefault(m["session_id"], Counter()).update(ws)
        for w in ws:
            talk.said_sessions.setdefault(w, set()).add(m["session_id"])
    return talk


def _absences(
    segment: Segment, stats: cs.WordStats, talk: _Talk, recurring: set[str]
) -> dict[str, list[dict[str, Any]]]:
    """The segment's messages saying someone is not taking part, by the recurring activity
    they are about."""
    acts: dict[str, list[dict[str, Any]]] = {}
    for m in segment.messages:
        if not cs.ABSENCE.search(m["text"]) or rt.is_question(m["text"]):
            continue
        own = [
            w
            for w in cs.activity_words(stats.words.get(m["msg_id"], frozenset()))
            if w in recurring
        ]
        here = talk.session_plans.get(m["session_id"], Counter())
        said = talk.session_words.get(m["session_id"], Counter())
        # the activity it names, else what its session is about ("Not coming. Riding." on brunch
        # day)
        cands = own or [w for w in said if w in recurring]
        if cands:
            word = max(
                cands,
                key=lambda w: (
                    w in own,
                    len(talk.plan_sessions[w]),
                    here.get(w, 0),
                    said.get(w, 0),
                    -stats.df[w],
                    w,
                ),
            )
            acts.setdefault(word, []).append(m)
    return acts


def _tally(
    word: str,
    known: list[dict[str, Any]],
    cues: dict[str, tuple[bool, bool]],
    stats: cs.WordStats,
    people: PersonResolver,
    named: set[str],
) -> _Tally:
    """Who missed ``word`` (an absence saying it, or one of ``named``), the call-outs of an
    absentee in that session, the absentee's reply within four messages, and the plans."""
    tally = _Tally()
    last_absent: dict[str, Any] = {}
    waiting: dict[str, Any] = {}
    for m in known:
        said = stats.words.get(m["msg_id"], frozenset())
        plan, absence = cues[m["msg_id"]]
        if waiting and (m["session_id"] != waiting["session"] or waiting["left"] <= 0):
            waiting = {}
        if waiting and m["speaker"] == waiting["who"] and not absence:
            tally.reasons.append(m["msg_id"])
            waiting = {}
        elif waiting:
            waiting["left"] -= 1
        if absence and (word in said or m["msg_id"] in named):
            who = _absentee(m, people)
            tally.absent.setdefault(who, []).append(m["msg_id"])
            last_absent = {"session": m["session_id"], "who": who}
            if who != m["speaker"]:
                waiting = {"session": m["session_id"], "who": who, "left": 4}
        elif (
            last_absent.get("session") == m["session_id"]
            and cs.CALLOUT.search(m["text"])
            and m["speaker"] != last_absent["who"]
        ):  # "Jordan!! this is like the third time"
            tally.absent[last_absent["who"]].append(m["msg_id"])
            tally.callouts.append(m["msg_id"])
        elif word in said and plan:
            tally.plans.append(m)
    return tally


def _content(word: str, tally: _Tally, cited: list[str], known: list[dict[str, Any]]) -> str:
    """The norm in the cited messages' own words (Validate refuses content its messages do not
    support): the activity, who missed it and how they said so ("not coming", "skipped"),
    and who keeps it."""
    keep = [p for p in dict.fromkeys(m["speaker"] for m in tally.plans) if p not in tally.absent]
    missed = ", ".join(
        f"{p} ({len(ids)}x)" if len(ids) > 1 else p for p, ids in tally.absent.items()
    )
    by_id_known = {m["msg_id"]: m for m in known}
    cues = list(
        dict.fromkeys(
            c.group(0).lower()
            for i in cited
            for c in [cs.ABSENCE.search(by_id_known[i]["text"])]
            if c
        )
    )
    return (
        f"{word}: {missed}"
        + (f" ({', '.join(cues[-3:])})" if cues else "")
        + (f"; with {', '.join(keep)}" if keep else "")
    )


def _write(
    out: list[dict[str, Any]],
    slots: list[Slot],
    segment: Segment,
    word: str,
    source: str,
    content: str,
    cited: list[str],
) -> None:
    """Append the ADD of the norm on ``word`` (and its slot), or the UPDATE of its record
    when the content moved."""
    from speakerflow.ops.write.upsert import add_entry_id, entry_id

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
            return
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
        return
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
    eid = add_entry_id(segment.group_id, segment.segment_id, GROUP_OWNER, "group_insight", content)
    slots.append(
        Slot(eid, GROUP_OWNER, source, "group_insight", "recurring", {word}, content, cited)
    )


def _absentee(msg: dict[str, Any], people: PersonResolver) -> str:
    """Who is not taking part: a member the message names ("Ravi skipped again"), else the
    speaker."""
    named = [n for n, _, _ in people.mentions(msg["text"]) if n != msg["speaker"]]
    return named[0] if named else msg["speaker"]

"""Slots of the rules Writer: which existing head (or ADD of this segment) a statement
continues. A matter key is ``"<family>:<topic words>"`` (:mod:`.rules_text`); a statement
continues the newest head of its owner with the same family and overlapping topics, a
recurring habit with the same verb, or (a *thread*) the newest head of its owner, source and
layer whose messages it is linked to by rare words."""

from __future__ import annotations

from typing import Any

from speakerflow.ops.write.writer import consolidate as cs
from speakerflow.ops.write.writer import rules_text as rt
from speakerflow.ops.write.writer.rules_content import Slot
from speakerflow.schemas import GROUP_OWNER
from speakerflow.words import CHANGE_STATEMENT


def matter_key(fam: str, topics: set[str]) -> str:
    return f"{fam}:{' '.join(sorted(topics)[:10])}"


def parse_key(event: str | None, content: str, exclude: set[str]) -> tuple[str, set[str]]:
    """(family, topics) of a head: from its ``event`` key, else computed from its content."""
    if event and ":" in event:
        fam, _, topics = event.partition(":")
        return fam, set(topics.split())
    return rt.family(content), rt.topic_words(content, exclude)


class SlotFinder:
    """Slot lookups of :class:`~.rules.RulesWriter` (reads ``self.config``)."""

    config: Any

    def _find_thread(
        self,
        slots: list[Slot],
        act: dict[str, Any],
        msg_id: str,
        topics: set[str],
        stats: cs.WordStats,
    ) -> Slot | None:
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

    def _find_slot(
        self, slots: list[Slot], act: dict[str, Any], fam: str, topics: set[str]
    ) -> Slot | None:
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
    def _restates(slot: Slot, content: str, topics: set[str], fam: str) -> bool:
        """True when the statement adds nothing to the slot: no new topic words or numbers and no
        change cue."""
        if fam == "habit":
            return False
        if CHANGE_STATEMENT.search(content):
            return False
        return topics <= slot.topics and rt.numbers(content) <= rt.numbers(slot.content)

"""One message -> the rules Writer's candidate records (rules 1-7 of :mod:`.rules`): decisions,
norms, proposals and plans for the group, statements about another member, first-person
statements, other claims, substantive questions, and short answers kept with their question."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from speakerflow.ops.text.people import PersonResolver
from speakerflow.ops.write.writer import consolidate as cs
from speakerflow.ops.write.writer import rules_text as rt
from speakerflow.ops.write.writer.rules_content import concise, dated, said, utype_of
from speakerflow.schemas import GROUP_OWNER

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

#: a candidate record: (action, slot family, topic words)
Candidate = tuple[dict[str, Any], str, set[str]]


def unaddressed(
    sent: str,
    speaker: str,
    people: PersonResolver,
    addressee: str | None,
    named: bool,
    asking: bool,
) -> tuple[str, str | None, bool, bool]:
    """(sentence, addressee, named, asking) with an opening vocative dropped ("Chloe, are you
    ...", "Adaora I will be making egusi", "Mum there will be enough food"): the member it
    names is the addressee from here on."""
    voc = _VOCATIVE.match(sent)
    if voc and (who := people.resolve(voc.group(1))) and who != speaker:
        sent = sent[voc.end() :]
        sent = sent[:1].upper() + sent[1:]
        return sent, who, True, asking or rt.is_question(sent)
    if (lead := _LEAD_NAME.match(sent)) and (
        (who := people.resolve(lead.group(1))) or lead.group(1).lower() in _KIN
    ):
        # a vocative, not the subject
        if who and who != speaker:
            addressee, named = who, True
        if who != speaker:
            sent = sent[lead.end() :]
    return sent, addressee, named, asking


class MessageReader:
    """The candidate records of one message under a :class:`~.rules_config.RulesConfig`."""

    def __init__(self, config):
        self.config = config

    def actions(
        self,
        msg: dict[str, Any],
        previous: dict[str, Any] | None,
        by_id: dict[str, Any],
        people: PersonResolver,
        exclude: set[str],
    ) -> Iterator[Candidate]:
        """The candidates (action, family, topics) of ``msg``: a short answer to a question put
        to its speaker is one record with its question; else each sentence by rules 1-7."""
        speaker, text = msg["speaker"], msg["text"]
        asked = self._question_for(msg, previous, by_id, people)
        if (
            asked is not None
            and len(rt.words(text)) <= self.config.short_answer_words
            and not text.rstrip().endswith("?")
        ):
            answer = self._answer(msg, asked, exclude)
            if answer is not None:
                yield answer
            return
        addressee, named = self._addressee(msg, previous, by_id, people)
        replying = (by_id.get(msg.get("reply_to") or "") or previous or {}).get("speaker") not in (
            None,
            speaker,
        )
        for raw in rt.sentences(text):
            sent = rt.strip_filler(raw)
            asking = rt.is_question(raw) or rt.is_question(sent)
            sent, addressee, named, asking = unaddressed(
                sent, speaker, people, addressee, named, asking
            )
            you = (
                named or bool(re.search(r"\b(you|your|you're|you've|yours)\b", sent, re.I))
            ) and not _GENERIC_YOU.search(sent)
            about = addressee if you else None
            if asking:  # a question says what the asker wants to know or cares about
                if not self.config.questions:
                    continue
                cand = self._asked(sent, msg, about, addressee, people, exclude)
            else:
                cand = self._statement(sent, msg, about, addressee, replying, people, exclude)
            if cand is not None:
                yield cand

    def _answer(
        self, msg: dict[str, Any], asked: tuple[str, str, str], exclude: set[str]
    ) -> Candidate | None:
        """A short answer recorded with the question it answers ("Asked by Ben ..., Chloe
        answered: ...")."""
        speaker, text = msg["speaker"], msg["text"]
        asker, question, asked_id = asked
        question = (
            re.sub(rf"^\W*{re.escape(speaker)}\W+", "", question) or question
        )  # drop "Chloe, "
        q = rt.third_person(rt.strip_filler(question), asker, addressee=speaker)
        answer = rt.third_person(rt.strip_filler(text) or text, speaker)
        content = f'Asked by {asker} "{q}", {speaker} answered: {answer}'
        topics = rt.topic_words(f"{question} {text}", exclude)
        if not (topics or rt.words(answer)):
            return None
        act = self._add(speaker, speaker, "per_speaker_core", utype_of(text), content, msg)
        act["from_ids"] = [asked_id, msg["msg_id"]]  # the question is half of what the record says
        return act, rt.family(text + " " + question), topics

    def _asked(
        self,
        sent: str,
        msg: dict[str, Any],
        about: str | None,
        addressee: str | None,
        people: PersonResolver,
        exclude: set[str],
    ) -> Candidate | None:
        """A substantive question as an "asked: ..." observation of the asker, or of the member
        it asks about (rule 7)."""
        speaker = msg["speaker"]
        topics = rt.topic_words(sent, exclude)
        if len(topics) < self.config.min_question_words:
            return None
        target = self._about(sent, speaker, about, people)
        opening = people.mentions(sent[:40])  # "Priya, how's the practice going?"
        if target is None and opening and opening[0][1] < 2 and opening[0][0] != speaker:
            target = opening[0][0]
        owner, layer = (target, "per_speaker_profile") if target else (speaker, "per_speaker_core")
        content = rt.third_person(sent, speaker, addressee=target if target == addressee else None)
        content = "asked: " + content
        return self._add(owner, speaker, layer, "observation", content, msg), "asked", topics

    def _statement(
        self,
        sent: str,
        msg: dict[str, Any],
        about: str | None,
        addressee: str | None,
        replying: bool,
        people: PersonResolver,
        exclude: set[str],
    ) -> Candidate | None:
        """A statement's record by the first of rules 1-6 that fits, if it says something."""
        speaker = msg["speaker"]
        topics = rt.topic_words(sent, exclude)
        fam = rt.family(sent)
        # "Either works for me" is a stance and "I'll book mine, as usual" a habit, though short
        # a sentence needs a content word; the record a message's statements make needs
        # min_topic_words (checked in propose, after the statements are merged)
        needed = 0 if fam in rt.OPEN_TOPIC and rt.first_person(sent) else 1
        if not sent or len(topics) < needed:
            return None
        record = self._record(sent, speaker, about, addressee, replying, people, topics)
        if record is None:
            return None
        owner, layer, utype, content = record
        return self._add(owner, speaker, layer, utype, content, msg), fam, topics

    def _record(
        self,
        sent: str,
        speaker: str,
        about: str | None,
        addressee: str | None,
        replying: bool,
        people: PersonResolver,
        topics: set[str],
    ) -> tuple[str, str, str, str] | None:
        """(owner, layer, utype, content) of a statement by rules 1-6, or None."""
        if rt.DECISION.search(sent) or (replying and cs.concludes(sent)):
            return GROUP_OWNER, "group_interaction", "decision", said(sent, speaker)
        if rt.NORM.search(sent):
            return GROUP_OWNER, "group_insight", "norm", said(sent, speaker)
        if rt.PROPOSAL.search(sent):
            return GROUP_OWNER, "group_interaction", "procedure", rt.third_person(sent, speaker)
        if rt.PLAN.search(sent):
            return GROUP_OWNER, "group_interaction", "procedure", said(sent, speaker)
        target = self._about(sent, speaker, about, people)
        if target is not None:
            content = rt.third_person(
                sent, speaker, addressee=target if target == addressee else None
            )
            return target, "per_speaker_profile", utype_of(sent, profile=True), content
        if rt.first_person(sent):
            return speaker, "per_speaker_core", utype_of(sent), rt.elided_to_third(sent, speaker)
        if len(topics) >= self.config.min_claim_words:
            return speaker, "per_speaker_core", utype_of(sent), f"{speaker} says: {sent}"
        return None

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
                concise(content, owner, source, elide, self.config.attribute), msg.get("ts")
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

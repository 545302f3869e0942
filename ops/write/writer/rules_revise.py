"""Changes of mind for the rules Writer: a later message of a person that revises what they
(or the plan they answer) said before becomes an UPDATE of that record, so the record chain's
head is the current view and the earlier one its history.

A message *revises* an earlier record when both hold:

- **the same matter**: the message, read with the message before it in its session (a reply
  is about what was just said), shares words with the messages the record rests on (their
  IDF-weighted cosine, :meth:`~.consolidate.WordStats.similarity`, at least
  ``RulesConfig.revise_similarity``: a matter argued over recurs, so its words need not be
  rare), or their sentence embeddings (the message's and one of the record's messages) at a
  cosine of at least ``RulesConfig.revise_cosine`` (:class:`MatterVectors`): a change of mind
  is often worded apart from the first view ("the train suits me better" after "I'll fly
  there" shares no content word); a match by embedding alone needs a change word
  (:func:`says_change`), as a person's messages on nearby matters are close too. Candidates
  are the speaker's own records and the GROUP records they announced, newest first;
- **a different state**: the message says the matter differently, by one of general signals,
  none of them a phrase of any data set: a change word of
  :data:`~speakerflow.words.CHANGE_STATEMENT` ("instead", "no longer", "changed my mind" ...)
  or of :data:`RECONSIDER` (the issue's own examples: "actually", "on second thought", "I was
  wrong" and "scratch that"); numbers that
  moved, each side holding one the other lacks (40 -> 55; digits or number words); a negated
  word of the record ("it's not the cable" after "it's the cable"); or a turned stance on a
  shared word, one of the two said with a negation and the other without ("I don't want a
  dog" -> "fine, a dog then").

Another person's message *corrects* a record (:func:`_corrects`) when it answers its author,
is on the same matter in its own words, and sets a figure right (a number in digits against
another); that UPDATE carries the corrector as its source.

The UPDATE's content is the message's statement with the old one beside it ("... (before,
2026-03-02: ...)"); it cites the record's messages and the revising one.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from speakerflow.ops.text.people import PersonResolver
from speakerflow.ops.write.interfaces import Segment
from speakerflow.ops.write.writer import consolidate as cs
from speakerflow.ops.write.writer import rules_text as rt
from speakerflow.ops.write.writer.rules_content import (
    Slot,
    cap,
    concise,
    dated,
    day_str,
    last_clause,
)
from speakerflow.ops.write.writer.rules_message import unaddressed
from speakerflow.ops.write.writer.rules_slots import matter_key
from speakerflow.schemas import GROUP_OWNER
from speakerflow.words import CHANGE_STATEMENT

#: reconsidering, in general words (the examples the Writer issue gives)
RECONSIDER = re.compile(
    r"\b(actually|scratch that|i was wrong|on second thoughts?|after all|not any ?more)\b", re.I
)
_NEGATED = re.compile(
    r"\b(?:not|no|never|isn'?t|wasn'?t|aren'?t|weren'?t|won'?t|don'?t|doesn'?t|didn'?t|"
    r"can'?t|no longer)\s+(?:\w+\s+){0,2}?(\w+)",
    re.I,
)


_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}


def _numbers(text: str) -> set[str]:
    """The numbers of ``text``, digits or number words ("two levels" -> {"2"})."""
    words = {_NUMBER_WORDS[w] for w in rt.words(text.lower()) if w in _NUMBER_WORDS}
    return rt.numbers(text) | words


def _moved(new: set[str], old: set[str]) -> bool:
    """Numbers that moved: each side holds one the other lacks (40 -> 55, not 40 -> 40 and 55)."""
    return bool(new - old and old - new)


def says_change(text: str) -> bool:
    """A change word or a reconsidering of :data:`CHANGE_STATEMENT` / :data:`RECONSIDER`."""
    return bool(CHANGE_STATEMENT.search(text) or RECONSIDER.search(text))


def changes_state(text: str, old_text: str, exclude: set[str]) -> bool:
    """Does ``text`` say the matter of ``old_text`` differently (see the module doc)?"""
    if says_change(text):
        return True
    if _moved(_numbers(text), _numbers(old_text)):
        return True  # the matter's numbers moved
    old_words = rt.topic_words(old_text, exclude)
    negated = {rt.lemma(m.group(1).lower()) for m in _NEGATED.finditer(text)}
    if negated & old_words:
        return True
    # the stance turned: one of the two says the matter with a negation, the other without
    shared = rt.topic_words(text, exclude) & old_words
    return bool(shared) and bool(_NEGATED.search(text)) != bool(_NEGATED.search(old_text))


def _asked(content: str) -> bool:
    return content.startswith(("asked: ", "Asked by ")) or " asks " in content[:40]


@functools.cache
def revise_embedder(kind: str) -> Any:
    """The process's shared embedder of ``kind``; ``None``, with a warning, when it cannot
    load (the revision test then reads words only)."""
    from speakerflow.ops.text.embed import shared_embedder

    try:
        return shared_embedder(kind)
    except Exception as exc:  # noqa: BLE001 - a missing model only loses this signal
        warnings.warn(
            f"rules Writer: revise_embedder={kind!r} did not load ({exc}); changes of mind are "
            "matched by their words only",
            stacklevel=2,
        )
        return None


class MatterVectors:
    """Unit sentence vectors of a group's message texts under the ``kind`` embedder, encoded
    on first use: only the messages a revision test compares (a message with a change word
    and the messages of its speaker's records), so a chat without changes of mind loads no
    model. The bare text, not dense recall's ``"speaker: text"``: between two messages of one
    person the shared name lifts every cosine (on the socialmem training chats same-speaker
    pairs go from a median of 0.18 to 0.45) and blurs the matter."""

    def __init__(self, kind: str):
        self.kind = kind
        self.vecs: dict[str, np.ndarray] = {}

    def cosine(self, msg_id: str, others: Sequence[str], texts: Mapping[str, str]) -> float:
        """The best cosine of message ``msg_id`` with one of ``others`` (texts by id; -1 when
        a text is unknown or the embedder did not load)."""
        wanted = [i for i in (msg_id, *others) if i not in self.vecs and i in texts]
        if wanted:
            embedder = revise_embedder(self.kind)
            if embedder is None:
                return -1.0
            mat = np.asarray(embedder.encode([str(texts[i]) for i in wanted]), dtype=np.float32)
            mat = mat / np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-9)
            self.vecs.update(zip(wanted, mat, strict=True))
        vec = self.vecs.get(msg_id)
        if vec is None:
            return -1.0
        return max((float(vec @ self.vecs[o]) for o in others if o in self.vecs), default=-1.0)


def revised_slot(
    msg: dict[str, Any],
    context: dict[str, Any] | None,
    slots: list[Slot],
    known_text: dict[str, str],
    stats: cs.WordStats,
    exclude: set[str],
    threshold: float,
    vectors: MatterVectors | None = None,
    cosine: float = 1.0,
) -> Slot | None:
    """The newest record of ``msg``'s speaker (or a GROUP record they announced) on the same
    matter that the message says differently, or ``None``. ``context`` is the message before
    it in its session; ``vectors`` adds the embedding test at ``cosine``."""
    speaker = msg["speaker"]
    own = stats.words.get(msg["msg_id"], frozenset())
    words = set(own)
    if context is not None and context["session_id"] == msg["session_id"]:
        words |= stats.words.get(context["msg_id"], frozenset())
    if not words and vectors is None:
        return None
    for slot in reversed(slots):
        if not slot.from_ids or msg["msg_id"] in slot.from_ids:
            continue
        mine = slot.owner == speaker and slot.layer == "per_speaker_core"
        announced = slot.owner == GROUP_OWNER and slot.source == speaker
        other = not (mine or announced) and _corrects(msg, context, slot, known_text)
        if not (mine or announced or other) or _asked(slot.content):
            continue  # a question, or an answer kept with its question, is no state to revise
        old = set().union(*(stats.words.get(i, frozenset()) for i in slot.from_ids))
        sim = stats.similarity(words, old, need_rare=False) if words else 0.0
        if other and stats.similarity(set(own), old, need_rare=False) < threshold:
            continue  # a correction is on the matter in its own words, not by its context
        if sim < threshold and not (
            vectors is not None  # on the matter by embedding alone only with a change word
            and says_change(msg["text"])
            and vectors.cosine(msg["msg_id"], slot.from_ids, known_text) >= cosine
        ):
            continue
        old_text = " ".join(known_text.get(i, "") for i in slot.from_ids)
        if other or changes_state(msg["text"], old_text, exclude):
            return slot
    return None


def _corrects(
    msg: dict[str, Any],
    context: dict[str, Any] | None,
    slot: Slot,
    known_text: Mapping[str, str],
) -> bool:
    """Does ``msg`` correct a number of another person's statement ``slot`` (their own record,
    or a GROUP record they announced)? It answers them (the next turn of the session after
    the record's latest message, or a message opening with their name), does not open with a
    question, neither side is a view or a taste (:data:`~.rules_text.OPEN_TOPIC`), and the
    figures moved: each side holds a number in digits the other lacks ("it was 126, not
    98")."""
    author = slot.source
    if author == msg["speaker"] or not (
        slot.owner == author and slot.layer == "per_speaker_core" or slot.owner == GROUP_OWNER
    ):
        return False
    replies = (
        context is not None
        and context["session_id"] == msg["session_id"]
        and context["msg_id"] == slot.from_ids[-1]
    )
    first = author.split()[0] if author else ""
    named = bool(first) and re.match(rf"\W*@?{re.escape(first)}\b", msg["text"], re.I)
    opening = re.match(r"[^.!?]*[.!?]?", msg["text"].strip())
    if not (replies or named) or (opening is not None and opening.group().endswith("?")):
        return False  # a message that opens with a question asks back, it does not correct
    if rt.OPEN_TOPIC & {slot.family, rt.family(msg["text"])}:
        return False  # a view or a taste is each person's own, not a figure to set right
    # figures in digits only: a count said in words is seldom a figure being set right
    old_text = " ".join(known_text.get(i, "") for i in slot.from_ids)
    return _moved(rt.numbers(msg["text"]), rt.numbers(old_text))


def revision_text(msg: dict[str, Any], owner: str, config: Any, people: PersonResolver) -> str:
    """The state a revising message says, read from its whole text when none of its
    statements is the owner's own: in the third person, without an opening vocative ("Omar,
    I think ..."), the owner not repeated as its subject."""
    text = unaddressed(rt.strip_filler(msg["text"]), msg["speaker"], people, None, False, False)[0]
    return dated(
        concise(rt.third_person(text, msg["speaker"]), owner, msg["speaker"], config.elide),
        msg.get("ts"),
    )


def write_revision(
    config: Any,
    segment: Segment,
    msg: dict[str, Any],
    slot: Slot,
    candidates: list,
    actions: list[dict[str, Any]],
    known: list[dict[str, Any]],
    at: dict[str, int],
    people: PersonResolver,
) -> list:
    """Append the UPDATE of ``slot`` that ``msg`` revises to ``actions`` (``config``: the
    Writer's RulesConfig; ``people``: the segment's roster); returns the candidates of ``msg``
    left to write."""
    from speakerflow.ops.write.upsert import entry_id

    own = [
        c
        for c in candidates
        if c[0]["owner"] == slot.owner and not c[0]["content"].startswith(("asked: ", "Asked by "))
    ]
    content = "; ".join(c[0]["content"] for c in own) or revision_text(
        msg, slot.owner, config, people
    )
    before = known[at[slot.from_ids[-1]]]["ts"] if slot.from_ids[-1] in at else None
    content = f"{content} (before, {day_str(before)}: {last_clause(slot.content)})"
    new = [i for c in own for i in c[0]["from_ids"]] or [msg["msg_id"]]
    cited = cap(list(dict.fromkeys([*slot.from_ids, *new])), config.max_cited)
    utype = own[0][0]["utype"] if own else slot.utype
    actions.append(
        {
            "action": "UPDATE",
            "entry_id": slot.entry_id,
            "content": content,
            "utype": utype,
            "event": matter_key(slot.family, slot.topics),
            "from_ids": cited,
            # who says the new state (another person's correction is theirs: _corrects); the
            # slot keeps its author, whose later words revise it
            "source": msg["speaker"],
        }
    )
    slot.content, slot.from_ids, slot.utype, slot.pending = content, cited, utype, None
    slot.entry_id = entry_id(segment.group_id, segment.segment_id, "UPDATE", slot.entry_id, content)
    return [c for c in candidates if c[0]["owner"] != slot.owner]

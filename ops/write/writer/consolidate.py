"""What the consolidating rules Writer reads across messages: word statistics, links, cues.

The rules Writer (:mod:`.rules`) writes one record per statement and then *consolidates*:
a statement that continues an earlier record of the same owner and source on the same
matter becomes an UPDATE of it that cites both messages (a thread), a decision cites the
discussion that led to it, a recurring activity that members keep missing becomes a
GROUP norm. This module holds the deterministic pieces it needs:

* :class:`WordStats`: content words of every message the segment can see (its own and
  its ``history``), their document frequencies, and an IDF-weighted set similarity;
  "rare" words (few messages use them) are what two messages on one matter share;
* cue patterns: objections, absences (not coming, skipped, missed ...), proposals put
  as questions ("how about ...");
* :func:`discussion`: the messages of a session before a decision that argued it out.

Similarity is lexical (IDF-weighted overlap of content-word lemmas plus at least one
shared rare word), not MiniLM: it is deterministic, needs no model and costs nothing per
segment (the LoCoMo write stays well under 30 s on 2 cores).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from speakerflow.ops.write.writer import rules_text as rt

#: a reply that pushes back on a proposal
OBJECTION = re.compile(
    r"\b(can'?t|cannot|won'?t work|doesn'?t work|not sure|rather not|no way|don'?t think|not keen|"
    r"too (?:far|expensive|late|early)"
    r"|instead|but|i'?d prefer|prefer|not a fan|unless)\b",
    re.I,
)
#: a proposal put as a question or suggestion
PROPOSAL_Q = re.compile(
    r"\b(how about|what about|should we|shall we|why don'?t we|could we|can we|let'?s|anyone up for"
    r"|who'?s in|up for|fancy|we could|we should|maybe we|plans? for|who'?s coming"
    r"|are we (?:still )?(?:doing|on|going|meeting|having|booking))\b",
    re.I,
)
#: someone not taking part in a (recurring) activity
ABSENCE = re.compile(
    r"\b(not coming|not going|can'?t (?:make|come|join|do|go)|won'?t (?:make|be (?:there|coming|"
    r"joining))|skip(?:s|ping|ped)?"
    r"|sit(?:ting)? (?:this|it|the \w+) out|miss(?:ed|es|ing)|didn'?t (?:come|show|turn up|make "
    r"it)|no[- ]show"
    r"|bail(?:ed|ing|s)?|out this (?:time|week)|not (?:joining|making it)|drop(?:ped|ping)? out|"
    r"cancel(?:l?ed|l?ing|s)?)\b",
    re.I,
)
#: someone taking part
PRESENCE = re.compile(
    r"\b(i'?m (?:\w+ )?in\b|count me in|i'?ll be there|see you (?:there|all)|on my way|i'?m coming|"
    r"we'?re in|"
    r"i'?ll come|i can make it|i'?ll join)\b",
    re.I,
)
#: a member called out for a repeated absence or lapse ("late again", "every single time")
CALLOUT = re.compile(
    r"\b((?:second|third|fourth|fifth|\d+(?:st|nd|rd|th)) time|again|as usual|every (?:single "
    r")?time"
    r"|always (?:late|cancel\w*|bail\w*)|never (?:comes|shows|turns up))\b",
    re.I,
)
#: a conclusion drawn in a reply: a short phrase closed by "then" ("the park it is then",
#: "Saturday then!") settles what was being discussed
CONCLUSION = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|right|fine|so|alright|good)\W+)?(?!(?:see|talk|catch|speak|bye|until|"
    r"till|since|and|but|"
    r"even|by|back|just|only|good ?night|have fun|"
    r"enjoy)\b)((?:[\w'\u2019-]+\s+){0,5}?[\w'\u2019-]+)\s+then\s*(?:[^\w\s]|$)",
    re.I,
)
#: acceptance of what was just proposed or concluded, beyond a leading "yes"/"agreed"
ACCEPT = re.compile(
    r"^\W*(?:that|this)(?:'d| would| will|'ll)?\s+(?:i'?d\s+)?(?:actually\s+|really\s+|totally\s+)?"
    r"(?:like|love|work|do|be (?:great|perfect|good|nice|fine))\b|\bsounds like a plan\b|\bi'?d "
    r"like that\b"
    r"|^\W*(?:fine|ok(?:ay)?|sure|great|perfect|lovely|brilliant)\W*$",
    re.I,
)


def accepts(text: str) -> bool:
    """Does a reply accept what it answers ("yes", "agreed", "that would work")?"""
    return bool(rt.AGREEMENT.match(text) or ACCEPT.search(text))


def concludes(sentence: str) -> bool:
    """Is ``sentence`` a conclusion ("lunch at noon then, nothing formal")? Questions never are."""
    return (
        not sentence.rstrip().endswith("?")
        and len(sentence.split()) <= 12
        and bool(CONCLUSION.search(sentence))
    )


#: a message that plans or keeps up a group activity
def is_plan(text: str) -> bool:
    return bool(
        rt.PROPOSAL.search(text)
        or rt.PLAN.search(text)
        or rt.DECISION.search(text)
        or rt.NORM.search(text)
        or PRESENCE.search(text)
        or PROPOSAL_Q.search(text)
    )


#: absence words are cues, not what the activity is
_ABSENCE_WORDS = frozenset(
    "coming going make join skip skipped skipping missed miss missing sorry show bail bailed "
    "cancel "
    "cancelled canceled drop dropped sit third second fourth fifth again turn "
    # time units and generic verbs never name the activity
    "minute hour year month morning evening afternoon weekend enough come came get make made "
    "want need take took give put keep pace plan planning".split()
)


class WordStats:
    """Content words of the messages a segment sees, and how rare each word is among them."""

    def __init__(
        self, messages: Iterable[dict[str, Any]], exclude: set[str], memo: dict[str, frozenset[str]]
    ):
        self.words: dict[str, frozenset[str]] = {}
        df: Counter[str] = Counter()
        for m in messages:
            key = m["msg_id"]
            ws = memo.get(key)
            if ws is None:
                ws = memo[key] = frozenset(rt.topic_words(m["text"], exclude))
            self.words[key] = ws
            df.update(ws)
        self.df = df
        self.n = max(1, len(self.words))
        #: a word used by at most this many messages is rare
        self.rare_df = max(3, int(0.03 * self.n))
        self._idf: dict[str, float] = {}

    def idf(self, word: str) -> float:
        v = self._idf.get(word)
        if v is None:
            v = self._idf[word] = math.log((self.n + 1) / (self.df.get(word, 0) + 1)) + 1.0
        return v

    def rare(self, word: str) -> bool:
        return self.df.get(word, 0) <= self.rare_df

    def similarity(
        self, a: frozenset[str] | set[str], b: frozenset[str] | set[str], need_rare: bool = True
    ) -> float:
        """IDF-weighted cosine of two word sets, 0 unless they share a rare word (or, with
        ``need_rare=False``, any word)."""
        shared = a & b
        if not shared or (need_rare and not any(self.rare(w) for w in shared)):
            return 0.0
        wa = sum(self.idf(w) for w in a)
        wb = sum(self.idf(w) for w in b)
        return sum(self.idf(w) for w in shared) / math.sqrt(wa * wb) if wa and wb else 0.0

    def linked(
        self, msg_id: str, words: set[str] | frozenset[str], others: Iterable[str], threshold: float
    ) -> bool:
        """Does ``words`` (of message ``msg_id``) continue any of the messages ``others``?"""
        return any(
            o != msg_id and o in self.words and self.similarity(words, self.words[o]) >= threshold
            for o in others
        )


def discussion(
    known: list[dict[str, Any]], at: int, topics: set[str], stats: WordStats, lookback: int
) -> list[str]:
    """Ids of the messages that argued out the decision at ``known[at]``, oldest first.

    Looks back at most ``lookback`` messages of the same session for the earliest
    proposal sharing a topic word with the decision; from there on, every message that is a
    proposal, an objection, an agreement, or shares a topic word with the decision counts.
    """
    msg = known[at]
    window = []
    for j in range(at - 1, max(-1, at - 1 - lookback), -1):
        m = known[j]
        if m["session_id"] != msg["session_id"]:
            break
        window.append(m)
    window.reverse()
    start = None
    for i, m in enumerate(window):
        ws = stats.words.get(m["msg_id"], frozenset())
        if (ws & topics) and (
            rt.PROPOSAL.search(m["text"])
            or rt.PLAN.search(m["text"])
            or PROPOSAL_Q.search(m["text"])
            or rt.DECISION.search(m["text"])
        ):
            start = i
            break
    if start is None:
        # no proposal: the message the decision answers, when it is on the matter
        replied = next((m for m in window if m["msg_id"] == msg.get("reply_to")), None)
        if replied is not None and stats.words.get(replied["msg_id"], frozenset()) & topics:
            return [replied["msg_id"]]
        return []
    out = []
    for m in window[start:]:
        ws = stats.words.get(m["msg_id"], frozenset())
        text = m["text"]
        if (
            ws & topics
            or rt.AGREEMENT.match(text)
            or OBJECTION.search(text)
            or PROPOSAL_Q.search(text)
            or rt.PROPOSAL.search(text)
        ):
            out.append(m["msg_id"])
    return out


def activity_words(words: frozenset[str]) -> set[str]:
    """Content words of an absence/presence message that can name the activity."""
    return {w for w in words if w not in _ABSENCE_WORDS}

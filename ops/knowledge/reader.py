"""The general reader under the rules extractor: clause grammar, cues and prototypes.

Nothing here knows a statement template or a domain. A clause is read in four independent
steps:

* **clauses**: a text is split at sentence ends, semicolons and contrastive joins
  ("..., but ...") so that each clause carries at most one claim per relation;
* **values**: every number and category word in the clause is found with its position and is
  classified *by its own left context* (:mod:`.values`);
* **cues**: scoped negation (a negator within three words before a value or relation
  phrase), endings ("behind us", "dropped", "gone", "stopped"), corrections ("typo",
  "I meant", "X not Y"), thresholds and conditions ("alerts fire past", "if ... breaches"),
  hedges; the domain pack adds its own threshold and decoy words (:func:`patterns`);
* **prototypes**: when no phrase of the pack names the relation, the clause (entities masked
  to their type, numbers to ``N``) is compared with the relation *descriptions and examples*
  of the pack by MiniLM cosine similarity (nearest prototype, a threshold calibrated on dev
  data, see :data:`RELATION_THRESHOLD`). Request intents are classified the same way against
  each intent's descriptions and example requests.

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

from speakerflow.ops.knowledge.lexicon import Lexicon, lexicon_for

CLAUSE = re.compile(
    r"(?<=[.!?])\s+|;\s*|\n+|,?\s+\bbut\b\s+|,?\s+\bwhile\b\s+|,?\s+\bwhereas\b\s+|\s+-{1,2}\s+"
)
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
CORRECTION = re.compile(
    r"\b(typo|correction|corrected|i meant|meant to (?:say|write|type)|my bad|fat[- ]?finger\w*|"
    r"scratch that|should (?:read|say|have said)|misspoke|mistyped|misprint\w*|misreport\w*|"
    r"data fix|erratum|amended|oops|sorry)\b",
    re.IGNORECASE,
)
#: English of thresholds and conditions; the pack's ``reader.thresholds`` are added
#: (:func:`patterns`)
_THRESHOLD = (
    r"alerts? (?:fire|trigger|at|if|when|past|above|beyond)\w*|fires?|firing|trigger\w*|"
    r"threshold|breach\w*|exceed\w*|past a|beyond|automatically|limit for"
)
#: a negator that bounds a value instead of denying it: "no more than 5%", "nothing bigger than 2%",
#: "never above 3%"
BOUND = re.compile(
    r"\b(?:more|bigger|larger|higher|greater|less|lower|smaller|above|over|below|under|beyond|"
    r"past)\b",
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
#: neighbours per label of a category-value classifier (:func:`value_classifier`)
VALUE_K = 2


def clauses(text: str) -> list[str]:
    """``text`` split into clauses (empty pieces dropped)."""
    return [c.strip(" ,") for c in CLAUSE.split(text) if c and c.strip(" ,")]


# -- nearest-prototype classification -----------------------------------------------------------
_NUM = re.compile(r"[-+]?\d+(?:\.\d+)?")


def mask(clause: str, spans: list[tuple[int, int, str]], lex: Lexicon | None = None) -> str:
    """``clause`` with entity spans replaced by their type's mask ("the coin" in the trading
    pack; "it" for an unknown type) and numbers by ``N``."""
    words = (lex or lexicon_for()).masks
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
    from speakerflow.settings import model_cache_dir

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


@dataclass(frozen=True)
class Patterns:
    """The reader's patterns that take words from the pack: thresholds and conditions, decoys
    (what a percentage next to them is not) and anaphors ("that exposure")."""

    threshold: re.Pattern
    decoy: re.Pattern | None
    anaphor: re.Pattern | None


_PATTERNS: dict[str, Patterns] = {}


def patterns(lex: Lexicon | None = None) -> Patterns:
    """:class:`Patterns` of ``lex`` (default: the default pack), compiled once per pack."""
    lex = lex or lexicon_for()
    if lex.digest not in _PATTERNS:
        extra = f"|{lex.thresholds}" if lex.thresholds else ""
        nouns = "|".join(re.escape(a) for a in lex.anaphor_relation)
        _PATTERNS[lex.digest] = Patterns(
            re.compile(rf"\b(?:{_THRESHOLD}{extra})\b", re.IGNORECASE),
            re.compile(rf"(?:{lex.decoys})\b", re.IGNORECASE) if lex.decoys else None,
            re.compile(rf"\b(?:that|this|the)\s+({nouns})\b", re.IGNORECASE) if nouns else None,
        )
    return _PATTERNS[lex.digest]


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


def relation_prototypes(lex: Lexicon | None = None) -> dict[str, tuple[str, ...]]:
    """Each relation's descriptions and example statements, and ``_none``: what a clause with a
    number is when it states no relation (the pack's ``reader.no_relation_examples``)."""
    lex = lex or lexicon_for()
    protos = {r.name: r.description + r.examples for r in lex.relations if r.description}
    if lex.no_relation_examples:
        protos["_none"] = lex.no_relation_examples
    return protos


_SHARED: dict[tuple[str, str], PrototypeClassifier] = {}


def _shared(key: tuple[str, str], make) -> PrototypeClassifier:
    if key not in _SHARED:
        _SHARED[key] = make()
    return _SHARED[key]


def relation_classifier(embedder=None, lex: Lexicon | None = None) -> PrototypeClassifier:
    """The process-wide relation classifier of a pack (one MiniLM, one memo) unless
    ``embedder`` is given."""
    lex = lex or lexicon_for()
    if embedder is not None:
        return PrototypeClassifier(relation_prototypes(lex), embedder)
    return _shared(("relations", lex.digest), lambda: PrototypeClassifier(relation_prototypes(lex)))


def value_classifier(
    relation: str, embedder=None, lex: Lexicon | None = None
) -> PrototypeClassifier | None:
    """The process-wide classifier of a category relation's values said without a value word:
    k nearest of the pack's ``value_examples`` (centred); None when the relation has none."""
    lex = lex or lexicon_for()
    examples = lex.value_examples.get(relation)
    if not examples:
        return None
    protos = {v: tuple(ex) for v, ex in examples.items()}
    if embedder is not None:
        return ExemplarClassifier(protos, embedder, VALUE_K)
    return _shared(
        (f"values:{relation}", lex.digest), lambda: ExemplarClassifier(protos, k=VALUE_K)
    )


def intent_exemplars(lex: Lexicon | None = None) -> dict[str, tuple[str, ...]]:
    """Each task family's descriptions and example requests, plus ``other`` (the pack's
    ``chatter``: requests for no knowledge)."""
    lex = lex or lexicon_for()
    d, ex = lex.intent_descriptions, lex.intent_examples
    out = {k: tuple(d.get(k, ())) + tuple(ex.get(k, ())) for k in (*d, *ex)}
    return {k: v for k, v in out.items() if v}


def intent_classifier(
    embedder=None, k: int = INTENT_K, lex: Lexicon | None = None
) -> PrototypeClassifier:
    """The process-wide intent classifier of a pack: k nearest exemplars
    (:func:`intent_exemplars`)."""
    lex = lex or lexicon_for()
    if embedder is not None:
        return ExemplarClassifier(intent_exemplars(lex), embedder, k)
    return _shared(("intents", lex.digest), lambda: ExemplarClassifier(intent_exemplars(lex), k=k))

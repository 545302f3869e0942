"""SpeakerLevenshtein: owner-bucketed, coordinate-gated, one-to-one soft F1 of derived states.

SpeakerMem-R1 appendix E (Eqs. 7, 13-17). For a predicted record ``i`` and a reference
record ``j``::

    soft(i, j)  = 0.60 * tokenF1(c_i, c_j) + 0.40 * SequenceMatcher(T_i, T_j).ratio()
    kappa(i, j) = soft(i, j)  if owner, source and layer agree and soft >= 0.50, else 0

Records are bucketed by owner (``GROUP`` is its own owner). Within each bucket a
maximum-weight one-to-one matching (Hungarian, :func:`scipy.optimize.linear_sum_assignment`)
picks pairs, and ``F_p = 2 * sum(kappa) / (|M_p| + |M*_p|)``: a prediction cannot match two
references, and both omissions and over-writing enlarge the denominator. The state
potential is ``Phi_SL = 0.80 * mean_p F_p + 0.20 * min_p F_p`` over the union of owners.

Content normalisation: lower-case; tokens are ``[a-z0-9]+`` runs and single CJK
characters; SequenceMatcher runs on the tokens joined by spaces. Token F1 counts repeated
tokens (multiset overlap). Despite the name no edit distance is used (as in the paper).

Bucket *kinds* for reports: ``GROUP`` (owner is GROUP), ``person`` (owner == source: a
self-report) and ``cross-person`` (A says something about B). The gate makes owner and
source agree within a match, so a match never crosses kinds and per-kind F is exact.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Any

import numpy as np

GROUP = "GROUP"
ALPHA_TOK = 0.60
ALPHA_SEQ = 0.40
GATE = 0.50
W_MACRO = 0.80
W_WORST = 0.20
W_OLD = 0.50
W_NEW = 0.50
KINDS = ("person", "GROUP", "cross-person")

_TOKEN = re.compile(
    r"[a-z0-9]+|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]"
)


@lru_cache(maxsize=65536)
def tokens(text: str) -> tuple[str, ...]:
    """Normalised tokens of ``text`` (lower-case alphanumeric runs, one token per CJK char)."""
    return tuple(_TOKEN.findall((text or "").lower()))


def token_f1(a: Sequence[str], b: Sequence[str]) -> float:
    """Multiset token F1 in [0, 1]; 0 when either side is empty."""
    if not a or not b:
        return 0.0
    common = sum((Counter(a) & Counter(b)).values())
    if common == 0:
        return 0.0
    p, r = common / len(a), common / len(b)
    return 2 * p * r / (p + r)


@lru_cache(maxsize=65536)
def soft_match(a: str, b: str) -> float:
    """The ungated soft content match ``0.60 token-F1 + 0.40 sequence ratio`` in [0, 1]."""
    ta, tb = tokens(a), tokens(b)
    if not ta and not tb:
        return 1.0
    seq = SequenceMatcher(None, " ".join(ta), " ".join(tb), autojunk=False).ratio()
    return ALPHA_TOK * token_f1(ta, tb) + ALPHA_SEQ * seq


def _coord(value: Any) -> str:
    return str(value or "").strip().casefold()


def coords_agree(pred: dict[str, Any], ref: dict[str, Any], keys: Sequence[str]) -> bool:
    """Whether two records agree on every coordinate in ``keys`` (case-folded)."""
    return all(_coord(pred.get(k)) == _coord(ref.get(k)) for k in keys)


def kappa(pred: dict[str, Any], ref: dict[str, Any]) -> float:
    """Gated match of two records: the soft match if owner, source and layer agree and the
    soft match is at least 0.50, else 0."""
    if not coords_agree(pred, ref, ("owner", "source", "layer")):
        return 0.0
    s = soft_match(str(pred.get("content", "")), str(ref.get("content", "")))
    return s if s >= GATE else 0.0


def bucket_kind(rec: dict[str, Any]) -> str:
    """``GROUP``, ``person`` (owner == source) or ``cross-person`` (owner != source)."""
    owner = _coord(rec.get("owner"))
    if owner == GROUP.casefold():
        return "GROUP"
    return "person" if owner == _coord(rec.get("source")) else "cross-person"


def _assign(weights: np.ndarray) -> list[tuple[int, int]]:
    """Maximum-weight one-to-one pairs (only pairs with positive weight are returned)."""
    if weights.size == 0:
        return []
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(weights, maximize=True)
    return [(int(r), int(c)) for r, c in zip(rows, cols, strict=True) if weights[r, c] > 0]


@dataclass
class BucketScore:
    """One bucket: ``f`` = 2 * ``matched`` / (``n_pred`` + ``n_ref``); 1.0 when both are empty."""

    n_pred: int = 0
    n_ref: int = 0
    matched: float = 0.0  # sum of kappa over the chosen one-to-one pairs
    pairs: int = 0

    @property
    def f(self) -> float:
        total = self.n_pred + self.n_ref
        return 1.0 if total == 0 else 2.0 * self.matched / total

    def add(self, other: BucketScore) -> None:
        self.n_pred += other.n_pred
        self.n_ref += other.n_ref
        self.matched += other.matched
        self.pairs += other.pairs

    def as_dict(self) -> dict[str, float | int]:
        return {
            "f": round(self.f, 6),
            "n_pred": self.n_pred,
            "n_ref": self.n_ref,
            "matched_weight": round(self.matched, 6),
            "pairs": self.pairs,
        }


@dataclass
class StateScore:
    """SpeakerLevenshtein of a predicted state against a reference state.

    ``f`` is the micro F over all records (every record weighs the same); ``by_owner`` the
    per-owner F_p; ``by_kind`` the person / GROUP / cross-person F; ``phi`` the paper's
    potential ``0.80 * mean F_p + 0.20 * min F_p`` (the reward's state term).
    """

    total: BucketScore = field(default_factory=BucketScore)
    by_owner: dict[str, BucketScore] = field(default_factory=dict)
    by_kind: dict[str, BucketScore] = field(
        default_factory=lambda: {k: BucketScore() for k in KINDS}
    )

    @property
    def f(self) -> float:
        return self.total.f

    @property
    def macro(self) -> float:
        return 1.0 if not self.by_owner else float(np.mean([b.f for b in self.by_owner.values()]))

    @property
    def worst(self) -> float:
        return 1.0 if not self.by_owner else min(b.f for b in self.by_owner.values())

    @property
    def phi(self) -> float:
        return W_MACRO * self.macro + W_WORST * self.worst


def score_states(pred: Sequence[dict[str, Any]], ref: Sequence[dict[str, Any]]) -> StateScore:
    """Match predicted records against reference records (each a dict with owner, source,
    layer, content) and return the :class:`StateScore`."""
    out = StateScore()
    owners: dict[str, tuple[list[dict], list[dict]]] = {}
    for rec in pred:
        owners.setdefault(_coord(rec.get("owner")), ([], []))[0].append(rec)
    for rec in ref:
        owners.setdefault(_coord(rec.get("owner")), ([], []))[1].append(rec)
    for owner, (p, r) in sorted(owners.items()):
        weights = np.array([[kappa(a, b) for b in r] for a in p]).reshape(len(p), len(r))
        pairs = _assign(weights)
        bucket = BucketScore(
            len(p), len(r), float(sum(weights[i, j] for i, j in pairs)), len(pairs)
        )
        out.by_owner[owner] = bucket
        out.total.add(bucket)
        # per kind: counts from each side, matched weight from pairs (never cross-kind)
        for rec in p:
            out.by_kind[bucket_kind(rec)].n_pred += 1
        for rec in r:
            out.by_kind[bucket_kind(rec)].n_ref += 1
        for i, j in pairs:
            kind = out.by_kind[bucket_kind(p[i])]
            kind.matched += float(weights[i, j])
            kind.pairs += 1
    return out


Edge = tuple[dict[str, Any], dict[str, Any]]


def chain_kappa(pred: Edge, ref: Edge) -> float:
    """Gated match of two UPDATE edges: owner and layer must agree, then
    ``0.5 soft(old, old*) + 0.5 soft(new, new*)``, kept when at least 0.50."""
    (po, pn), (ro, rn) = pred, ref
    if any(_coord(po.get(k)) != _coord(ro.get(k)) for k in ("owner", "layer")):
        return 0.0
    s = W_OLD * soft_match(
        str(po.get("content", "")), str(ro.get("content", ""))
    ) + W_NEW * soft_match(str(pn.get("content", "")), str(rn.get("content", "")))
    return s if s >= GATE else 0.0


def score_chains(pred: Sequence[Edge], ref: Sequence[Edge]) -> BucketScore:
    """One-to-one soft F1 over UPDATE edges (``f`` is 1.0 when neither side has an edge)."""
    weights = np.array([[chain_kappa(a, b) for b in ref] for a in pred]).reshape(
        len(pred), len(ref)
    )
    pairs = _assign(weights)
    return BucketScore(len(pred), len(ref), float(sum(weights[i, j] for i, j in pairs)), len(pairs))

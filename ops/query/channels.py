"""System 1's recall channels and their fusion: the per-message scores beside BM25
(window, session, dense, dense window, records), their weights by question kind
(:class:`RecallConfig`, :func:`query_weights`), weighted reciprocal-rank fusion
(:func:`fuse`) and the protection of System 1's confident hits. The exact path
(:mod:`.recall`) and the bounded one (:mod:`.recall_bounded`) share them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from speakerflow.ops.core.base import OperatorConfig
from speakerflow.ops.query.group_view import GroupView
from speakerflow.ops.query.project import question_kind
from speakerflow.ops.query.record_view import record_channel
from speakerflow.ops.text.dense_index import dense_scores
from speakerflow.ops.text.embed import Embedder, encode_query


def window_scores(view: GroupView, base: np.ndarray, weight: float = 0.5) -> np.ndarray:
    """``base`` plus ``weight`` times the neighbours' ``base`` (same session only)."""
    padded = np.append(base, 0.0)  # index -1 reads the appended 0.0
    return base + weight * (padded[view.prev] + padded[view.next])


def window_max(view: GroupView, scores: np.ndarray, width: int = 1) -> np.ndarray:
    """Each message gets the best score of the windows it belongs to: those centred on a
    message at most ``width`` turns away in the same session."""
    out = scores.copy()
    left = right = np.arange(len(scores))
    for _ in range(width):
        left = np.where(left >= 0, np.append(view.prev, -1)[left], -1)
        right = np.where(right >= 0, np.append(view.next, -1)[right], -1)
        padded = np.append(scores, 0.0)
        out = np.maximum(out, np.maximum(padded[left], padded[right]))
    return out


def session_scores(view: GroupView, base: np.ndarray) -> np.ndarray:
    """Each message gets the best ``base`` score of its session."""
    best = np.zeros(int(view.session_of.max()) + 1 if len(view) else 0)
    np.maximum.at(best, view.session_of, base)
    return best[view.session_of]


def rank_of(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each entry (ties broken by position); zero scores rank last."""
    order = np.argsort(-scores, kind="stable")  # ties by position
    ranks = np.empty(len(scores), dtype=np.float64)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


def fuse(
    channels: dict[str, np.ndarray], weights: dict[str, float], rrf_k: float = 60.0
) -> np.ndarray:
    """Weighted reciprocal-rank fusion: sum of ``w / (rrf_k + rank)`` over channels.

    A message that a channel scores 0 (no evidence at all) gets nothing from it.
    """
    total = None
    for name, scores in channels.items():
        w = weights.get(name, 0.0)
        if w <= 0:
            continue
        part = w / (rrf_k + rank_of(scores))
        part[scores <= 0] = 0.0
        total = part if total is None else total + part
    if total is None:
        raise ValueError(
            f"fusion has no channel with weight > 0 among {sorted(channels)}; set weights"
        )
    return total


class RecallConfig(OperatorConfig):
    """Budgets and weights of System 1 recall.

    ``pool`` is the recall-n of the paper (default 40); weights are per channel in the
    reciprocal-rank fusion (0 disables a channel); ``window_weight`` is how much a
    neighbour's BM25 adds to a message's window score; ``dense_window`` is the number of
    turns on each side of a message in its dense window.
    """

    pool: int = 40
    rrf_k: float = 60.0
    weights: dict[str, float] = {
        "bm25": 0.0,
        "window": 1.0,
        "session": 0.75,
        "dense": 0.5,
        "dense_window": 0.5,
        "records": 0.25,
    }
    window_weight: float = 0.5
    dense_window: int = 1
    #: records channel: how many best-matching records rank their messages, and which layers
    record_top: int = 40
    record_layers: tuple[str, ...] = (
        "per_speaker_core",
        "per_speaker_profile",
        "group_interaction",
        "group_insight",
    )
    #: System 2 by question kind (:func:`~speakerflow.ops.query.project.question_kind`): weight
    #: overrides for ``aggregate`` questions (only channels already on; ``-s2`` stays off)
    aggregate_weights: dict[str, float] = {"records": 0.5}
    #: the same for ``broad`` questions (roll-ups, group matters, changes)
    broad_weights: dict[str, float] = {"records": 0.5}
    #: ``focused`` questions: a message some System 1 channel ranks in its top ``protect_top``
    #: cannot be passed by a message that only the records channel lifts (0: off)
    protect_top: int = 5


@dataclass
class RecallResult:
    """Fused scores over all messages and the pool (rows, best first)."""

    fused: np.ndarray
    pool: list[int]
    channels: Mapping[str, np.ndarray]


def query_weights(query: str, config: RecallConfig) -> tuple[dict[str, float], str]:
    """The channel weights for ``query`` and its kind
    (:func:`~speakerflow.ops.query.project.question_kind`): ``aggregate`` and ``broad`` questions
    take ``config.aggregate_weights`` / ``config.broad_weights`` for channels that are on."""
    kind = question_kind(query)
    weights = dict(config.weights)
    override = {"aggregate": config.aggregate_weights, "broad": config.broad_weights}.get(kind, {})
    weights.update({k: w for k, w in override.items() if weights.get(k, 0) > 0})
    return weights, kind


#: the System 1 channels whose top ranks count as confident (the session prior ranks whole
#: sessions alike, so its top ranks say nothing about one message)
CONFIDENT_CHANNELS = ("bm25", "window", "dense", "dense_window")


def top_mask(scores: np.ndarray, top: int) -> np.ndarray:
    """True for the ``top`` best positive entries of ``scores`` (:func:`rank_of` order: ties by
    position), found by partition in linear time."""
    mask = np.zeros(len(scores), dtype=bool)
    positive = np.flatnonzero(scores > 0)
    if top <= 0 or not len(positive):
        return mask
    if len(positive) <= top:
        mask[positive] = True
        return mask
    kth = -np.partition(-scores[positive], top - 1)[top - 1]
    above = positive[scores[positive] > kth]
    ties = positive[scores[positive] == kth][: top - len(above)]
    mask[above] = True
    mask[ties] = True
    return mask


def protect_confident(
    channels,
    weights: dict[str, float],
    fused: np.ndarray,
    top: int,
    rrf_k: float = 60.0,
    s1: np.ndarray | None = None,
) -> np.ndarray:
    """``fused`` (System 1 plus the records channel) with System 1's confident hits protected.

    A message is confident when some System 1 channel (:data:`CONFIDENT_CHANNELS`) ranks it in
    its top ``top``. Every other message keeps its fused score but stays below each confident
    message that System 1 alone (the fusion without ``records``) ranked above it: the records
    channel may lift a confident message, and may reorder the others, but it cannot push a
    confident System 1 hit down by lifting another message past it. By construction, a message
    that System 1 ranked below a confident message passes it only when it is confident itself.
    """
    if s1 is None:
        system1 = {k: v for k, v in channels.items() if k != "records" and weights.get(k, 0) > 0}
        if not system1:
            return fused
        s1 = fuse(system1, weights, rrf_k)
    confident = np.zeros(len(s1), dtype=bool)
    for name in CONFIDENT_CHANNELS:
        if name in channels:
            confident |= top_mask(channels[name], top)
    if not confident.any():
        return fused
    held = np.sort(s1[confident])
    # the lowest confident System 1 score strictly above each message's own System 1 score
    nxt = np.searchsorted(held, s1, side="right")
    cap = np.where(nxt < len(held), held[np.minimum(nxt, len(held) - 1)], np.inf)
    out = fused.copy()
    other = ~confident
    out[other] = np.minimum(fused[other], np.nextafter(cap[other], -np.inf))
    return out


def dense_channels(
    view: GroupView,
    query: str,
    embedder: Embedder,
    weights: Mapping[str, float],
    config: RecallConfig,
) -> dict[str, np.ndarray]:
    """The channels that need the embedder, one score per message of the group, for the
    weights that are on: ``dense`` (the ANN index above a size threshold), ``dense_window``
    and ``records``. Shared by :func:`recall` and the bounded path."""
    out: dict[str, np.ndarray] = {}
    qvec = (
        encode_query(embedder, query)
        if any(weights.get(c, 0) > 0 for c in ("dense", "dense_window"))
        else None
    )
    if qvec is not None and weights.get("dense", 0) > 0:
        out["dense"] = dense_scores(view, embedder, qvec)  # ANN index above a size threshold
    if qvec is not None and weights.get("dense_window", 0) > 0:
        sims = np.clip(view.window_matrix(embedder, config.dense_window) @ qvec, 1e-6, None)
        out["dense_window"] = window_max(view, sims.astype(np.float64), config.dense_window)
    if weights.get("records", 0) > 0 and config.record_layers:
        out["records"] = record_channel(
            view, query, embedder, config.record_layers, config.record_top
        )
    return out

"""Learned selection of the rules Writer's candidate records (a salience model).

The rules Writer proposes a record for almost every statement; most of them are records no
careful note-taker would keep (SocialMem training networks: 570 heads against the
teacher's 420, 119 with a teacher partner). :class:`Selector` scores each candidate ADD
with a logistic model over general features of the record and the messages around it
(:func:`features`: record kind and type, length, how much of its message it keeps, how rare
its words are in the group, whether others take its matter up, whether it comes from a
question ...) and the Writer drops the candidates scoring below the calibrated threshold.

No word lists, no embedder: the features are counts and ratios over the conversation, so
the model needs nothing beyond numpy and behaves the same with or without an embedder.
The weights live in ``salience.json`` next to this module; ``python -m
speakerflow.training.writer_selector`` refits them (labels: whether a candidate finds a
teacher partner under SpeakerLevenshtein's own matching, on half ``a`` of the SocialMem
training networks) and picks the threshold on the same half.

Deterministic: a fixed weight file and pure arithmetic (no randomness, no model runtime).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from speakerflow.schemas import GROUP_OWNER

from . import consolidate as cs
from . import rules_text as rt

#: the shipped weights (refit with ``python -m speakerflow.training.writer_selector``)
WEIGHTS_PATH = Path(__file__).with_name("salience.json")

_UTYPES = ("fact", "preference", "stance", "observation", "decision")

#: feature names, in the order :func:`features` returns them
FEATURES: tuple[str, ...] = (
    "kind_person",
    "kind_cross",
    "kind_group",
    *(f"utype_{u}" for u in _UTYPES),
    "utype_other",
    "asked",
    "answered",
    "log_words",
    "log_words_sq",
    "clauses",
    "log_cited",
    "from_question",
    "log_message_words",
    "message_coverage",
    "log_topic_words",
    "mean_idf",
    "max_idf",
    "has_number",
    "uptake",
    "position",
    "speaker_share",
)


def features(
    act: dict[str, Any],
    texts: dict[str, tuple[str, str]],
    stats: cs.WordStats,
    segment_ids: Sequence[str],
) -> list[float]:
    """The feature row of one candidate record (see :data:`FEATURES`).

    ``act`` is the ADD action (owner, source, layer, utype, content, from_ids); ``texts``
    maps a message id to ``(speaker, text)`` for every message the segment sees; ``stats``
    are the content-word statistics of those messages; ``segment_ids`` the segment's own
    message ids in order.
    """
    owner, source = str(act.get("owner") or ""), str(act.get("source") or "")
    content = str(act.get("content") or "")
    cited = [i for i in act.get("from_ids") or [] if i in texts]
    group = owner == GROUP_OWNER
    utype = str(act.get("utype") or "fact")
    n_words = len(rt.words(content))
    lw = math.log1p(n_words)
    # the source's own message the record comes from (the newest cited one by the source)
    own = [i for i in cited if texts[i][0] == source] or cited
    main = own[-1] if own else None
    msg_text = texts[main][1] if main else ""
    msg_words = stats.words.get(main, frozenset()) if main else frozenset()
    rec_words = rt.topic_words(content, ())
    coverage = len(rec_words & msg_words) / len(msg_words) if msg_words else 0.0
    idfs = [stats.idf(w) / math.log(stats.n + 2) for w in rec_words]
    # others taking the matter up: later messages of the segment by other speakers sharing a
    # rare content word with the record's message
    uptake = 0
    pos = 0.0
    if main is not None and main in segment_ids:
        k = list(segment_ids).index(main)
        pos = k / max(1, len(segment_ids) - 1)
        for other in segment_ids[k + 1 :]:
            if texts[other][0] != source and stats.similarity(msg_words, stats.words[other]) > 0:
                uptake += 1
    share = (
        sum(1 for i in segment_ids if texts[i][0] == source) / len(segment_ids)
        if segment_ids
        else 0.0
    )
    return [
        float(not group and owner == source),
        float(not group and owner != source),
        float(group),
        *(float(utype == u) for u in _UTYPES),
        float(utype not in _UTYPES),
        float(content.startswith("asked:") or f"{source} asks " in content),
        float("answered:" in content),
        lw,
        lw * lw,
        float(content.count("; ")),
        math.log1p(len(cited)),
        float(main is not None and rt.is_question(msg_text)),
        math.log1p(len(rt.words(msg_text))),
        coverage,
        math.log1p(len(rec_words)),
        float(np.mean(idfs)) if idfs else 0.0,
        max(idfs, default=0.0),
        float(bool(rt.numbers(content))),
        math.log1p(uptake),
        pos,
        share,
    ]


class Selector:
    """A fitted logistic model: ``score`` = P(the record is one the teacher keeps).

    Weights file (JSON): ``features`` (names, must equal :data:`FEATURES`), ``mean`` and
    ``scale`` (standardisation), ``coef``, ``intercept``, ``threshold`` and a free-form
    ``fit`` block describing how it was fitted.
    """

    def __init__(self, spec: dict[str, Any]):
        if tuple(spec["features"]) != FEATURES:
            raise ValueError(
                "salience weights were fitted on other features; refit them with "
                "python -m speakerflow.training.writer_selector"
            )
        self.mean = np.asarray(spec["mean"], dtype=np.float64)
        self.scale = np.asarray(spec["scale"], dtype=np.float64)
        self.coef = np.asarray(spec["coef"], dtype=np.float64)
        self.intercept = float(spec["intercept"])
        self.threshold = float(spec["threshold"])
        self.spec = spec

    def scores(self, rows: np.ndarray) -> np.ndarray:
        """P(kept) per feature row."""
        if len(rows) == 0:
            return np.zeros(0)
        z = ((np.asarray(rows, dtype=np.float64) - self.mean) / self.scale) @ self.coef
        return 1.0 / (1.0 + np.exp(-(z + self.intercept)))


@lru_cache(maxsize=4)
def load_selector(path: str | None = None) -> Selector:
    """The selector of ``path`` (default: the shipped :data:`WEIGHTS_PATH`), read once."""
    return Selector(json.loads(Path(path or WEIGHTS_PATH).read_text()))

"""A learned choice among the scoring picker's best sentences (``AnswerConfig(picker="learned")``).

The scoring picker (:mod:`.answer_pick`) scores every sentence of the evidence and then hand
rules choose among those close to the best (the latest for "now", the earliest for "at first",
a correction for an amount ...). Those rules were read off dev failures and did not carry to
new conversations (docs/query-path.md, "What is weak"). Here the choice is a listwise
logistic model instead: for the ``TOP`` best-scored sentences it reads a few general features
(the score and its gap to the best, the rank, where the sentence stands in time among the
candidates crossed with the question's time focus, whether the named person said it, whether
it says the date / number / value the question type asks for, whether it is a question, an
earlier state of a record's chain, ...), and picks the sentence the model gives the highest
probability of coming from a message that holds the answer. The weights are fitted by
:mod:`speakerflow.training.picker` on answer sets (``speakerflow train picker``), the
gold messages of each question as the target, and shipped as ``picker_weights.json`` beside
this module. Without weights the scoring picker's own rules choose.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

from speakerflow.ops.query.answer_dates import has_date
from speakerflow.ops.query.answer_intent import Intent
from speakerflow.ops.query.answer_score import has_number
from speakerflow.ops.query.answer_units import TextMemo, Unit

#: how many of the best-scored sentences the model chooses among
TOP = 12
WEIGHTS = Path(__file__).with_name("picker_weights.json")

FEATURES = (
    "score",
    "gap",
    "position",
    "time_rank",
    "current_x_time",
    "original_x_early",
    "present_x_time",
    "own_words",
    "date",
    "number",
    "quantity_x_number",
    "asks",
    "history",
    "current_x_history",
    "record_cited",
    "settles",
    "words",
    "top_message",
)


def features(ranked: list[tuple[float, Unit]], intent: Intent, memo: TextMemo) -> list[list[float]]:
    """One feature row (:data:`FEATURES`) for each of the first :data:`TOP` of ``ranked``."""
    head = ranked[:TOP]
    if not head:
        return []
    top = head[0][0]
    times = sorted({u.ts for _, u in head if u.ts is not None})
    span = max(len(times) - 1, 1)
    current = float(intent.focus == "current")
    original = float(intent.focus == "original")
    present = float(bool(intent.present))
    rows = []
    for i, (s, u) in enumerate(head):
        t = times.index(u.ts) / span if u.ts is not None and len(times) > 1 else 0.5
        date = has_date(u, memo)
        number = float(has_number(u.text))
        row = [
            s,
            s - top,
            i / TOP,
            t,
            current * t,
            original * (1.0 - t),
            present * t,
            float(bool(u.speaker) and u.speaker in intent.people),
            date,
            number,
            float(bool(intent.quantity)) * number,
            float(u.asks),
            float(u.history),
            current * float(u.history),
            float(bool(u.records) or u.via_record),
            float(u.settles),
            math.log1p(len(u.text.split())),
            float(u.msg_id == head[0][1].msg_id),
        ]
        rows.append([float(x) for x in row])  # plain floats: the scores are numpy scalars
    return rows


@functools.cache
def load_weights(path: str = str(WEIGHTS)) -> dict | None:
    """The fitted weights (``mean``, ``scale``, ``coef`` per feature), or ``None``."""
    p = Path(path)
    if not p.exists():
        return None
    data = json.loads(p.read_text())
    if list(data.get("features", [])) != list(FEATURES):
        raise ValueError(f"{p}: its features {data.get('features')} are not {list(FEATURES)}")
    return data


def logits(rows: list[list[float]], weights: dict) -> list[float]:
    out = []
    for row in rows:
        parts = zip(row, weights["mean"], weights["scale"], weights["coef"], strict=True)
        out.append(sum(c * (x - m) / sc for x, m, sc, c in parts))
    return out


def best_index(rows: list[list[float]], weights: dict) -> int:
    """The row with the highest logit (the first of a tie)."""
    z = logits(rows, weights)
    return max(range(len(z)), key=lambda i: (z[i], -i))


def choose(ranked: list[tuple[float, Unit]], intent: Intent, memo: TextMemo, weights: dict) -> Unit:
    """The sentence of ``ranked``'s first :data:`TOP` with the highest logit."""
    return ranked[best_index(features(ranked, intent, memo), weights)][1]

"""Per-person answers of the scoring picker: one line per person from their own words, read
where the matter is discussed, and a named person's own closest messages as candidates."""

from __future__ import annotations

import numpy as np

from speakerflow.ops.query.answer_config import AnswerConfig
from speakerflow.ops.query.answer_intent import Intent
from speakerflow.ops.query.answer_score import by_time, focus_words, pick, score_units
from speakerflow.ops.query.answer_text import statement_of, write_line
from speakerflow.ops.query.answer_units import Messages, TextMemo, Unit
from speakerflow.schemas import EvidenceItem, Projection


def own_units(
    person: str,
    messages: Messages,
    question: str,
    embedder,
    memo: TextMemo,
    k: int,
    window: range | None = None,
):
    """Units of the ``k`` messages of ``person`` closest to the question (the group's
    cached message vectors), and of all their messages in ``window`` (view rows: the
    stretch where the matter is discussed): a person's own words when the evidence holds few
    of theirs."""
    from speakerflow.ops.text.embed import encode_query

    view = messages.view
    rows = [r for r, s in enumerate(view.speakers) if s == person]
    if not rows:
        return []
    best: list[int] = []
    if embedder is not None and k > 0:
        sims = view.dense_matrix(embedder)[rows] @ encode_query(embedder, question)
        best = [rows[j] for j in np.argsort(-sims, kind="stable")[:k]]
    if window is not None:
        best += [r for r in rows if r in window and r not in best]
    out = []
    for r in best:
        sents = memo.split(view.texts[r])
        for i, s in enumerate(sents):
            out.append(
                Unit(
                    s,
                    view.ids[r],
                    person,
                    view.ts[r],
                    50,
                    index=i,
                    siblings=tuple(sents),
                    terms=memo.words(s),
                    session=view.sessions[r],
                )
            )
    return out


def with_own(
    person: str,
    units: list[Unit],
    messages: Messages | None,
    question: str,
    embedder,
    memo: TextMemo,
    k: int,
    window: range | None = None,
) -> list[Unit]:
    """``units`` and the person's own closest messages (and those in ``window``) the
    evidence does not hold."""
    if messages is None:
        return units
    seen = {u.msg_id for u in units}
    found = own_units(person, messages, question, embedder, memo, k, window)
    return units + [u for u in found if u.msg_id not in seen]


def near(u: Unit, anchor: Unit, window: range | None, messages: Messages) -> float:
    """1 for a message in the discussion window, 0.5 elsewhere in its session, else 0."""
    row = messages.view.pos.get(u.msg_id) if u.msg_id else None
    if window is not None and row is not None and row in window:
        return 1.0
    return 0.5 if u.session is not None and u.session == anchor.session else 0.0


def person_lines(
    units: list[Unit],
    projection: Projection,
    intent: Intent,
    names: list[str],
    evidence: list[EvidenceItem],
    messages: Messages | None,
    embedder,
    config: AnswerConfig,
    memo: TextMemo,
) -> str:
    people = [r for r in intent.people if r in names] or [
        p
        for p in dict.fromkeys(
            [e.row for e in evidence if e.row not in (None, "GROUP", "ALL")]
            + [u.speaker for u in units if u.speaker]
        )
        if p in names
    ]
    empty = {e.row for e in evidence if e.kind == "empty_row"}
    # the matter is discussed in one place: each person's view is what they said there (the
    # session of the best answers; the earliest of them for "at first", the latest for "now")
    overall = score_units(units, projection, intent, names, messages, embedder, config, memo)
    window = anchor = None
    if overall:
        top = [u for _, u in overall[:3]]
        anchor = (
            by_time(top, latest=intent.focus == "current")
            if intent.focus in ("original", "current")
            else top[0]
        )
        row = messages.view.pos.get(anchor.msg_id) if messages and anchor.msg_id else None
        if row is not None:
            # the discussion: from a few turns before the anchor to the turns after it
            window = range(max(0, row - 2), row + config.discussion_turns + 1)
    lines = []
    for person in people:
        mine = [u for u in units if u.speaker == person and not u.is_record]
        mine = with_own(
            person, mine, messages, projection.question, embedder, memo, config.own_messages, window
        )
        ranked = score_units(
            mine, projection, intent, names, messages, embedder, config, memo, gate=False
        )
        if anchor is not None and messages is not None:
            ranked = sorted(
                (
                    (s + config.session_weight * near(u, anchor, window, messages), u)
                    for s, u in ranked
                ),
                key=lambda su: (-su[0], su[1].rank),
            )
        if ranked:
            best = (
                ranked[0][1]
                if intent.focus == "original"
                else pick(ranked, intent, config, focus_words(projection, names))
            )
            lines.append(write_line(best, config, statement_of(best, config)))
        elif person in empty:
            lines.append(f"{person}: no record on this matter")
    return "\n".join(lines)

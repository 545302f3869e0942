"""Per-person answers of the scoring picker: one line per person from their own words, read
where the matter is discussed, and a named person's own closest messages as candidates."""

from __future__ import annotations

import numpy as np

from speakerflow.ops.query.answer_config import AnswerConfig
from speakerflow.ops.query.answer_intent import Intent
from speakerflow.ops.query.answer_score import focus_words, has_number, pick, score_units
from speakerflow.ops.query.answer_text import statement_of, with_turn, write_line
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


def _row(u: Unit, messages: Messages) -> int:
    return messages.view.pos.get(u.msg_id, -1) if u.msg_id else -1


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
    opener_only: bool = False,
) -> str | None:
    """One line per person (see the module doc); ``opener_only``: ``None`` unless the
    exchange opens with a question to the group, a round of replies that the lines read."""
    people = [r for r in intent.people if r in names] or [
        p
        for p in dict.fromkeys(
            [e.row for e in evidence if e.row not in (None, "GROUP", "ALL")]
            + [u.speaker for u in units if u.speaker]
        )
        if p in names
    ]
    empty = {e.row for e in evidence if e.kind == "empty_row"}
    # the matter is discussed in one place: each person's view is what they said there
    overall = score_units(units, projection, intent, names, messages, embedder, config, memo)
    anchor, window = exchange(
        overall, people, intent, messages, config, embedder, projection.question
    )
    after = _row(anchor, messages) if messages is not None and anchor is not None else -1
    if anchor is not None and not anchor.asks:
        opener = opener_row(window, messages, people, _top_rows(overall, messages, config))
        if opener is not None:
            after = opener
        elif opener_only:
            return None
    elif opener_only and anchor is None:
        return None
    words = focus_words(projection, names)
    lines = []
    for person in people:
        mine = [u for u in units if u.speaker == person and not u.is_record]
        mine = with_own(
            person, mine, messages, projection.question, embedder, memo, config.own_messages, window
        )
        ranked = score_units(
            mine, projection, intent, names, messages, embedder, config, memo, gate=False
        )
        if intent.quantity:  # a score, price or count: the person's sentences that say one
            ranked = [(s, u) for s, u in ranked if has_number(u.text)] or ranked
        replies: list[tuple[float, Unit]] = []
        if anchor is not None and messages is not None:
            there = [(s, u) for s, u in ranked if near(u, anchor, window, messages) == 1.0]
            # the views answer the opener: what a person said after it, when they did; their
            # first say after it is their reply, a later one in the window often off the matter
            replies = replies_to(
                [(s, u) for s, u in there if _row(u, messages) > after], config.reply_order
            )
            there = replies or there
            # what they said in the exchange is their view; elsewhere only when they were silent
            ranked = there or sorted(
                (
                    (s + config.session_weight * near(u, anchor, window, messages), u)
                    for s, u in ranked
                ),
                key=lambda su: (-su[0], su[1].rank),
            )
        if ranked:
            best = (
                ranked[0][1]
                # a round's reply is the view; the latest of the close ones may be small talk
                if intent.focus == "original" or (replies and intent.focus is None)
                else pick(ranked, intent, config, words)
            )
            line = write_line(best, config, statement_of(best, config))
            lines.append(with_turn(line, best, messages, words, config.short_reply_words))
        elif person in empty:
            lines.append(f"{person}: no record on this matter")
    return "\n".join(lines)


def _top_rows(overall: list[tuple[float, Unit]], messages: Messages | None, config) -> set[int]:
    """View rows of the ``exchange_anchors`` best-scored messages, a question's score counted
    without its penalty (the candidates of :func:`exchange`)."""
    if messages is None:
        return set()
    asked = sorted(
        ((s + (config.question_penalty if u.asks else 0.0), u) for s, u in overall),
        key=lambda su: -su[0],
    )
    rows = dict.fromkeys(_row(u, messages) for _, u in asked)
    return set(list(rows)[: config.exchange_anchors]) - {-1}


def opener_row(
    window: range | None, messages: Messages | None, people: list[str], on_matter: set[int]
) -> int | None:
    """The first message of the exchange ``window`` that is on the matter (one of the rows
    ``on_matter``), asks a question (it ends with a question mark) and is followed there by
    messages of two or more other people asked about: the question put to the group that the
    views answer."""
    if window is None or messages is None:
        return None
    view = messages.view
    for r in window:
        if r not in on_matter or not view.texts[r].rstrip().endswith("?"):
            continue
        others = {view.speakers[x] for x in window if x > r} & set(people)
        if len(others - {view.speakers[r]}) >= 2:
            return r
    return None


def replies_to(there: list[tuple[float, Unit]], weight: float) -> list[tuple[float, Unit]]:
    """A person's units after the opener, their first message lifted by ``weight``, the k-th
    by ``weight / (1 + k)``: the first say after a question to the group is the reply to it
    ("popcorn!" answers "what is everyone bringing?" though it shares no word with it)."""
    order = {
        m: k
        for k, m in enumerate(
            dict.fromkeys(
                u.msg_id for _, u in sorted(there, key=lambda su: (su[1].ts is None, su[1].ts))
            )
        )
    }
    lifted = [(s + weight / (1 + order[u.msg_id]), u) for s, u in there]
    return sorted(lifted, key=lambda su: (-su[0], su[1].rank))


def exchange(
    overall: list[tuple[float, Unit]],
    people: list[str],
    intent: Intent,
    messages: Messages | None,
    config: AnswerConfig,
    embedder=None,
    question: str = "",
) -> tuple[Unit | None, range | None]:
    """The exchange where the people asked about give their views. Of the messages of the
    ``exchange_anchors`` best-scored sentences (a question to the group counts here: the
    views follow it), the windows from two turns before to ``len(people) + exchange_slack``
    after (within the session, at most ``discussion_turns``) that hold the most of those
    people speaking on the matter (with an embedder each person counts with the best cosine
    of their messages there to the question, so a round of greetings counts little; the
    windows within ``exchange_share`` of the best count as most); of these, the ones scoring
    within ``margin`` of the best, the earliest
    under "at first", the latest under "now", else the best. Returns the anchor and the window
    of view rows (``None`` without messages)."""
    if not overall or messages is None:
        return None, None
    view = messages.view
    width = min(config.discussion_turns, len(people) + config.exchange_slack)
    sims = None
    if embedder is not None:
        from speakerflow.ops.text.embed import encode_query

        sims = view.dense_matrix(embedder) @ encode_query(embedder, question)
    asked = [(s + (config.question_penalty if u.asks else 0.0), u) for s, u in overall]
    asked.sort(key=lambda su: -su[0])
    found: list[tuple[float, float, Unit, range]] = []
    seen: set[int] = set()
    for score, u in asked:
        row = view.pos.get(u.msg_id) if u.msg_id else None
        if row is None or row in seen:
            continue
        seen.add(row)
        if len(seen) > config.exchange_anchors:
            break
        rows = [
            r
            for r in range(max(0, row - 2), min(len(view), row + width + 1))
            if view.sessions[r] == view.sessions[row]
        ]
        best_of: dict[str, float] = {}
        for r in rows:
            if view.speakers[r] in people:
                fit = float(sims[r]) if sims is not None else 1.0
                best_of[view.speakers[r]] = max(best_of.get(view.speakers[r], 0.0), fit)
        found.append((sum(best_of.values()), score, u, range(rows[0], rows[-1] + 1)))
    if not found:
        return None, None
    most = max(f[0] for f in found)
    pool = [f for f in found if f[0] >= most * config.exchange_share]
    top = max(f[1] for f in pool)
    close = [f for f in pool if f[1] >= top - config.margin]
    if intent.focus in ("original", "current"):
        dated = [f for f in close if f[2].ts is not None] or close
        pick_ = (min if intent.focus == "original" else max)(
            dated, key=lambda f: f[2].ts.timestamp() if f[2].ts is not None else 0.0
        )
    else:
        pick_ = max(close, key=lambda f: f[1])
    return pick_[2], pick_[3]

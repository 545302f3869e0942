"""The scoring answer picker (``AnswerConfig(picker="scored")``): every sentence of the top
evidence gets one score, and the question's time focus and people decide which of the
sentences that score close to the best is the answer.

**Score** of a sentence (a unit of :mod:`.answer_units`), all terms on comparable scales:

- ``sentence_weight`` x the MiniLM cosine of ``"speaker: sentence"`` to the question (the
  sentences of the top evidence are encoded once per group view and memoised), and
  ``message_weight`` x the cosine of its whole message (the cached message vectors);
- ``lexical_weight`` x the share of the question's focus words it holds (content words
  without names, question and time-focus words; weighted by rarity in the evidence), its
  message's share at half;
- ``type_weight`` when it holds what the question type asks for: a time expression
  (explicit dates a little more), a place, a reason, a number, a settling word or a GROUP
  record, a person's name;
- ``person_weight`` when it is the named person's own words; for a cross-person question
  ("what did A say about B") A's words that name B, others' words about B at half;
- minus ``question_penalty`` for a sentence that is itself a question, plus a small prior
  from its evidence rank.

A sentence with no focus word, no type cue and a cosine below ``min_similarity`` cannot be
the answer; nothing left is :data:`~.answer_text.NO_INFO`.

**Picking** (:func:`pick`): the sentences within ``margin`` of the best, of the named person
when the question names one, are the matter's candidates. The time focus of the question
(:func:`~.answer_intent.read_intent`) chooses among them: *current* ("now", "still", "these
days") the latest (an earlier message of a record's update chain is set aside); *original*
("at first", "originally", "used to") the earliest; *change* the earliest and the latest
(with their dates); otherwise the best. A per-person question writes one line per person from
their own best sentence (their earliest or latest with a time focus), reading the person's
own messages of the group when the evidence holds none of theirs on the matter. A date
question answers with the date meant (:mod:`.answer_dates`).
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

from speakerflow.graphs import query_terms
from speakerflow.ops.query.answer_config import AnswerConfig
from speakerflow.ops.query.answer_dates import date_answer, has_date
from speakerflow.ops.query.answer_intent import (
    CALENDAR,
    CURRENT_Q,
    NAME_WORD,
    ORIGINAL_Q,
    PLACE,
    REASON,
    SETTLE,
    Intent,
    read_intent,
)
from speakerflow.ops.query.answer_old import answer_old
from speakerflow.ops.query.answer_text import (
    clause_of,
    date_of,
    full_sentence,
    statement_of,
    with_reason,
    write_line,
)
from speakerflow.ops.query.answer_units import Messages, TextMemo, Unit, stem, terms
from speakerflow.ops.query.project import is_rollup
from speakerflow.schemas import EvidenceItem, Projection

_NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty "
    "hundred thousand half dozen noon midnight".split()
)


def _has_number(text: str) -> bool:
    return any(ch.isdigit() for ch in text) or bool(
        _NUMBER_WORDS & {w.lower().strip(".,!?") for w in text.split()}
    )


def _proper_nouns(text: str, names: set[str]) -> list[str]:
    """Capitalised words that are neither a roster name, a calendar word nor a common word
    (a sentence-initial "Porto it is." names a place; "The" does not)."""
    out = []
    for m in NAME_WORD.finditer(text):
        w = m.group(0).strip("'")
        low = w.lower()
        if low in names or low in CALENDAR or not query_terms(w):
            continue
        out.append(w)
    return out


def _mentions(u: Unit, person: str) -> bool:
    first = person.split()[0].lower()
    return any(m.group(0).lower().rstrip("'s") == first for m in NAME_WORD.finditer(u.text))


# --- scoring -----------------------------------------------------------------------------------


def _focus_words(projection: Projection, names: list[str]) -> set[str]:
    """The question's content words without names and the words of its time focus."""
    words = terms(projection.issue) | terms(projection.question)
    drop = {stem(n) for name in names for n in name.split()}
    timeish = terms(" ".join(m.group(0) for m in CURRENT_Q.finditer(projection.question)))
    timeish |= terms(" ".join(m.group(0) for m in ORIGINAL_Q.finditer(projection.question)))
    return words - drop - timeish


def _cosines(
    units: list[Unit], question: str, messages: Messages | None, embedder, memo: TextMemo
) -> tuple[np.ndarray, np.ndarray]:
    """Per unit: the cosine of its sentence and of its message to the question (zeros
    without an embedder)."""
    n = len(units)
    if embedder is None or n == 0:
        return np.zeros(n), np.zeros(n)
    from speakerflow.ops.text.embed import encode_query

    try:
        qvec = encode_query(embedder, question)
        labelled = [f"{u.speaker}: {u.text}" if u.speaker else u.text for u in units]
        sent = memo.encode(embedder, labelled) @ qvec
        msg = np.zeros(n)
        if messages is not None:
            view = messages.view
            mat = view.dense_matrix(embedder)
            for i, u in enumerate(units):
                row = view.pos.get(u.msg_id) if u.msg_id else None
                msg[i] = float(mat[row] @ qvec) if row is not None else sent[i]
        else:
            msg = sent.copy()
    except Exception:  # noqa: BLE001 - a missing model or cache only loses this signal
        return np.zeros(n), np.zeros(n)
    return np.asarray(sent, dtype=np.float64), np.asarray(msg, dtype=np.float64)


def _type_hit(u: Unit, intent: Intent, names: set[str], question: str, memo: TextMemo) -> float:
    """How well the sentence holds what the question type asks for (0, 0.5 or 1)."""
    q = intent.qtype
    if q == "when" or intent.focus is not None and "date" in question.lower():
        return has_date(u, memo)
    if intent.quantity:
        return 1.0 if _has_number(u.text) else 0.0
    if q == "where":
        place = any(m.group(0).split()[-1].lower() not in CALENDAR for m in PLACE.finditer(u.text))
        return 1.0 if place else 0.5 if _proper_nouns(u.text, names) else 0.0
    if q == "why":
        return (
            1.0
            if REASON.search(u.text)
            else 0.5
            if any(REASON.search(x) for x in u.siblings)
            else 0.0
        )
    if q == "who":
        asked = question.lower()
        return 1.0 if any(n in u.text.lower() and n not in asked for n in names) else 0.0
    if q == "decision":
        return 1.0 if u.settles or SETTLE.search(u.text) else 0.5 if "GROUP" in u.rows else 0.0
    return 0.0


def _person_fit(u: Unit, intent: Intent) -> float:
    if intent.source and intent.about:
        if u.speaker == intent.source and _mentions(u, intent.about):
            return 1.0
        if u.speaker == intent.source:
            return 0.5
        return 0.5 if u.speaker != intent.about and _mentions(u, intent.about) else 0.0
    if intent.people and not intent.per_person:
        return 1.0 if u.speaker in intent.people or set(intent.people) & u.rows else 0.0
    return 0.0


def score_units(
    units: list[Unit],
    projection: Projection,
    intent: Intent,
    names: list[str],
    messages: Messages | None,
    embedder,
    config: AnswerConfig,
    memo: TextMemo,
    gate: bool = True,
) -> list[tuple[float, Unit]]:
    """(score, unit) of every unit that may answer, best first (see the module doc);
    ``gate=False`` keeps the units without any match too (a person's line on the matter is
    their closest statement, whatever its words)."""
    words = _focus_words(projection, names)
    lowered = {n.lower() for name in names for n in name.split()}
    n = len(units)
    df: Counter = Counter()
    for u in units:
        df.update(words & u.terms)
    idf = {w: math.log(1 + n / df[w]) for w in df}
    total = sum(idf.values()) or 1.0
    whole: dict[str | None, set[str]] = {}
    for u in units:
        whole.setdefault(u.msg_id, set()).update(u.terms)
    sent, msg = _cosines(units, projection.question, messages, embedder, memo)
    # a date, a number, a place or a name is the answer itself, not a side cue
    asked_type = intent.qtype in ("when", "where", "who") or intent.quantity
    out = []
    for i, u in enumerate(units):
        lex = sum(idf.get(w, 0.0) for w in words & u.terms) / total
        lex_msg = sum(idf.get(w, 0.0) for w in words & whole.get(u.msg_id, u.terms)) / total
        hit = _type_hit(u, intent, lowered, projection.question, memo)
        if gate and not (lex or lex_msg or hit or sent[i] >= config.min_similarity):
            continue
        s = (
            config.sentence_weight * sent[i]
            + config.message_weight * msg[i]
            + config.lexical_weight * (lex + 0.5 * lex_msg)
            + config.type_weight * hit * (2.0 if asked_type else 1.0)
            + config.person_weight * _person_fit(u, intent)
            + 0.1 / (1 + u.rank)
        )
        if u.text.rstrip().endswith("?"):
            s -= config.question_penalty
        out.append((s, u))
    out.sort(key=lambda su: (-su[0], su[1].rank))
    return out


# --- picking -----------------------------------------------------------------------------------

#: a sentence that says what is *not* (any more) the case: under a "now" question the state
#: it rejects is the old one ("it wasn't the printer, the cable was loose")
NEGATION = re.compile(r"\b(not|no longer|never|instead of|rather than)\b|n['\u2019]t\b", re.I)


def _close(ranked: list[tuple[float, Unit]], margin: float) -> list[Unit]:
    """The units within ``margin`` of the best, not questions themselves."""
    top = ranked[0][0]
    return [u for s, u in ranked if s >= top - margin and not u.text.rstrip().endswith("?")]


def _by_time(cands: list[Unit], latest: bool) -> Unit:
    dated = [u for u in cands if u.ts is not None] or cands
    if latest:
        return max(dated, key=lambda u: (u.ts is not None, u.ts, -u.rank))
    return min(dated, key=lambda u: (u.ts is None, u.ts, u.rank))


def _scope(ranked: list[tuple[float, Unit]], intent: Intent) -> list[tuple[float, Unit]]:
    """The named person's own units when the question names one person and they said
    something that may answer (a cross-person question: the source's words about the other)."""
    if intent.source and intent.about:
        said = [(s, u) for s, u in ranked if _mentions(u, intent.about)]
        mine = [(s, u) for s, u in said if u.speaker == intent.source]
        return mine or [(s, u) for s, u in said if u.speaker != intent.about] or ranked
    if len(intent.people) == 1 and not intent.per_person:
        mine = [(s, u) for s, u in ranked if u.speaker == intent.people[0]]
        return mine or ranked
    return ranked


def _best_of_message(ranked: list[tuple[float, Unit]], unit: Unit, current: bool) -> Unit:
    """The best sentence of ``unit``'s message; for the current state one that rejects
    nothing when there is one."""
    mine = [(s, u) for s, u in ranked if u.msg_id == unit.msg_id]
    if current:
        plain = [
            (s, u) for s, u in mine if not NEGATION.search(u.text) and len(u.text.split()) >= 3
        ]
        mine = plain or mine
    return max(mine, key=lambda su: su[0])[1] if mine else unit


def _message_terms(u: Unit) -> set[str]:
    return set().union(*(terms(x) for x in u.siblings or (u.text,)))


def _on_matter(ranked: list[tuple[float, Unit]], words: set[str], share: float) -> list[Unit]:
    """Units scoring at least ``share`` of the best whose message holds a question word that
    the best unit's message holds too, or one of the matter's values: a name the best message says,
    or a name said beside it elsewhere (the alternatives argued over: "A or B?" makes a later
    "B is fine" the same matter). The same matter said at another time, though worded apart."""
    best = ranked[0][1]
    mine = _message_terms(best)
    values = {stem(v) for v in _proper_nouns(" ".join(best.siblings or (best.text,)), set())}
    if values:
        for _, u in ranked:
            said = {stem(v) for v in _proper_nouns(" ".join(u.siblings or (u.text,)), set())}
            if said & values:
                values |= said
    shared = (words & mine) | values
    if not shared:
        return []
    top = ranked[0][0]
    return [
        u
        for s, u in ranked
        if s >= top * share and not u.text.rstrip().endswith("?") and shared & _message_terms(u)
    ]


def pick(
    ranked: list[tuple[float, Unit]],
    intent: Intent,
    config: AnswerConfig,
    words: set[str] | None = None,
) -> Unit:
    """The answer unit for a question with one answer (see the module doc)."""
    timed = intent.focus in ("current", "original")
    if timed or intent.present:
        margin = config.margin if timed else config.present_margin
        cands = _close(ranked, margin)
        if words:  # a "now" question reads the matter wider than a present-tense one
            cands += _on_matter(ranked, words, config.matter_share if timed else 0.8)
        if intent.focus == "original":
            return _best_of_message(ranked, _by_time(cands, latest=False), False)
        cands = [u for u in cands if not u.history] or cands or [ranked[0][1]]
        return _best_of_message(ranked, _by_time(cands, latest=True), intent.focus == "current")
    return ranked[0][1]


def _with_focus(u: Unit, words: set[str]) -> str:
    """The unit's sentence, joined with the next sentence of its message when it holds none
    of the question's words and that one does ("One more thing. The boiler man comes at
    nine.")."""
    text = full_sentence(u)
    if words & u.terms or u.index + 1 >= len(u.siblings) or text != u.text:
        return text
    following = u.siblings[u.index + 1]
    return f"{text} {following}" if words & terms(following) else text


def _write(u: Unit, intent: Intent, names: list[str], question: str, config: AnswerConfig) -> str:
    words = terms(question) - {stem(n) for name in names for n in name.split()}
    if intent.qtype == "why":
        return write_line(u, config, with_reason(u))
    if intent.qtype == "who":
        asked = question.lower()
        named = next(
            (n for n in names if n.split()[0].lower() in u.text.lower() and n.lower() not in asked),
            None,
        )
        name = named or (u.speaker if u.speaker and u.speaker.lower() not in asked else None)
        line = write_line(u, config, statement_of(u, config))
        return f"{name} ({line})" if name else line
    if intent.focus == "current":
        # the sentence that states the state, not the whole message with the one it replaces
        text = u.text if len(u.text.split()) >= 3 else _with_focus(u, words)
        return write_line(u, config, text)
    if intent.qtype in ("decision", "per-person") or intent.focus:
        return write_line(u, config, statement_of(u, config))
    wanted = _has_number if intent.quantity else None
    text = clause_of(u, words, config.clause_words, wanted)
    return write_line(u, config, text if words & terms(text) else _with_focus(u, words))


def _change(ranked: list[tuple[float, Unit]], config: AnswerConfig) -> str:
    """The earliest and the latest statement on the matter: the latest of the closest
    answers, and the best of the same person's earlier ones."""
    late = _by_time(_close(ranked, config.margin), latest=True)
    earlier = [
        u
        for _, u in ranked
        if u.ts is not None and late.ts is not None and u.ts < late.ts and u.speaker == late.speaker
    ] or [u for _, u in ranked if u.ts is not None and late.ts is not None and u.ts < late.ts]
    if not earlier:
        return write_line(late, config, statement_of(late, config))
    early = earlier[0]
    return (
        f"at first ({date_of(early.ts)}): {write_line(early, config, statement_of(early, config))}"
        f"; later ({date_of(late.ts)}): {write_line(late, config, statement_of(late, config))}"
    )


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


def _with_own(
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


def _near(u: Unit, anchor: Unit, window: range | None, messages: Messages) -> float:
    """1 for a message in the discussion window, 0.5 elsewhere in its session, else 0."""
    row = messages.view.pos.get(u.msg_id) if u.msg_id else None
    if window is not None and row is not None and row in window:
        return 1.0
    return 0.5 if u.session is not None and u.session == anchor.session else 0.0


def _person_lines(
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
            _by_time(top, latest=intent.focus == "current")
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
        mine = _with_own(
            person, mine, messages, projection.question, embedder, memo, config.own_messages, window
        )
        ranked = score_units(
            mine, projection, intent, names, messages, embedder, config, memo, gate=False
        )
        if anchor is not None and messages is not None:
            ranked = sorted(
                (
                    (s + config.session_weight * _near(u, anchor, window, messages), u)
                    for s, u in ranked
                ),
                key=lambda su: (-su[0], su[1].rank),
            )
        if ranked:
            best = (
                ranked[0][1]
                if intent.focus == "original"
                else pick(ranked, intent, config, _focus_words(projection, names))
            )
            lines.append(write_line(best, config, statement_of(best, config)))
        elif person in empty:
            lines.append(f"{person}: no record on this matter")
    return "\n".join(lines)


def answer_scored(
    projection: Projection,
    evidence: list[EvidenceItem],
    units: list[Unit],
    names: list[str],
    messages: Messages | None,
    embedder,
    config: AnswerConfig,
    memo: TextMemo,
) -> str | None:
    """The scoring picker's answer (see the module doc); ``None`` when nothing answers."""
    intent = read_intent(projection, is_rollup(projection))
    if intent.focus is None and intent.qtype in config.old_types:
        # question types the first picker answers better on the dev sets (docs/query-path.md)
        return answer_old(projection, evidence, units, names, messages, embedder, config, memo)
    msg_units = [u for u in units if not u.is_record] or units
    if intent.per_person:
        return _person_lines(
            msg_units, projection, intent, names, evidence, messages, embedder, config, memo
        )
    if len(intent.people) == 1 and not intent.source:
        msg_units = _with_own(
            intent.people[0],
            msg_units,
            messages,
            projection.question,
            embedder,
            memo,
            config.own_messages,
        )
    ranked = score_units(msg_units, projection, intent, names, messages, embedder, config, memo)
    if not ranked:
        return None
    ranked = _scope(ranked, intent)
    words = _focus_words(projection, names)
    if intent.qtype == "when":
        dated = [(s, u) for s, u in ranked if has_date(u, memo)]
        best = pick(dated or ranked, intent, config, words)
        return date_answer(best, projection.question, intent.two_asks, config, memo)
    if intent.focus == "change":
        return _change(ranked, config)
    best = pick(ranked, intent, config, words)
    return _write(best, intent, names, projection.question, config)

"""The first rules answer picker (``AnswerConfig(picker="old")``), kept runnable beside the
scorer that replaces it until the new one measures better on data it was not tuned on.

Every unit is scored by the question's content words it contains (light suffix stemming,
weighted by rarity within the evidence), the matter's *values* at half weight, the cosine of
its message to the question, a rank prior, minus a penalty for sentences that are
questions; then the question type decides what is picked and how it is written (see
docs/query-path.md, "The old picker").
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from speakerflow.graphs import query_terms
from speakerflow.ops.query.answer_config import AnswerConfig
from speakerflow.ops.query.answer_intent import (
    CALENDAR,
    CHANGE_Q,
    DECISION_Q,
    EACH,
    NAME_WORD,
    NOW,
    PLACE,
    REASON,
    SETTLE,
    TIME_WORD_Q,
    question_type,
)
from speakerflow.ops.query.answer_text import (
    NO_INFO,
    clause_of,
    date_of,
    statement_of,
    who_of,
    with_reason,
    with_turn,
    write_line,
)
from speakerflow.ops.query.answer_units import Messages, TextMemo, Unit, stem, terms
from speakerflow.ops.query.project import is_rollup
from speakerflow.ops.text.temporal import describe, resolve
from speakerflow.schemas import EvidenceItem, Projection


def _dense(
    units: list[Unit], question: str, messages: Messages | None, embedder
) -> dict[str, float]:
    if embedder is None or messages is None:
        return {}
    from speakerflow.ops.text.embed import encode_query

    view = messages.view
    rows = sorted({view.pos[u.msg_id] for u in units if u.msg_id in view.pos})
    if not rows:
        return {}
    try:
        mat = view.dense_matrix(embedder)
        qvec = encode_query(embedder, question)
    except Exception:  # noqa: BLE001 - a missing cache or model only loses this signal
        return {}
    sims = np.asarray(mat[rows] @ qvec, dtype=np.float64)
    return {view.ids[r]: float(s) for r, s in zip(rows, sims, strict=True)}


def _question_words(projection: Projection, qtype: str, names: list[str]) -> set[str]:
    """The question's stemmed content words (its issue's, else its own; all of its own for
    why / when / where / who), names aside."""
    words = terms(projection.issue) or terms(projection.question)
    words |= (
        {
            stem(w)
            for w in query_terms(projection.question)
            if w.lower() not in {n.lower() for n in names}
        }
        if qtype in ("why", "when", "where", "who")
        else set()
    )
    return words - {stem(n) for n in names}


def _idf_sum(found: set[str], df: Counter, n: int) -> float:
    return sum(math.log(1 + n / df[w]) for w in found)


def _matter_values(
    units: list[Unit], words: set[str], names: list[str], df: Counter, n: int
) -> tuple[set[str], dict]:
    """The matter's values (capitalised words of the best lexical units that recur in the
    evidence: the cities, routes, names of things argued about) and, per value, the values
    said in the same message; ``df`` gains the values' counts."""
    first = sorted(
        (u for u in units if not u.is_record and words & u.terms),
        key=lambda u: (-_idf_sum(words & u.terms, df, n), u.rank),
    )[:8]
    lowered = {x.lower() for x in names} | CALENDAR
    values = {
        stem(m.group(0))
        for u in first
        if words & u.terms
        for m in NAME_WORD.finditer(u.text)
        if m.start() > 0
        and m.group(0).lower() not in lowered
        and m.group(0).lower() in {t.lower() for t in query_terms(m.group(0))}
    } - words
    vdf: Counter = Counter()
    for u in units:
        vdf.update(values & u.terms)
    # alternatives are said side by side ("Rome or Oslo?", "Oslo is cheaper than Rome"): a value
    # that never shares a message with another value is a
    # passing mention, not the matter
    cooc: dict[str, set[str]] = {}
    by_message: dict = {}
    for u in units:
        by_message.setdefault(u.msg_id if u.msg_id is not None else id(u), set()).update(u.terms)
    for msg_terms in by_message.values():
        found = values & msg_terms
        for v in found:
            cooc.setdefault(v, set()).update(found - {v})
    values = {v for v in values if vdf[v] >= 2 and cooc.get(v)}
    cooc = {v: c & values for v, c in cooc.items() if v in values}
    df.update({v: vdf[v] for v in values})
    return values, cooc


def _set_context(units: list[Unit], words: set[str], df: Counter, n: int) -> None:
    """System 2 ties messages to one matter: a message cited by a record is on the matter of
    the record's best-matching message or statement (a terse "missed it again" under the
    record of the matter it is about); sets ``Unit.context``."""
    best_of: dict = {}
    for u in units:
        lx = _idf_sum(words & u.terms, df, n)
        for key in u.records:
            best_of[key] = max(best_of.get(key, 0.0), lx)
    for u in units:
        u.context = max((best_of[k] for k in u.records), default=0.0)


def _with_type_cues(
    s: float,
    u: Unit,
    projection: Projection,
    qtype: str,
    config: AnswerConfig,
    names: list[str],
    memo: TextMemo,
) -> float:
    """``s`` plus the bonuses of the question type's cue: a reason, a time, a place, a settling
    word or a GROUP record, a name for who."""
    time_q = qtype == "when" or bool(TIME_WORD_Q.search(projection.question))
    decision_q = qtype == "decision" or bool(DECISION_Q.search(projection.question))
    if qtype == "why" and (REASON.search(u.text) or any(REASON.search(x) for x in u.siblings)):
        s += config.type_bonus
    if time_q and (memo.says_time(u.text, u.ts) if u.ts is not None else resolve(u.text, today())):
        s += config.type_bonus
    if qtype == "where" and any(
        m.group(0).split()[-1].lower() not in CALENDAR for m in PLACE.finditer(u.text)
    ):
        s += config.type_bonus
    if decision_q:
        if SETTLE.search(u.text):
            s += config.type_bonus
        if "GROUP" in u.rows:
            s += config.record_bonus
        if u.settles:
            s += config.type_bonus  # the message that settled it, not the discussion before
    if qtype == "who" and named_in(u, projection, names):
        s += 0.5
    return s


def _score(
    units: list[Unit],
    projection: Projection,
    qtype: str,
    dense: dict[str, float],
    config: AnswerConfig,
    names: list[str],
    memo: TextMemo | None = None,
) -> tuple[set[str], set[str], dict]:
    """Score every unit in place; returns the question's stemmed content words, the
    matter's values (recurring capitalised words of the best units) and, per value, the
    values said in the same sentence."""
    memo = memo or TextMemo()
    words = _question_words(projection, qtype, names)
    n = len(units) or 1
    df: Counter = Counter()
    for u in units:
        df.update(words & u.terms)
    values, cooc = _matter_values(units, words, names, df, n)
    present = {u.msg_id for u in units if not u.is_record}
    matched = {u.msg_id for u in units if not u.is_record and (words | values) & u.terms}
    named = (
        set()
        if projection.source or qtype == "per-person"
        else {r for r in projection.rows if r not in ("ALL", "GROUP")}
    )
    decision_q = qtype == "decision" or bool(DECISION_Q.search(projection.question))
    _set_context(units, words, df, n)
    for u in units:
        hit = words & u.terms
        lex = _idf_sum(hit, df, n) + 0.5 * _idf_sum(values & u.terms, df, n)
        hit = hit or (values & u.terms)
        context_hit = False
        if not u.is_record and u.context > lex:
            # the message that settled a GROUP record answers a decision question as well as the
            # record does
            lex += (1.0 if decision_q and u.settles else config.context_weight) * (u.context - lex)
            context_hit = u.context > 0
        s = (
            lex
            + config.dense_weight * max(0.0, dense.get(u.msg_id or "", 0.0))
            + 1.0 / (1 + u.rank)
        )
        if u.text.rstrip().endswith("?"):
            s -= config.question_penalty * (0.3 if qtype == "per-person" else 1.0)
        s = _with_type_cues(s, u, projection, qtype, config, names, memo)
        if named and (u.speaker in named or named & u.rows):
            s += config.type_bonus  # a named person's own words and records first
        if projection.source and u.speaker == projection.source:
            s += 1.0  # "what does A think of B": A's own words about B first
        if (
            u.history
            and projection.tense == "head"
            and qtype != "change"
            and u.record_span[-1] in matched
        ):
            s -= config.record_bonus  # superseded by a later message on the same matter
        if qtype == "change" and u.record_span:
            s += config.record_bonus
        if u.is_record and qtype != "change" and set(u.cites) & present:
            s = float(
                "-inf"
            )  # the person's own words are at hand: the Writer's restatement is not quoted
        elif u.is_record:
            s -= 0.25
        u.raw = s
        u.score = (
            s if (hit or context_hit or dense.get(u.msg_id or "", 0.0) >= 0.45) else float("-inf")
        )
    return words, values, cooc


def today():
    from datetime import UTC, datetime

    return datetime.now(UTC)


def named_in(u: Unit, projection: Projection, names: list[str]) -> str | None:
    """The first roster name the unit's sentence mentions that the question does not."""
    asked = {w.lower() for w in NAME_WORD.findall(projection.question)}
    for w in NAME_WORD.findall(u.text):
        for name in names:
            if w.lower() in (name.lower(), name.split()[0].lower()) and w.lower() not in asked:
                return name
    return None


def _latest_on_matter(
    cands: list[Unit], best: Unit, words: tuple, floor: float = 0.5, need_issue: bool = False
) -> Unit:
    """The latest of ``cands`` on the same matter as ``best`` scoring at least ``floor`` of it
    (a later statement on the matter supersedes an earlier one). Same matter: a value of the
    matter (a city, a route ...) when ``best`` names one, else a question word ``best`` holds;
    ``need_issue``: also a question word ``best`` holds."""
    issue, values, cooc = words
    core = {w for w in issue if not NOW.fullmatch(w)}  # "now", "still" say when, not what
    mine = values & best.terms
    # the alternatives of best's values: values said together with them somewhere in the evidence
    shared = (
        (mine | {v for v in values if cooc.get(v, set()) & mine})
        or (issue & best.terms)
        or best.terms
    )
    pool = [
        c
        for c in cands
        if c.raw >= floor * best.raw
        and (c.terms & shared)
        and c.ts is not None
        and (not need_issue or c.terms & core & best.terms)
    ]
    if not pool or best.ts is None:
        return best
    latest = max(pool, key=lambda c: (c.ts or best.ts, c.score))  # every c.ts is set (pool)
    return latest if latest.ts is not None and latest.ts > best.ts else best


def _change(
    units: list[Unit],
    ranked: list[Unit],
    projection: Projection,
    config: AnswerConfig,
    names: list[str],
) -> str:
    best = ranked[0]
    # System 2: a record that spans several messages is the before/after itself; records of
    # one row with different times are the states of an UPDATE chain
    for u in ranked[:5]:
        if u.record_span:
            first = [v for v in units if v.msg_id == u.record_span[0]]
            last = [v for v in units if v.msg_id == u.record_span[-1]]
            if first and last:
                a = max(first, key=lambda v: v.score)
                b = max(last, key=lambda v: v.score)
                if a.text != b.text:
                    return _change_line(a, b, config)
        if u.is_record and u.ts is not None:
            chain = [
                v
                for v in ranked
                if v.is_record
                and v.rows == u.rows
                and v.ts is not None
                and set(v.cites) & set(u.cites)
            ]  # states of one matter: they rest on shared messages
            if len({v.ts for v in chain}) >= 2:
                a, b = (
                    min(chain, key=lambda v: (v.ts, -v.score)),
                    max(chain, key=lambda v: (v.ts, v.score)),
                )
                if a.text != b.text:
                    return _change_line(a, b, config)
    people = [r for r in projection.rows if r in names]
    speaker = people[0] if len(people) == 1 else best.speaker
    mine = [u for u in ranked if u.speaker == speaker and u.ts is not None][:6] or ranked[:6]
    if len({u.ts for u in mine}) < 2:
        mine = [u for u in ranked if u.ts is not None][:6]
    if len({u.ts for u in mine}) < 2:
        return write_line(best, config)
    first_ts, last_ts = (
        min(u.ts for u in mine if u.ts is not None),
        max(u.ts for u in mine if u.ts is not None),
    )
    early = max((u for u in mine if u.ts == first_ts), key=lambda u: u.score)
    late = max((u for u in mine if u.ts == last_ts), key=lambda u: u.score)
    return _change_line(early, late, config)


def _change_line(a: Unit, b: Unit, config: AnswerConfig) -> str:
    early, late = write_line(a, config), write_line(b, config)
    return f"earlier ({date_of(a.ts)}): {early}; later ({date_of(b.ts)}): {late}"


def _person_lines(
    units: list[Unit],
    ranked: list[Unit],
    evidence: list[EvidenceItem],
    projection: Projection,
    words: tuple,
    config: AnswerConfig,
    messages: Messages | None = None,
) -> str:
    """One line per person: their own statement on the matter (their latest for ``head``),
    a short reply with the turn it answers."""
    rows = [r for r in dict.fromkeys(e.row for e in evidence) if r not in (None, "GROUP", "ALL")]
    named = [r for r in projection.rows if r not in ("ALL", "GROUP")]
    people = rows or named or list(dict.fromkeys(u.speaker for u in ranked if u.speaker))
    empty = {e.row for e in evidence if e.kind == "empty_row"}
    # the matter is discussed where the best units are: a person's view is what they said there
    top_sessions = {u.session for u in ranked if u.score >= 0.8 * ranked[0].score} - {None}
    lines = []
    for person in people:
        mine = [u for u in units if u.speaker == person and not u.is_record] or [
            u for u in units if u.speaker == person
        ]
        for u in mine:
            u.score = (
                u.raw
                + (config.record_bonus * 0.5 if person in u.rows else 0.0)
                + (config.type_bonus if u.session in top_sessions else 0.0)
            )
        mine.sort(key=lambda u: (-u.score, u.rank))
        if mine:
            best = (
                _latest_on_matter(mine, mine[0], words, floor=0.3)
                if projection.tense == "head"
                else mine[0]
            )
            line = write_line(best, config, statement_of(best, config))
            values = words[1]
            if (
                best.msg_id != mine[0].msg_id
                and (values & best.terms) != (values & mine[0].terms)
                and values & mine[0].terms
            ):  # the person's stance moved between values
                line += f" (earlier, {date_of(mine[0].ts)}: {statement_of(mine[0], config)})"
            lines.append(
                with_turn(line, best, messages, words[0] | words[1], config.short_reply_words)
            )
        elif person in empty:
            lines.append(f"{person}: no record on this matter")
        else:
            about = [u for u in ranked if person in u.rows]
            lines.append(
                write_line(about[0], config) if about else f"{person}: nothing said on this"
            )
    return "\n".join(lines)


def answer_old(
    projection: Projection,
    evidence: list[EvidenceItem],
    units: list[Unit],
    names: list[str],
    messages: Messages | None,
    embedder,
    config: AnswerConfig,
    memo: TextMemo,
) -> str:
    """The old picker's answer over ``units`` (see the module doc)."""
    qtype = question_type(projection)
    dense = (
        _dense(units, projection.question, messages, embedder) if config.dense_weight > 0 else {}
    )
    words = _score(units, projection, qtype, dense, config, names, memo)
    ranked = sorted((u for u in units if u.score > float("-inf")), key=lambda u: (-u.score, u.rank))
    if not ranked:
        return NO_INFO
    best = ranked[0]
    if qtype == "per-person" and (is_rollup(projection) or EACH.search(projection.question)):
        return _person_lines(units, ranked, evidence, projection, words, config, messages)
    if qtype == "change" or (
        projection.tense == "full"
        and CHANGE_Q.search(projection.question)
        and qtype not in ("why", "when", "who", "where")
    ):
        return _change(units, ranked, projection, config, names)
    if qtype == "why":
        return write_line(best, config, with_reason(best))
    if qtype == "when":
        spans = resolve(best.text, best.ts) if best.ts is not None else []
        spans = [s for s in spans if s.unit != "year" or len(spans) == 1]
        date = describe(spans[0], anchored=True) if spans else date_of(best.ts)
        if not config.when_quote:
            return date
        return f"{date} ({who_of(best)}: {best.text})" if who_of(best) else f"{date} ({best.text})"
    if qtype == "who":
        name = named_in(best, projection, names)
        if (
            name is None
            and best.speaker
            and best.speaker.lower() not in projection.question.lower()
        ):
            name = best.speaker
        return f"{name} ({write_line(best, config)})" if name else write_line(best, config)
    if qtype == "decision":
        # a GROUP record on the matter was settled by one message: that message is the outcome,
        # the proposals and objections before it are the discussion
        settled = [u for u in ranked if u.settles and u.score >= config.settle_floor * best.score]
        if settled:
            best = settled[0]
    if projection.tense == "head" and NOW.search(projection.question):
        same = [u for u in ranked if u.speaker == best.speaker]
        best = _latest_on_matter(same, best, words, need_issue=True)
    if qtype == "what":
        return write_line(best, config, clause_of(best, words[0] | words[1], config.clause_words))
    return write_line(best, config)

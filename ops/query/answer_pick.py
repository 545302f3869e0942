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
- ``reply_weight`` x the share of the focus words that the turn its message replies to holds
  and the message lacks (another person's message just before it in its session);
- minus ``question_penalty`` for a sentence that is itself a question and does not offer the
  value a when / where / how-many question asks ("shall we meet on Thursday?" does), plus a
  small prior from its evidence rank.

A sentence with no focus word, no type cue and a cosine below ``min_similarity`` cannot be
the answer; nothing left is :data:`~.answer_text.NO_INFO`.

With ``AnswerConfig.rerank`` (a local model spec; off by default: it measured no better on
the dev answer sets, docs/query-path.md) the best sentences of a question without a time
focus are rescored by how well they predict the question (:mod:`.answer_lm`).

**Picking** (:func:`pick`): the sentences within ``margin`` of the best, of the named person
when the question names one, are the matter's candidates. The time focus of the question
(:func:`~.answer_intent.read_intent`) chooses among them: *current* ("now", "still", "these
days") the latest (an earlier message of a record's update chain is set aside, the chain's
head by the same person joins the candidates; a later sentence turning down a value of
the asked kind that the best one states, ", not X", is the correction and wins); *original*
("at first", "originally", "used to") the earliest, the first message of the person's
record among them; *change* the earliest and the latest
(with their dates; the ends of the person's update chain when a top unit rests on one);
a why question the latest of those scoring alike (the event asked about; of a named
person's own sentences when they said any); otherwise the best. For a quantity question a
later message of another person that corrects the chosen amount (the next turn, or one
opening with its speaker's name, saying another number) is the answer
(:func:`~.answer_score.corrected`). A per-person question writes one line per person from
their own best sentence (their earliest or latest with a time focus), reading the person's
own messages of the group when the evidence holds none of theirs on the matter. A date
question answers with the date meant (:mod:`.answer_dates`), the day its message was said
beside it (:class:`~.answer_text.Answered`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from speakerflow.ops.query.answer_config import AnswerConfig
from speakerflow.ops.query.answer_dates import CLOCK, CLOCK_Q, date_answer, has_date, meant
from speakerflow.ops.query.answer_intent import Intent, read_intent
from speakerflow.ops.query.answer_learned import choose, load_weights
from speakerflow.ops.query.answer_lm import rerank
from speakerflow.ops.query.answer_old import answer_old
from speakerflow.ops.query.answer_people import person_lines, with_own
from speakerflow.ops.query.answer_score import (
    by_time,
    close_to_best,
    corrected,
    focus_words,
    has_number,
    holds_value,
    mentions,
    pick,
    proper_nouns,
    score_units,
    successors,
)
from speakerflow.ops.query.answer_short import person_meant, short_line
from speakerflow.ops.query.answer_text import (
    Answered,
    clause_of,
    date_of,
    full_sentence,
    statement_of,
    with_reason,
    without_rejected,
    write_line,
)
from speakerflow.ops.query.answer_units import Messages, TextMemo, Unit, stem, terms
from speakerflow.ops.query.project import is_rollup
from speakerflow.ops.text.temporal import TimeSpan
from speakerflow.schemas import EvidenceItem, Projection


def _scope(ranked: list[tuple[float, Unit]], intent: Intent) -> list[tuple[float, Unit]]:
    """The named person's own units, and others' words that name them (news told to them:
    "X, you got the grant"), when the question names one person and they said something
    that may answer (a cross-person question: the source's words about the other). A why
    question keeps to the person's own units: their reason is in what they said, another's
    report of the act ("X is pulling out, so ...") rarely holds it."""
    if intent.source and intent.about:
        said = [(s, u) for s, u in ranked if mentions(u, intent.about)]
        mine = [(s, u) for s, u in said if u.speaker == intent.source]
        return mine or [(s, u) for s, u in said if u.speaker != intent.about] or ranked
    if len(intent.people) == 1 and not intent.per_person:
        person = intent.people[0]
        mine = [(s, u) for s, u in ranked if u.speaker == person]
        if not mine:
            return ranked
        if intent.qtype == "why":
            return mine
        return [(s, u) for s, u in ranked if u.speaker == person or mentions(u, person)]
    return ranked


def _with_focus(u: Unit, words: set[str]) -> str:
    """The unit's sentence, joined with the next sentence of its message when it holds none
    of the question's words and that one does ("One more thing. The boiler man comes at
    nine.")."""
    text = full_sentence(u)
    if words & u.terms or u.index + 1 >= len(u.siblings) or text != u.text:
        return text
    following = u.siblings[u.index + 1]
    return f"{text} {following}" if words & terms(following) else text


def _announces(u: Unit, names: list[str]) -> bool:
    """A short sentence that names no value (no number, no proper noun beside the roster) and
    is followed by another of its message: it announces what the next one states ("Quick
    news about the plan. We go by train.")."""
    return (
        u.index + 1 < len(u.siblings)
        and len(u.text.split()) <= 8
        and not has_number(u.text)
        # a sentence's first word is capitalised anyway
        and not proper_nouns(u.text.split(maxsplit=1)[-1], set(names))
    )


def _write(u: Unit, intent: Intent, names: list[str], question: str, config: AnswerConfig) -> str:
    words = terms(question) - {stem(n) for name in names for n in name.split()}
    if intent.qtype == "why":
        return write_line(u, config, with_reason(u))
    if intent.qtype == "who":
        name = person_meant(u, names, question)
        line = write_line(u, config, statement_of(u, config))
        return f"{name} ({line})" if name else line
    if intent.focus == "current":
        # the sentence that states the state, not the whole message with the one it replaces
        text = u.text if len(u.text.split()) >= 3 else _with_focus(u, words)
        if _announces(u, names):
            text = f"{text} {u.siblings[u.index + 1]}"
        return write_line(u, config, without_rejected(text))
    if intent.qtype in ("decision", "per-person") or intent.focus:
        return write_line(u, config, statement_of(u, config))
    wanted = has_number if intent.quantity else None
    text = clause_of(u, words, config.sentence_words, wanted)
    return write_line(u, config, text if words & terms(text) else _with_focus(u, words))


def chain_ends(ranked: list[tuple[float, Unit]], top: int = 5) -> tuple[Unit, Unit] | None:
    """The best sentences of the first and the last message of the best-ranked record (among
    the ``top`` units) that spans several messages of one person: the earlier state and the
    one that replaced it, as the Writer's update chain links them."""
    for _, u in ranked[:top]:
        if len(u.record_span) < 2:
            continue
        ends = [
            next((v for _, v in ranked if v.msg_id == mid and not v.asks), None)
            for mid in (u.record_span[0], u.record_span[-1])
        ]
        first, last = ends
        if first is not None and last is not None and first.speaker == last.speaker:
            return first, last
    return None


#: (ranked, intent, memo) -> the answer unit (:func:`answer_scored`'s ``chooser``)
Chooser = Callable[[list[tuple[float, Unit]], Intent, TextMemo], Unit]

#: a change question about when something happens: its states are dates (a clock time is
#: not a date: "the opening time changed" is left to the general rule)
TIME_CHANGE = re.compile(
    r"\b(dates?|days?|weekends?|weeks?|deadlines?|when|months?|schedul\w*)\b", re.I
)


def _dated_ends(
    ranked: list[tuple[float, Unit]], question: str, memo: TextMemo
) -> tuple[Unit, Unit] | None:
    """For a change of when: the best-scored sentence saying a day and the best one saying
    another day (the date each means, :func:`~.answer_dates.meant`), in time order; ``None``
    without two such."""
    dated: list[tuple[Unit, TimeSpan]] = []
    for _, u in ranked:
        span = meant(u, question, memo) if not u.asks and has_date(u, memo) >= 0.75 else None
        if span is not None and u.ts is not None:
            dated.append((u, span))
    if not dated:
        return None
    best, day = dated[0]
    for u, span in dated[1:]:
        if u.msg_id != best.msg_id and (span.start, span.end) != (day.start, day.end):
            return (best, u) if best.ts <= u.ts else (u, best)  # type: ignore[operator]
    return None


def _change(
    ranked: list[tuple[float, Unit]], config: AnswerConfig, question: str, memo: TextMemo
) -> str:
    """The earliest and the latest statement on the matter: the ends of the person's update
    chain when a top unit rests on one (:func:`chain_ends`); for a change of date, the two
    best-scored sentences saying different days (:func:`_dated_ends`); else the latest of the
    closest answers, and the best of the same person's earlier ones."""
    ends = chain_ends(ranked)
    if ends is None and TIME_CHANGE.search(question):
        ends = _dated_ends(ranked, question, memo)
    if ends is not None:
        early, late = ends
    else:
        late = by_time(close_to_best(ranked, config.margin) or [ranked[0][1]], latest=True)
        earlier = [
            u
            for _, u in ranked
            if u.ts is not None
            and late.ts is not None
            and u.ts < late.ts
            and u.speaker == late.speaker
        ] or [u for _, u in ranked if u.ts is not None and late.ts is not None and u.ts < late.ts]
        if not earlier:
            return write_line(late, config, statement_of(late, config))
        early = earlier[0]
    return (
        f"at first ({date_of(early.ts)}): {write_line(early, config, statement_of(early, config))}"
        f"; later ({date_of(late.ts)}): {write_line(late, config, statement_of(late, config))}"
    )


def _own_quantity(intent: Intent) -> bool:
    """A per-person question that wants a number (a score, a price each gave): the scorer's
    per-person lines keep to the sentences that say one; the old picker does not."""
    return intent.per_person and intent.quantity


def answer_scored(
    projection: Projection,
    evidence: list[EvidenceItem],
    units: list[Unit],
    names: list[str],
    messages: Messages | None,
    embedder,
    config: AnswerConfig,
    memo: TextMemo,
    chooser: Chooser | None = None,
) -> str | Answered | None:
    """The scoring picker's answer (see the module doc); ``None`` when nothing answers.
    ``chooser`` (ranked, intent, memo) -> unit replaces the rules of :func:`pick` for the
    questions that end there (not dates, changes or per-person lines); an amount asked keeps
    to the sentences that say one and to a later correction (:func:`corrected`), and a "now"
    question's earlier chain state gives way to the chain's head (:func:`successors`)."""
    intent = read_intent(projection, is_rollup(projection))
    if intent.focus is None and intent.qtype in config.old_types and not _own_quantity(intent):
        # question types the first picker answers better on the dev sets (docs/query-path.md),
        # but a round of replies to a question put to the group by the exchange's lines
        if intent.per_person and config.opener_rounds:
            lines = person_lines(
                [u for u in units if not u.is_record] or units,
                projection,
                intent,
                names,
                evidence,
                messages,
                embedder,
                config,
                memo,
                opener_only=True,
            )
            if lines:
                return lines
        return answer_old(projection, evidence, units, names, messages, embedder, config, memo)
    msg_units = [u for u in units if not u.is_record] or units
    if intent.per_person:
        return person_lines(
            msg_units, projection, intent, names, evidence, messages, embedder, config, memo
        )
    if len(intent.people) == 1 and not intent.source:
        msg_units = with_own(
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
    if config.rerank and intent.focus is None:
        ranked = rerank(
            ranked, projection.question, config.rerank, config.rerank_weight, config.rerank_top
        )
    words = focus_words(projection, names)
    if intent.qtype == "when":
        # how precisely a sentence says a date counts: "Tuesday 3 March" over a "this
        # month" or a "tomorrow" of a sentence that scores alike
        precision = [(s, u, has_date(u, memo)) for s, u in ranked]
        dated = sorted(
            ((s + config.date_weight * d, u) for s, u, d in precision if d),
            key=lambda su: (-su[0], su[1].rank),
        )
        if CLOCK_Q.search(projection.question):  # the time of day: the sentences saying one
            dated = [(s, u) for s, u in ranked if CLOCK.search(u.text)] or dated
        best = pick(dated or ranked, intent, config, words)
        return date_answer(best, projection.question, intent.two_asks, config, memo, embedder)
    if intent.focus == "change":
        return _change(ranked, config, projection.question, memo)
    valued = holds_value(intent, names, projection.question, memo)
    if chooser is not None:
        # an amount asked: the sentences that say one, and a later correction of it
        pool = [(s, u) for s, u in ranked if valued(u)] if valued is not None else []
        best = chooser(pool or ranked, intent, memo)
        if valued is not None:
            best = corrected(ranked, best, messages, valued)
        if intent.focus == "current" and best.history:
            # "now": an earlier state of a record's chain gives way to the chain's head
            heads = successors(ranked, [best], words, True)
            best = by_time(heads, latest=True) if heads else best
    else:
        best = pick(ranked, intent, config, words, valued, messages)
    line = _write(best, intent, names, projection.question, config)
    if config.short_answer and intent.focus is None and intent.qtype not in ("why", "decision"):
        return Answered(short_line(best, intent, names, projection.question, config), quote=line)
    return line


def answer_learned(
    projection: Projection,
    evidence: list[EvidenceItem],
    units: list[Unit],
    names: list[str],
    messages: Messages | None,
    embedder,
    config: AnswerConfig,
    memo: TextMemo,
) -> str | Answered | None:
    """The scoring picker with the learned choice of :mod:`.answer_learned` (its rules when
    no weights are shipped)."""
    weights = load_weights(config.picker_weights) if config.picker_weights else load_weights()
    learned: Chooser | None = None
    if weights is not None:

        def learned(ranked: list[tuple[float, Unit]], intent: Intent, memo: TextMemo) -> Unit:
            return choose(ranked, intent, memo, weights)

    return answer_scored(
        projection, evidence, units, names, messages, embedder, config, memo, chooser=learned
    )

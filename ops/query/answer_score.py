"""Scoring and picking for the scoring answer picker (:mod:`.answer_pick`): one score per
sentence of the evidence, and the choice among the sentences close to the best by the
question's time focus (see :mod:`.answer_pick` for the whole method)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from datetime import datetime

import numpy as np

from speakerflow.graphs import query_terms
from speakerflow.ops.query.answer_config import AnswerConfig
from speakerflow.ops.query.answer_dates import CLOCK, has_date
from speakerflow.ops.query.answer_intent import (
    CALENDAR,
    CURRENT_Q,
    EACH,
    NAME_WORD,
    ORIGINAL_Q,
    PLACE,
    REASON,
    SETTLE,
    Intent,
)
from speakerflow.ops.query.answer_text import RATHER, REJECTED
from speakerflow.ops.query.answer_units import (
    Messages,
    TextMemo,
    Unit,
    message_terms,
    stem,
    terms,
)
from speakerflow.ops.text.people import name_key
from speakerflow.schemas import Projection

_NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty "
    "hundred thousand half dozen noon midnight".split()
)


def has_number(text: str) -> bool:
    return any(ch.isdigit() for ch in text) or bool(
        _NUMBER_WORDS & {w.lower().strip(".,!?") for w in text.split()}
    )


def says_amount(u: Unit, memo: TextMemo) -> bool:
    """Whether the sentence says an amount: a number outside its dates and times of day ("£20
    a head", "thirty chairs"; not "the dentist on 2 June" nor "at 6pm"): what a how much / how
    many question asks."""
    text = u.text
    if u.ts is not None:
        for span in memo.spans(u.text, u.ts):
            text = text.replace(span.text, " ")
    return has_number(CLOCK.sub(" ", text))


def proper_nouns(text: str, names: set[str]) -> list[str]:
    """Capitalised words that are neither a roster name, a calendar word nor a common word
    (a sentence-initial "Porto it is." names a place; "The" does not)."""
    out = []
    for m in NAME_WORD.finditer(text):
        w = m.group(0).strip("'")
        low = w.lower().replace("\u2019", "'")
        if low in names or low in CALENDAR or low.startswith("i'") or not query_terms(w):
            continue  # "I've", "I'd" are the speaker, no name
        out.append(w)
    return out


def mentions(u: Unit, person: str) -> bool:
    first = person.split()[0].lower()
    # "Chris's" and "Chris" name Chris (a plain rstrip of "'s" would make him "Chri")
    return any(name_key(m.group(0)) == first for m in NAME_WORD.finditer(u.text))


# --- scoring -----------------------------------------------------------------------------------


#: verbs a question uses to ask about any activity ("what is she doing", "what is happening
#: on Friday"): no word of the matter, a reply need not say them
_LIGHT_VERBS = frozenset(stem(w) for w in "doing being happening".split())


def focus_words(projection: Projection, names: list[str]) -> set[str]:
    """The question's content words without names, light verbs and the words of its time
    focus."""
    words = terms(projection.issue) | terms(projection.question)
    drop = {stem(n) for name in names for n in name.split()} | _LIGHT_VERBS
    timeish = terms(" ".join(m.group(0) for m in CURRENT_Q.finditer(projection.question)))
    timeish |= terms(" ".join(m.group(0) for m in ORIGINAL_Q.finditer(projection.question)))
    # "each", "everyone": they ask for one line per person, the lines need not say them
    timeish |= terms(" ".join(m.group(0) for m in EACH.finditer(projection.question)))
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
        return 1.0 if says_amount(u, memo) else 0.0
    if q == "where":
        place = any(m.group(0).split()[-1].lower() not in CALENDAR for m in PLACE.finditer(u.text))
        return 1.0 if place else 0.5 if proper_nouns(u.text, names) else 0.0
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
    if q == "what" and WHICH_THING.match(question):
        # "which film / what dish ...": a thing named, a proper noun the question lacks
        named = {w.lower() for w in NAME_WORD.findall(question)}
        return 0.5 if any(w.lower() not in named for w in proper_nouns(u.text, names)) else 0.0
    return 0.0


#: a question for a named thing: "which film", "what dish" (not "what did", "what is")
WHICH_THING = re.compile(
    r"^\s*(?:which|what)\s+(?!(?:is|are|was|were|do|does|did|will|would|has|have|had|can|could|"
    r"should|shall|might|must|about|kind|sort|else|time)\b)[a-z]\w*",
    re.I,
)


def _person_fit(u: Unit, intent: Intent) -> float:
    if intent.source and intent.about:
        if u.speaker == intent.source and mentions(u, intent.about):
            return 1.0
        if u.speaker == intent.source:
            return 0.5
        return 0.5 if u.speaker != intent.about and mentions(u, intent.about) else 0.0
    if intent.people and not intent.per_person:
        return 1.0 if u.speaker in intent.people or set(intent.people) & u.rows else 0.0
    return 0.0


def _reply_match(
    u: Unit,
    words: set[str],
    idf: dict[str, float],
    top_idf: float,
    messages: Messages | None,
    memo: TextMemo,
) -> float:
    """The focus words (rarity-weighted) of the turn ``u``'s message replies to, those its own
    message lacks: a short reply ("happy to, Friday works") is on the matter of the turn it
    answers."""
    replied = messages.replied(u.msg_id) if messages is not None else None
    if replied is None:
        return 0.0
    own = message_terms(u)
    said = set().union(*(memo.words(x) for x in memo.split(replied[1])))
    return sum(idf.get(w, top_idf) for w in (words & said) - own)


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
    words = focus_words(projection, names)
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
    top_idf = math.log(1 + n)  # a focus word only the replied turn holds is as rare as can be
    # a date, a number, a place or a name is the answer itself, not a side cue
    asked_type = intent.qtype in ("when", "where", "who") or intent.quantity
    out = []
    for i, u in enumerate(units):
        lex = sum(idf.get(w, 0.0) for w in words & u.terms) / total
        lex_msg = sum(idf.get(w, 0.0) for w in words & whole.get(u.msg_id, u.terms)) / total
        lex_reply = _reply_match(u, words, idf, top_idf, messages, memo) / total
        hit = _type_hit(u, intent, lowered, projection.question, memo)
        u.proposes = asked_type and hit >= 0.75
        if gate and not (lex or lex_msg or hit or sent[i] >= config.min_similarity):
            continue
        s = (
            config.sentence_weight * sent[i]
            + config.message_weight * msg[i]
            + config.lexical_weight * (lex + 0.5 * lex_msg + config.reply_weight * lex_reply)
            + config.type_weight * hit * (2.0 if asked_type else 1.0)
            + config.person_weight * _person_fit(u, intent)
            + 0.1 / (1 + u.rank)
        )
        if u.asks:
            s -= config.question_penalty
        out.append((s, u))
    out.sort(key=lambda su: (-su[0], su[1].rank))
    return out


# --- picking -----------------------------------------------------------------------------------

#: a sentence that says what is *not* (any more) the case: under a "now" question the state
#: it rejects is the old one ("it wasn't the printer, the cable was loose")
NEGATION = re.compile(r"\b(not|no longer|never|instead of|rather than)\b|n['\u2019]t\b", re.I)


def close_to_best(ranked: list[tuple[float, Unit]], margin: float) -> list[Unit]:
    """The units within ``margin`` of the best, not questions themselves."""
    top = ranked[0][0]
    return [u for s, u in ranked if s >= top - margin and not u.asks]


def by_time(cands: list[Unit], latest: bool) -> Unit:
    dated = [u for u in cands if u.ts is not None] or cands
    if latest:
        return max(dated, key=lambda u: (u.ts is not None, u.ts, -u.rank))
    return min(dated, key=lambda u: (u.ts is None, u.ts, u.rank))


def best_of_message(ranked: list[tuple[float, Unit]], unit: Unit, current: bool) -> Unit:
    """The best sentence of ``unit``'s message; for the current state one that rejects
    nothing when there is one."""
    mine = [(s, u) for s, u in ranked if u.msg_id == unit.msg_id]
    if current:
        plain = [
            (s, u) for s, u in mine if not NEGATION.search(u.text) and len(u.text.split()) >= 3
        ]
        mine = plain or mine
    return max(mine, key=lambda su: su[0])[1] if mine else unit


def on_matter(ranked: list[tuple[float, Unit]], words: set[str], share: float) -> list[Unit]:
    """Units scoring at least ``share`` of the best whose message holds a question word that
    the best unit's message holds too, or one of the matter's values: a name the best message says,
    or a name said beside it elsewhere (the alternatives argued over: "A or B?" makes a later
    "B is fine" the same matter). The same matter said at another time, though worded apart."""
    best = ranked[0][1]
    mine = message_terms(best)
    values = {stem(v) for v in proper_nouns(" ".join(best.siblings or (best.text,)), set())}
    if values:
        for _, u in ranked:
            said = {stem(v) for v in proper_nouns(" ".join(u.siblings or (u.text,)), set())}
            if said & values:
                values |= said
    shared = (words & mine) | values
    if not shared:
        return []
    top = ranked[0][0]
    return [u for s, u in ranked if s >= top * share and not u.asks and shared & message_terms(u)]


def successors(
    ranked: list[tuple[float, Unit]],
    cands: list[Unit],
    words: set[str] | None = None,
    values: bool = True,
) -> list[Unit]:
    """The units of the message that heads the chain of each of ``cands``' history units,
    each from its own speaker: of the record's messages after it, the latest that holds a focus
    word of the question (a record may gather one person's statements on several matters);
    when none does, the record's last unless the unit itself holds one (then it is the latest
    on the matter and what follows is another). The head of the person's chain supersedes an
    earlier state however the change of mind is worded."""
    by_msg: dict[str | None, list[Unit]] = {}
    for _, u in ranked:
        by_msg.setdefault(u.msg_id, []).append(u)
    heads: set[tuple[str | None, str | None]] = set()
    for u in cands:
        if not (u.history and u.record_span and u.msg_id in u.record_span):
            continue
        later = [
            m
            for m in u.record_span[u.record_span.index(u.msg_id) + 1 :]
            if any(v.speaker == u.speaker for v in by_msg.get(m, ()))
        ]
        on_matter = [m for m in later if words and words & message_terms(by_msg[m][0])]
        if on_matter:
            heads.add((on_matter[-1], u.speaker))
        elif later and not (words and words & message_terms(u)):
            heads.add((later[-1], u.speaker))
        elif values:
            # for a question asking a value (a date, a place, a number), the later messages
            # with a sentence saying one that ``u``'s message does not: the record's newer
            # value of the matter however it is worded (the same value said again is no update)
            said = _all_values(" ".join(u.siblings or (u.text,)))
            valued = [
                m
                for m in later
                if any(v.proposes and _all_values(v.text) - said for v in by_msg[m])
            ]
            if valued:
                heads.add((valued[-1], u.speaker))
    return [u for _, u in ranked if (u.msg_id, u.speaker) in heads and not u.asks]


def _values(text: str, numbers: bool) -> set[str]:
    """The values a text names of the kind a question asks: its numbers (the digits of "7pm",
    "£12") and calendar words for a quantity or date question (``numbers``), else its proper
    nouns."""
    if numbers:
        found = {m.group(0) for m in re.finditer(r"\d+(?:[.:]\d+)?", text)}
        return found | {w.lower() for w in NAME_WORD.findall(text) if w.lower() in CALENDAR}
    return {stem(w) for w in proper_nouns(text, set())}


def _all_values(text: str) -> set[str]:
    """Every value a text names: numbers, calendar words and proper nouns."""
    return _values(text, True) | _values(text, False)


def rejecting(ranked: list[tuple[float, Unit]], chosen: Unit, numbers: bool) -> Unit | None:
    """The latest sentence after ``chosen`` that turns down a value ``chosen`` states (",
    not X", "instead of X", "rather than X" with X's number or name among ``chosen``'s: "the
    coach leaves at 9 not 10" supersedes "coach at 10"): a correction of the state, whoever
    says it, on a matter worded apart. Only values of the asked kind count (``numbers``: a
    number or a calendar word for a quantity or date question, else a name): a time turned
    down is no correction of which film is shown."""
    if chosen.ts is None:
        return None
    mine = _values(chosen.text, numbers)
    later: list[tuple[datetime, int, Unit]] = []
    for i, (_, u) in enumerate(ranked):
        if u.asks or u.ts is None or u.ts <= chosen.ts:
            continue
        turned = [m.group(0) for m in REJECTED.finditer(u.text)]
        turned += [m.group(0) for m in RATHER.finditer(u.text)]
        if any(_values(t, numbers) & mine for t in turned):
            later.append((u.ts, -i, u))
    return max(later, key=lambda t: t[:2])[2] if later else None


def predecessors(ranked: list[tuple[float, Unit]], cands: list[Unit]) -> list[Unit]:
    """The units of the first message of each of ``cands``' record spans, the candidate's
    own words: the earliest state of the person's update chain, however its
    words differ from the question's."""
    firsts = {(u.record_span[0], u.speaker) for u in cands if u.record_span}
    return [u for _, u in ranked if (u.msg_id, u.speaker) in firsts and not u.asks]


def holds_value(
    intent: Intent, names: list[str], question: str, memo: TextMemo
) -> Callable[[Unit], bool] | None:
    """For a question whose answer is a number ("how many/much", "what price"): does a
    sentence hold one? ``None`` for other questions (places are not read reliably enough:
    a lowercase "the library" is no place to the cue patterns)."""
    if not intent.quantity:
        return None
    lowered = {n.lower() for name in names for n in name.split()}
    return lambda u: _type_hit(u, intent, lowered, question, memo) >= 1.0


def _addresses(u: Unit, person: str | None) -> bool:
    """``u``'s message opens by naming ``person`` ("Sam, it was 30", "@Lee only two")."""
    if not person:
        return False
    first = (u.siblings or (u.text,))[0].lstrip("@ ").split(maxsplit=1)
    return bool(first) and name_key(first[0].strip(",:;!-")) == person.split()[0].lower()


def corrected(
    ranked: list[tuple[float, Unit]],
    chosen: Unit,
    messages: Messages | None,
    valued: Callable[[Unit], bool],
) -> Unit:
    """The later statement by another person that corrects the value ``chosen`` says: one
    that replies to its message (the next turn) or opens by naming its speaker, and says a
    value of the asked kind that ``chosen``'s message does not ("the tickets are £9, right?" -
    "no, £11 now"; "Sam, we counted 31 not 30"). A question that offers a value is settled by
    the reply saying one, the same or another. A correction of the correction is followed."""
    seen = {chosen.msg_id}
    while True:
        said = _values(" ".join(chosen.siblings or (chosen.text,)), True)
        asks = chosen.text.rstrip().endswith("?")
        found = [
            u
            for _, u in ranked
            if not u.asks
            and u.msg_id not in seen
            and u.speaker != chosen.speaker
            and u.ts is not None
            and chosen.ts is not None
            and u.ts > chosen.ts
            and valued(u)
            and (asks or _values(u.text, True) - said)
            and (
                (messages is not None and messages.reply_to(u.msg_id) == chosen.msg_id)
                or _addresses(u, chosen.speaker)
            )
        ]
        if not found:
            return chosen
        chosen = found[0]
        seen.add(chosen.msg_id)


def pick(
    ranked: list[tuple[float, Unit]],
    intent: Intent,
    config: AnswerConfig,
    words: set[str] | None = None,
    valued: Callable[[Unit], bool] | None = None,
    messages: Messages | None = None,
) -> Unit:
    """The answer unit for a question with one answer (see the module doc); ``valued``
    (:func:`holds_value`) keeps a dated choice to the statements that say a value when some
    do (the latest statement on how many may come names a number)."""
    timed = intent.focus in ("current", "original")
    if timed or intent.present:
        margin = config.margin if timed else config.present_margin
        cands = close_to_best(ranked, margin)
        if words and timed:  # a "now" question reads the matter wider; a present tense does not
            cands += on_matter(ranked, words, config.matter_share)
        if valued is not None:
            cands = [u for u in cands if valued(u)] or cands
        if intent.focus == "original":
            cands += predecessors(ranked, cands)
            return best_of_message(ranked, by_time(cands or [ranked[0][1]], latest=False), False)
        numbers = intent.quantity or intent.qtype == "when"
        chosen = rejecting(ranked, ranked[0][1], numbers)
        while chosen is not None and (later := rejecting(ranked, chosen, numbers)) is not None:
            chosen = later
        if chosen is None:
            heads = successors(ranked, cands, words, intent.focus == "current")
            # a value question's newer state says a value: a later message of the record on
            # another side of the matter (the day moved, the price did not) is no successor
            cands += [u for u in heads if valued(u)] if valued is not None else heads
            cands = [u for u in cands if not u.history] or cands or [ranked[0][1]]
            chosen = by_time(cands, latest=True)
        if valued is not None:
            chosen = corrected(ranked, chosen, messages, valued)
        return best_of_message(ranked, chosen, intent.focus == "current")
    if intent.qtype == "why":
        # "why was it moved": of statements scoring alike, the latest is the event asked
        # about (its reason said with it), an earlier one the state before it
        return by_time(close_to_best(ranked, config.present_margin) or [ranked[0][1]], True)
    if valued is not None:
        return best_of_message(ranked, corrected(ranked, ranked[0][1], messages, valued), False)
    return ranked[0][1]

"""The rules and chat answerer's settings: what :class:`~speakerflow.ops.query.answer.Answer`
and the pickers beside it (:mod:`.answer_old`, :mod:`.answer_text`) read."""

from __future__ import annotations

from speakerflow.ops.core.base import OperatorConfig


class AnswerConfig(OperatorConfig):
    """``backend``: ``rules`` or ``chat`` (uses the given ChatBackend); ``max_tokens`` for chat.
    ``picker``: how the rules answerer picks its answer (``scored``, the default:
    :mod:`.answer_pick`; ``old``: the first picker, :mod:`.answer_old`; ``learned``: the
    scoring picker with a learned choice among its best sentences, :mod:`.answer_learned`).

    Rules weights: ``dense_weight`` scales the question-message cosine (0 turns it off);
    ``question_penalty`` is subtracted for sentences that are questions; ``type_bonus`` is
    added for the cue of the question type (reason, time, place, settling words);
    ``record_bonus`` for a unit that a matching System 2 record rests on (GROUP for
    decisions, the person's own row for per-person lines, a multi-message record for change).
    ``context_weight``: a message cited by a record takes this share of the gap to the best
    question match among the record's messages and statement (records tie messages to one
    matter); ``settle_floor``: a decision question answers with the settling message of a GROUP
    record (its source's latest cited message) when it scores at least this share of the best.
    """

    backend: str = "rules"
    picker: str = "scored"
    #: ``picker="learned"``: its weights file (None: ``ops/query/picker_weights.json``)
    picker_weights: str | None = None
    max_tokens: int = 200
    dense_weight: float = 4.0
    question_penalty: float = 2.0
    type_bonus: float = 1.5
    record_bonus: float = 1.0
    annotate_dates: bool = True
    max_statement_words: int = 40
    when_quote: bool = False
    clause_words: int = 12
    context_weight: float = 0.5
    settle_floor: float = 0.8
    # the scoring picker (picker="scored", ops/query/answer_pick.py)
    sentence_weight: float = 1.0
    #: the share of its focus-word match a message takes from the turn it replies to (another
    #: person's message just before it in its session)
    reply_weight: float = 0.5
    #: the scoring picker cuts a sentence to its best clause only past this many words (the
    #: old picker's ``clause_words`` cut at 12 lost the value said after a comma)
    sentence_words: int = 40
    message_weight: float = 0.5
    lexical_weight: float = 1.0
    type_weight: float = 0.4
    person_weight: float = 0.5
    min_similarity: float = 0.35
    margin: float = 0.2
    present_margin: float = 0.1
    matter_share: float = 0.6
    own_messages: int = 3
    session_weight: float = 0.3
    discussion_turns: int = 12
    #: per-person lines: the exchange is read from this many of the best-scored messages, and
    #: runs this many turns past one per person asked about
    exchange_anchors: int = 5
    exchange_slack: int = 3
    exchange_share: float = 0.9
    #: a person's first message after the exchange's opener is lifted by this, the k-th by
    #: this / (1 + k): the reply to a question to the group (:func:`.answer_people.replies_to`);
    #: above the focus-word share a later message takes from the turn it follows (about 0.6
    #: for one rare word), so that a word-less reply ("popcorn!") keeps its place (1.0 to
    #: 2.0 score the same on the dev answer sets)
    reply_order: float = 1.5
    #: a per-person line from a reply of at most this many words without the question's
    #: words carries the turn it answers (:func:`.answer_text.with_turn`; 0: never)
    short_reply_words: int = 5
    said_date: bool = True
    #: a date question's candidates take this x how precisely they say a date
    #: (:func:`.answer_dates.has_date`: 1 an explicit day, 0.75 "tomorrow", 0.4 a month)
    date_weight: float = 1.0
    #: the answer line is the span the question type asks for (a place, an amount, a person,
    #: else a clause of at most ``clause_words``), the whole line kept as its quote
    #: (:mod:`.answer_short`)
    short_answer: bool = False
    #: question types without a time focus that the scoring picker hands to the old one
    old_types: tuple[str, ...] = ("who", "decision", "per-person")
    #: a per-person question handed to the old picker is answered by the exchange's lines
    #: when the exchange opens with a question put to the group (a round of replies)
    opener_rounds: bool = True
    #: rerank the scoring picker's ``rerank_top`` best sentences by query likelihood under
    #: this local model (a model spec: ``smollm2-135m``, a .gguf file, a model folder; None
    #: turns it off), adding ``rerank_weight`` x its z-score (:mod:`.answer_lm`)
    rerank: str | None = None
    rerank_weight: float = 0.5
    rerank_top: int = 10
    #: write the answer in a few words with this local reader model (a model spec, or
    #: ``smollm2-reader``: the adapter shipped in ``ops/query/smollm2_reader``); the extractive
    #: line becomes the answer's quote and the cited ids stay (:mod:`.answer_reader`). None: off
    reader: str | None = None
    #: question types (:func:`.answer_intent.question_type`) the reader leaves extractive:
    #: a date is computed by the calendar resolver (:mod:`.answer_dates`), not read
    reader_skip: tuple[str, ...] = ("when",)
    #: when not empty, the only question types the reader reads (e.g. ``("decision",)``, the
    #: one labelled type where the reader beat the extractive line on the answers_v7 dev set)
    reader_only: tuple[str, ...] = ()
    #: a reply is kept only when at least this share of its content words are in the evidence
    #: it was shown (:func:`.answer_reader.grounded_share`); else the extractive line stays
    reader_grounded: float = 0.5

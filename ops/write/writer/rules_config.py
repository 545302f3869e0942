"""The knobs of the ``rules`` WriterBackend (:class:`~.rules.RulesWriter`); each field's
description says what it changes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class RulesConfig(BaseModel):
    """Knobs of the rules Writer."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    min_topic_words: int = Field(
        default=2,
        ge=0,
        description="content words a person record needs (its message's statements about one "
        "person together; one says too little: 'Booked!', 'Uncle Emmanuel is WRONG'); each "
        "statement needs one",
    )
    min_claim_words: int = Field(
        default=2, ge=0, description="content words an unattributed claim needs (rule 6)"
    )
    slot_overlap: float = Field(
        default=1 / 3, ge=0.0, le=1.0, description="topic Jaccard to continue a slot"
    )
    min_question_words: int = Field(
        default=3, ge=0, description="content words a question needs to be recorded"
    )
    short_answer_words: int = Field(
        default=14, ge=1, description="an answer this short is stored with its question"
    )
    # consolidation (records spanning messages)
    thread_similarity: float = Field(
        default=0.15,
        ge=0.0,
        le=1.0,
        description="IDF-weighted word similarity (with a shared rare word) that continues a "
        "thread",
    )
    thread_clauses: int = Field(
        default=3, ge=1, description="statements a thread record keeps in its content (newest)"
    )
    max_cited: int = Field(
        default=8,
        ge=1,
        description="messages a record cites at most: the newest (a decision "
        "two more: its proposal and the newest); older ones stay cited by the chain's earlier "
        "records",
    )
    decision_lookback: int = Field(
        default=10,
        ge=0,
        description="messages of the session before a decision searched for its discussion",
    )
    norms: bool = Field(
        default=True, description="write recurring-activity norms (who keeps / misses them)"
    )
    min_norm_sessions: int = Field(
        default=2, ge=1, description="sessions an activity must come up in to be a norm"
    )
    min_record_words: int = Field(
        default=4,
        ge=0,
        description="words a person record's content needs (shorter ones "
        "say too little to be worth a record; the message stays in System 1)",
    )
    update_on: str = Field(
        default="change",
        pattern="^(change|continue)$",
        description="when a statement continuing an earlier session's record supersedes it: "
        "'change' only when the state changes (a change cue, a single-valued matter, a later "
        "decision); other continuations become this session's own record citing the earlier "
        "messages. 'continue': every continuation is an UPDATE (the thread is one chain)",
    )
    consensus_record: bool = Field(
        default=True,
        description="write agreement with a group proposal as a separate "
        "record ('Ben, Chloe with Ana (date): ...'); else the proposal itself becomes "
        "the group's decision, citing the agreeing messages",
    )
    merge_words: int = Field(
        default=22,
        ge=0,
        description="words a record merged from one segment's statements "
        "may reach; a statement that would make it longer starts its own record",
    )
    questions: bool = Field(
        default=True, description="record substantive questions as 'asked: ...' observations"
    )
    elide: bool = Field(
        default=True,
        description="a self-report does not repeat its owner's name ('team is at eight', not "
        "'Mei's team is at eight'): the owner field says whose it is",
    )
    message_merge: bool = Field(
        default=False,
        description="a person's consecutive statements about themselves in one message are one "
        "record whatever the matter (SpeakerLevenshtein +0.004, but LoCoMo dev recall@10 -0.005 "
        "with attribute on: off by default)",
    )
    revise: bool = Field(
        default=True,
        description="a later message of a person that revises their record on the same matter "
        "(rules_revise: words shared with the record's messages, and a change word, moved "
        "numbers, a negated word of it or a turned stance) becomes an UPDATE of it",
    )
    revise_similarity: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="IDF-weighted word similarity (with a shared rare word) between a message "
        "(read with the one before it) and a record's messages for a revision",
    )
    revise_embedder: str = Field(
        default="minilm",
        description="sentence embedder (make_embedder kinds) that also finds a revision's "
        "matter when the words differ: the message and one of the record's messages at a "
        "cosine of at least revise_cosine, the message with a change word; 'none' keeps the "
        "word similarity alone",
    )
    revise_cosine: float = Field(
        default=0.50,
        ge=-1.0,
        le=1.0,
        description="MiniLM cosine at which a message is on a record's matter: about the 97th "
        "percentile of all same-speaker message pairs of the socialmem training chats (90th "
        "0.41, 95th 0.47, 98th 0.55); chosen among 0.40 / 0.47 / 0.50 on answers_v2 (dev, "
        "docs/query-path.md)",
    )
    attribute: bool = Field(
        default=True,
        description="a view of another member opens with its source ('Ana says Ben ...', "
        "'Ana asks ...'): the record's owner is whom it is about, its words say who holds it",
    )

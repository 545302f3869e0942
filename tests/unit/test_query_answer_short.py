"""The short answer form (``AnswerConfig.short_answer``) and per-person amounts, on hand-made
evidence (no embedder: lexical scoring only)."""

from datetime import UTC, datetime

from speakerflow.ops.query.answer import AnswerConfig, answer_line, answer_rules
from speakerflow.ops.query.project import project_rules
from speakerflow.schemas import EvidenceItem

ROSTER = ["Maya", "Tom", "Ana", "Chloe"]
T = datetime(2026, 4, 10, 10, 0, tzinfo=UTC)
SHORT = AnswerConfig(short_answer=True)


def ex(rank, speaker, text):
    return EvidenceItem(
        rank=rank, kind="excerpt", text=text, msg_ids=[f"m{rank}"], speaker=speaker, ts=T
    )


def line(question, evidence, config=SHORT):
    return answer_line(project_rules(question, ROSTER), evidence, config, roster=ROSTER)


def test_where_answers_with_the_place_and_keeps_the_sentence_as_quote():
    evidence = [ex(0, "Tom", "My sister moved to New Zealand after the wedding last spring.")]
    got = line("Where did Tom's sister move?", evidence)
    assert got.text == "New Zealand"
    assert got.quote is not None and "moved to New Zealand" in got.quote
    assert line("Where did Tom's sister move?", evidence, AnswerConfig()).quote is None


def test_how_much_answers_with_the_amount_and_its_unit():
    evidence = [ex(0, "Ana", "The membership fee went up, it is £135 a year from September.")]
    assert line("How much is the membership fee?", evidence).text == "£135 a year"


def test_who_answers_with_the_person_when_the_scorer_answers_who_questions():
    evidence = [ex(0, "Ana", "We agreed that Chloe will plan the team dinner on the first night.")]
    scored_who = AnswerConfig(short_answer=True, old_types=())
    assert line("Who will plan the team dinner?", evidence, scored_who).text == "Chloe"
    # by default the old picker answers who-questions without a time focus: its line is whole
    assert line("Who will plan the team dinner?", evidence).text.startswith("Chloe (Ana:")


def test_other_questions_answer_with_a_short_clause():
    evidence = [
        ex(0, "Maya", "After a long search, weighing every option we had, we adopted a grey cat.")
    ]
    got = line("What pet did Maya adopt?", evidence)
    assert "grey cat" in got.text and len(got.text.split()) <= AnswerConfig().clause_words
    assert got.quote and got.quote.startswith("Maya:")


def test_per_person_amounts_keep_to_the_sentences_that_say_one():
    evidence = [
        ex(0, "Tom", "Loved the book, the ending got me."),
        ex(1, "Tom", "I give the book a 4."),
        ex(2, "Ana", "The book was slow in the middle."),
        ex(3, "Ana", "I give it 2 for the book."),
    ]
    q = project_rules("What score did each person give the book?", ROSTER)
    by = {x.split(":")[0]: x for x in answer_rules(q, evidence, roster=ROSTER).splitlines()}
    assert "4" in by["Tom"] and "2" in by["Ana"]

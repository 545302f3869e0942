"""The answer reader's parts without a model: evidence lines, prompt, reply cleaning, training
targets and pairs, and the Answer operator's use of a reader (a stand-in reader object; the
real model is in tests/integration/test_answer_reader.py). Sentences written for this test."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pyarrow as pa
import pytest

from speakerflow.benchmarks.qa_data import QAData, QAItem
from speakerflow.benchmarks.qa_data import answer_set_target as set_target
from speakerflow.ops.query import answer as answer_mod
from speakerflow.ops.query.answer import Answer, AnswerConfig
from speakerflow.ops.query.answer_reader import (
    MAX_LINES,
    clean,
    evidence_line,
    evidence_lines,
    grounded_share,
    reader_chat,
)
from speakerflow.ops.text.embed import HashingEmbedder
from speakerflow.schemas import EvidenceItem
from speakerflow.training.reader import reader_pairs, split_groups

DAY = datetime(2026, 5, 3, 10, 0, tzinfo=UTC)


def test_evidence_line_dates_the_message_and_its_relative_days() -> None:
    line = evidence_line("Ana", DAY, "We adopted a kitten yesterday.")
    assert line.startswith("[3 May 2026] Ana: We adopted a kitten yesterday")
    assert "(2 May 2026)" in line
    assert evidence_line(None, None, "a note") == "note: a note"
    long = evidence_line("Ana", None, " ".join(["word"] * 100))
    assert long.endswith("...") and len(long.split()) < 70


def _item(rank, kind, text, ids, speaker="Ana", ts=DAY):
    return EvidenceItem(rank=rank, kind=kind, text=text, msg_ids=ids, speaker=speaker, ts=ts)


def test_evidence_lines_read_excerpts_and_the_messages_of_records() -> None:
    view = SimpleNamespace(
        pos={"m1": 0, "m2": 1},
        ids=["m1", "m2"],
        speakers=["Ana", "Ben"],
        ts=[DAY, DAY],
        texts=["The kiln is fixed.", "I'll glaze the bowls."],
    )
    evidence = [
        _item(0, "excerpt", "The kiln is fixed.", ["m1"]),
        _item(1, "record", "Ben plans to glaze", ["m2", "m1"], speaker="Ben"),
        _item(2, "empty_row", "(none)", []),
    ]
    lines = evidence_lines(evidence, view)
    assert [line.split("] ", 1)[1] for line in lines] == [
        "Ana: The kiln is fixed.",
        "Ben: I'll glaze the bowls.",
    ]
    # without the view a record is its own text; the limit holds
    assert evidence_lines(evidence, None)[1].endswith("Ben: Ben plans to glaze")
    many = [_item(i, "excerpt", f"text {i}", [f"x{i}"]) for i in range(9)]
    assert len(evidence_lines(many)) == MAX_LINES


def test_reader_chat_holds_the_lines_and_the_question() -> None:
    chat = reader_chat(" Who fixed the kiln? ", ["a: one", "b: two"])
    assert [m["role"] for m in chat] == ["system", "user"]
    assert chat[1]["content"].endswith("a: one\nb: two\nQuestion: Who fixed the kiln?")


def test_clean_keeps_one_line_per_person() -> None:
    assert clean(' "Friday" \n') == "Friday"
    assert clean("Ana: tea\n\nBen: coffee\n") == "Ana: tea\nBen: coffee"
    assert clean("   ") == ""


def test_a_reader_that_cannot_load_warns_and_leaves_the_answer() -> None:
    from speakerflow.ops.query.answer_reader import shared_reader

    with pytest.warns(UserWarning, match="did not load"):
        assert shared_reader("/nonexistent/reader") is None
    items = [(0, "What?", ["a: b"])]
    answers, quotes = ["the line"], [None]
    assert (
        answer_mod.read_short(AnswerConfig(reader="/nonexistent/reader"), items, answers, quotes)
        == 0
    )
    assert answers == ["the line"] and quotes == [None]


def test_grounded_share_counts_the_reply_words_the_evidence_holds() -> None:
    lines = ["[3 May 2026] Ana: We adopted two kittens, Miso and Tofu, on 2 May."]
    assert grounded_share("kittens", lines) == 1.0  # stemmed: kitten(s)
    assert grounded_share("Miso and a puppy", lines) == 0.5
    assert grounded_share("2", lines) == 1.0 and grounded_share("17", lines) == 0.0
    assert grounded_share("", lines) == 1.0


def test_set_target_writes_what_the_question_expects() -> None:
    assert set_target({"expect": [["18:30", "6.30pm"], ["hall"]]}) == "18:30, hall"
    assert set_target({"expect": [["oak"], ["ash"]], "ordered": True}) == "oak, then ash"
    q = {"expect": [], "per_person": {"Ana": ["tea"], "Ben": ["coffee", "espresso"]}}
    assert set_target(q) == "Ana: tea\nBen: coffee"


def _data() -> QAData:
    rows = []
    for g in ("g1", "g2"):
        for i in range(8):
            rows.append((g, f"{g}-m{i}", "Ana" if i % 2 else "Ben", f"message {i} about topic {i}"))
    tables = []
    for g in ("g1", "g2"):
        mine = [r for r in rows if r[0] == g]
        tables.append(
            (
                g,
                pa.table(
                    {
                        "msg_id": [r[1] for r in mine],
                        "speaker": [r[2] for r in mine],
                        "text": [r[3] for r in mine],
                        "ts": [DAY] * len(mine),
                    }
                ),
            )
        )
    questions = [
        QAItem("q1", "g1", "What about topic 6?", "six", "fact", ("g1-m6",)),
        QAItem("q2", "g2", "What about topic 2?", "two", "fact", ("g2-m2", "g2-m3")),
        QAItem("q3", "g2", "No answer here?", "", "fact", ("g2-m1",)),
    ]
    return QAData("answers", tables, questions)


def test_reader_pairs_always_show_the_gold_and_skip_held_out_groups() -> None:
    data = _data()
    train, held = split_groups(["g1", "g2"], ["g2"])
    assert (train, held) == (["g1"], ["g2"])
    with pytest.raises(ValueError, match="not in the data"):
        split_groups(["g1"], ["g9"])
    pairs = reader_pairs(data, ["g1", "g2"], HashingEmbedder(64))
    assert sorted(p["question_id"] for p in pairs) == ["q1", "q2"]  # an empty answer is no pair
    for p in pairs:
        body = p["prompt"][1]["content"]
        assert body.count("\n[") == MAX_LINES  # MAX_LINES message lines
        gold = {"q1": ["message 6 "], "q2": ["message 2 ", "message 3 "]}[p["question_id"]]
        assert all(g in body for g in gold)
        assert p["completion"] == [
            {"role": "assistant", "content": {"q1": "six", "q2": "two"}[p["question_id"]]}
        ]
    assert [p["group"] for p in reader_pairs(data, ["g1"], HashingEmbedder(64))] == ["g1"]


class _Reader:
    def __init__(self, reply: str):
        self.reply, self.asked = reply, []

    def read_batch(self, items):
        self.asked += items
        return [self.reply for _ in items]


def _batch(question: str, evidence: list[EvidenceItem]):
    from speakerflow.ops.core.batch import Batch
    from speakerflow.ops.query.query_tables import COMPOSED, PROJECTION, Composed
    from speakerflow.schemas import Projection

    projection = Projection(question=question, issue=question, rows=["ALL"])
    return Batch.of({PROJECTION: [projection], COMPOSED: [Composed(evidence, "", 0)]})


def test_answer_operator_puts_the_short_reply_first_and_keeps_the_line(monkeypatch) -> None:
    from speakerflow.ops.core.base import Context
    from speakerflow.ops.query.query_tables import ANSWER_QUOTE, ANSWERS

    fake = _Reader("a kitten")
    monkeypatch.setattr(answer_mod, "shared_reader", lambda spec: fake)
    evidence = [_item(0, "excerpt", "We adopted a kitten yesterday.", ["m1"])]
    batch = _batch("What did Ana adopt?", evidence)
    plain = Answer(AnswerConfig()).run_batch(batch, Context())
    line = plain.get(ANSWERS)[0]
    assert "kitten" in line and not fake.asked  # no reader: extractive, nothing asked
    read = Answer(AnswerConfig(reader="any")).run_batch(batch, Context())
    assert read.get(ANSWERS) == ["a kitten"]
    assert read.get(ANSWER_QUOTE) == [line]
    assert fake.asked[0][0] == "What did Ana adopt?" and "kitten" in fake.asked[0][1][0]
    skip = AnswerConfig(reader="any", reader_skip=("what",))  # the default skips "when"
    assert Answer(skip).run_batch(batch, Context()).get(ANSWERS) == [line]
    # reader_only: the reader reads those question types only
    only = AnswerConfig(reader="any", reader_only=("decision",))
    assert Answer(only).run_batch(batch, Context()).get(ANSWERS) == [line]
    only = AnswerConfig(reader="any", reader_only=("what",))
    assert Answer(only).run_batch(batch, Context()).get(ANSWERS) == ["a kitten"]
    for reply in ("", "a golden retriever"):  # empty, or not in the evidence: the line stays
        fake.reply = reply
        got = Answer(AnswerConfig(reader="any")).run_batch(batch, Context())
        assert got.get(ANSWERS) == [line] and got.get(ANSWER_QUOTE) == [None]
    off = AnswerConfig(reader="any", reader_grounded=0.0)
    assert Answer(off).run_batch(batch, Context()).get(ANSWERS) == ["a golden retriever"]

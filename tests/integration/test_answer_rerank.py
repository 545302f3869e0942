"""The answer reranker (:mod:`speakerflow.ops.query.answer_lm`) on the real SmolLM2-135M: a
sentence that answers the question predicts it better than one that does not, and the rerank
only reorders the candidates it is given.

Sentences written for this test. Skipped, with the reason, only when the model package is
not installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from speakerflow.ops.query.answer_lm import QueryLikelihood, rerank, shared_scorer
from speakerflow.ops.query.answer_units import Unit

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]

QUESTION = "Which instrument has Oskar started learning?"
ANSWERS = "Oskar: I've been taking cello lessons every Thursday since March."
OTHER = "Oskar: The ferry back from the island was cancelled because of the wind."


@pytest.fixture(scope="module")
def scorer(smollm2: Path) -> QueryLikelihood:
    loaded = shared_scorer(str(smollm2))
    assert loaded is not None
    return loaded


def test_answering_sentence_predicts_the_question(scorer: QueryLikelihood) -> None:
    good, bad = scorer.score(QUESTION, [ANSWERS, OTHER])
    assert good > bad
    assert scorer.score(QUESTION, [OTHER, ANSWERS]) == [bad, good]  # memoised, order kept


def test_rerank_lifts_the_answer_and_keeps_the_rest(smollm2: Path, scorer: QueryLikelihood) -> None:
    spec = str(smollm2)  # the rerank reads the process's shared scorer, loaded once
    units = [
        Unit(text=OTHER.split(": ", 1)[1], msg_id="m1", speaker="Oskar", ts=None, rank=0),
        Unit(text=ANSWERS.split(": ", 1)[1], msg_id="m2", speaker="Oskar", ts=None, rank=1),
        Unit(text="See you all on Sunday.", msg_id="m3", speaker="Lea", ts=None, rank=2),
    ]
    ranked = [(1.0, units[0]), (0.95, units[1]), (0.1, units[2])]
    out = rerank(ranked, QUESTION, spec, weight=0.5, top=2)
    assert [u.msg_id for _, u in out] == ["m2", "m1", "m3"]
    assert out[2] == ranked[2]  # past ``top``: untouched
    assert rerank(ranked, QUESTION, spec, weight=0.0, top=2) == ranked
    assert rerank(ranked[:1], QUESTION, spec, weight=0.5, top=2) == ranked[:1]


def test_a_model_that_cannot_load_leaves_the_ranking() -> None:
    ranked = [(1.0, Unit(text="a", msg_id="m1", speaker="A", ts=None, rank=0))] * 2
    with pytest.warns(UserWarning, match="did not load"):
        assert rerank(ranked, QUESTION, "/nonexistent/model", 0.5, 10) == ranked
    assert shared_scorer("/nonexistent/model") is None

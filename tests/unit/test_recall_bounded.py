"""The bounded recall path of large groups against the exact path, on a real Tantivy store.

With the BM25 cap at least the number of messages, the bounded path must give the same
fused scores (bit for bit), the same pool, the same fallbacks and the same answers; with a
small cap, only the candidates and their session neighbourhoods get scores.
"""

import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pyarrow as pa
import pytest
from test_query_path import store  # noqa: F401  (fixture)

from speakerflow.graphs import Home
from speakerflow.ops.query.answer import Messages
from speakerflow.ops.query.recall import GroupView, RecallConfig, recall, warm_message_embeddings
from speakerflow.ops.query.recall_bounded import (
    bm25_top,
    fallback_rows,
    is_large,
    session_rows,
    speaker_index,
)
from speakerflow.ops.query.resolve import _fallback
from speakerflow.ops.text.embed import HashingEmbedder
from speakerflow.pipelines.query_path import QueryConfig, answer_question

N = 3_000
WORDS = (
    "lisbon porto hotel river flight train offsite budget coffee music guitar dog cat garden paint "
    "hike "
    "camp lake book novel poem school exam job office boss salary move city flat rent bike run "
    "race "
    "swim beach sun rain snow winter summer trip visit mother father sister brother friend party "
    "cake"
).split()
PEOPLE = ("Ana", "Ben", "Caro", "Dev", "Eli", "Fay", "Gus", "Hana")


def _stream(n: int, seed: int, interleave: bool = False) -> pa.Table:
    """``n`` messages of one group: sessions of 5-40 turns, 8 speakers, 4-12 words each
    (``interleave``: each session is two threads whose turns alternate in time)."""
    rng = random.Random(seed)
    t = datetime(2025, 1, 1, tzinfo=UTC)
    cols = {k: [] for k in ("msg_id", "group_id", "session_id", "turn", "ts", "speaker", "text")}
    session, left, turn = -1, 0, 0
    for i in range(n):
        if left == 0:
            session, left, turn = session + 1, rng.randint(5, 40), 0
            t += timedelta(hours=rng.randint(2, 50))
        cols["msg_id"].append(f"m{i:06d}")
        cols["group_id"].append("big")
        cols["session_id"].append(f"s{session:05d}" + (f"-{i % 2}" if interleave else ""))
        cols["turn"].append(turn)
        cols["ts"].append(t)
        cols["speaker"].append(rng.choice(PEOPLE[: 3 + session % 6]))
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
        cols["text"].append(text.capitalize() + ("?" if rng.random() < 0.2 else "."))
        t += timedelta(seconds=rng.randint(5, 600))
        left, turn = left - 1, turn + 1
    return pa.table(cols)


def _questions(rng: random.Random, k: int) -> list[str]:
    shapes = (
        "What did {p} say about {a} and {b}?",
        "When did {p} mention the {a}?",
        "Who talked about {a} {b}?",
    )
    return [
        rng.choice(shapes).format(p=rng.choice(PEOPLE), a=rng.choice(WORDS), b=rng.choice(WORDS))
        for _ in range(k)
    ]


@pytest.fixture(scope="module", params=[False, True], ids=["sessions", "interleaved"])
def big(tmp_path_factory, request):
    table = _stream(N, seed=11, interleave=request.param)
    home = Home(tmp_path_factory.mktemp("bounded"))
    with home.open("big", writable=True) as s:
        for lo in range(0, N, 1_000):
            s.append_messages(table.slice(lo, 1_000))
    s = home.open("big")
    yield s, _questions(random.Random(3), 12)
    s.close()


def _bounded(monkeypatch, cap: int) -> None:
    monkeypatch.setenv("SPEAKERFLOW_BOUNDED_RECALL_ABOVE", "0")
    monkeypatch.setenv("SPEAKERFLOW_BM25_CAP", str(cap))


def test_uncapped_bounded_recall_is_the_exact_recall(big, monkeypatch):
    s, questions = big
    view = GroupView.of(s)
    cfg = RecallConfig(pool=40)
    assert not is_large(view)  # 3,000 messages: the exact path by default
    contiguous = all(
        view.sessions[i] == view.sessions[i + 1] or view.sessions[i] not in view.sessions[i + 1 :]
        for i in range(N - 1)
    )
    assert session_rows(view)[2] is contiguous
    exact = [recall(view, q, cfg) for q in questions]
    _bounded(monkeypatch, N)
    assert is_large(view)
    for q, want in zip(questions, exact, strict=True):
        got = recall(view, q, cfg)
        assert np.count_nonzero(want.fused) > 40
        assert np.array_equal(got.fused, want.fused), q
        assert got.pool == want.pool, q
        assert set(got.channels) == set(want.channels)
        assert np.array_equal(got.channels["session"], want.channels["session"])


def test_uncapped_bounded_fallback_and_answers_are_the_exact_ones(big, monkeypatch):
    s, questions = big
    view = GroupView.of(s)
    cfg = QueryConfig(embedder="none")
    exact = [answer_question(s, q, cfg) for q in questions]
    fused = recall(view, questions[0], RecallConfig()).fused
    exact_fallback = {p: _fallback(view, fused, p, 3) for p in s.roster()}
    exact_roster = sorted(set(view.speakers))
    _bounded(monkeypatch, N)
    for p in s.roster():
        assert _fallback(view, fused, p, 3) == exact_fallback[p]
    assert any(exact_fallback.values())
    assert Messages(view).roster == exact_roster
    for q, want in zip(questions, exact, strict=True):
        got = answer_question(s, q, cfg)
        assert got.answer == want.answer and got.cited_ids() == want.cited_ids(), q
        assert [e.model_dump() for e in got.evidence] == [e.model_dump() for e in want.evidence]


def test_a_small_cap_scores_only_the_candidates_neighbourhoods(big, monkeypatch):
    s, questions = big
    view = GroupView.of(s)
    _bounded(monkeypatch, 20)
    order, sessions = np.argsort(view.session_of, kind="stable"), view.session_of
    for q in questions:
        rows, scores = bm25_top(view, q, 20)
        assert len(rows) <= 20 and np.all(scores > 0)
        res = recall(view, q, RecallConfig())
        scored = np.flatnonzero(res.fused > 0)
        near = (
            set(rows)
            | {int(r) for r in view.prev[rows] if r >= 0}
            | {int(r) for r in view.next[rows] if r >= 0}
        )
        in_sessions = set(order[np.isin(sessions[order], sessions[rows])].tolist())
        assert set(scored.tolist()) <= near | in_sessions
        assert set(res.pool) <= set(scored.tolist()) and len(res.pool) == min(40, len(scored))
        best = [r for r in res.pool if r in set(rows.tolist())]
        assert best, q  # the top BM25 candidates reach the pool


def test_dense_and_records_channels_fuse_the_same_on_the_bounded_path(store, monkeypatch):  # noqa: F811
    view = GroupView.of(store)
    emb = HashingEmbedder(64)
    cfg = RecallConfig(
        weights={"window": 1.0, "session": 0.75, "dense": 0.5, "dense_window": 0.5, "records": 0.25}
    )
    warm_message_embeddings(store, emb, cfg)
    questions = ["hotel near the river", "Where does Dev live?", "offsite city"]
    exact = [recall(view, q, cfg, emb) for q in questions]
    _bounded(monkeypatch, 100)
    for q, want in zip(questions, exact, strict=True):
        got = recall(view, q, cfg, emb)
        assert np.array_equal(got.fused, want.fused) and got.pool == want.pool, q


def test_speaker_index_codes_every_row(big):
    s, _ = big
    view = GroupView.of(s)
    index = speaker_index(view)
    assert [index.names[c] for c in index.codes] == list(view.speakers)
    assert index.code("nobody") == -1
    fused = np.linspace(0, 1, len(view))
    person = view.speakers[0]
    mine = [r for r in range(len(view)) if view.speakers[r] == person]
    assert fallback_rows(view, fused, person, 2) == sorted(mine, key=lambda r: -fused[r])[:2]


def test_hits_are_read_by_key_and_an_index_without_keys_still_answers(big, tmp_path):
    import tantivy

    from speakerflow.graphs.text_index import FILTER_FIELDS, TantivyIndex, doc_key

    s, questions = big
    keys, scores = s.search_keys(questions[0], 50)
    hits = s.search(questions[0], 50)
    assert keys == [doc_key(h.doc_id) for h in hits] and scores == [h.score for h in hits] and hits
    builder = tantivy.SchemaBuilder()  # the schema of an index made before the key field existed
    for name in FILTER_FIELDS:
        builder.add_text_field(name, stored=name == "doc_id", fast=True, tokenizer_name="raw")
    builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
    builder.add_date_field("ts", indexed=True, fast=True)
    tantivy.Index(builder.build(), path=str(tmp_path), reuse=True)
    old = TantivyIndex(tmp_path)
    old.add_columns(
        {"doc_id": ["a", "b"], "kind": ["message"] * 2, "text": ["river hotel", "cheap flights"]}
    )
    assert not old.keyed and old.search_keys("hotel") is None
    assert [h.doc_id for h in TantivyIndex(tmp_path, writable=False).search("hotel")] == ["a"]

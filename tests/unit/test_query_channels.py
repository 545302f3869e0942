"""System 1 dense windows, the System 2 records channel and per-row merge (hashing embedder)."""

import numpy as np
from test_query_path import CFG, store  # noqa: F401  (fixture)

from speakerflow.graphs import GroupStore
from speakerflow.ops.query.channels import RecallConfig
from speakerflow.ops.query.group_view import GroupView
from speakerflow.ops.query.recall import recall, warm_message_embeddings
from speakerflow.ops.query.record_view import record_channel
from speakerflow.ops.query.select import Selected, merge_rows, person_rows
from speakerflow.ops.text.embed import HashingEmbedder
from speakerflow.pipelines.query_path import QueryConfig, _recall_config, answer_question
from speakerflow.schemas import KnowledgeItem, Projection, to_table

LAYERS = ("per_speaker_core", "per_speaker_profile", "group_interaction", "group_insight")


def test_records_channel_reads_superseded_states_too():
    from test_query_path import _msgs, _record

    s = GroupStore("/nonexistent", "g", in_memory=True)
    s.append_messages(_msgs())
    records = [  # the head cites only the revising message (a capped chain)
        _record(
            "old", "Ben", "Ben", "prefers Lisbon, flights are cheap", ["m1"], 1, superseded_by="new"
        ),
        _record("new", "Ben", "Ben", "switched to the Ribeira hotel", ["m5"], 5, supersedes="old"),
    ]
    s.set_records_table(to_table(records, KnowledgeItem))
    view = GroupView.of(s)
    scores = record_channel(
        view, "prefers Lisbon, flights are cheap", HashingEmbedder(64), LAYERS, top=1
    )
    assert view.ids[int(np.argmax(scores))] == "m1" and np.count_nonzero(scores) == 1


def test_dense_window_embeds_each_message_with_its_session_neighbours(store):  # noqa: F811
    view = GroupView.of(store)
    assert view.window_rows(0, 1) == [0, 1] and view.window_rows(3, 1) == [2, 3]  # session edge
    assert view.window_rows(5, 2) == [4, 5, 6, 7]
    emb = HashingEmbedder(64)
    mat = view.window_matrix(emb, 1)
    assert mat.shape == (8, 64) and np.allclose(np.linalg.norm(mat, axis=1), 1.0, atol=1e-5)
    single = emb.encode(
        ["Ana: We need to choose a city for the offsite.\nBen: I prefer Lisbon, flights are cheap."]
    )[0]
    assert np.allclose(
        mat[0], single, atol=1e-6
    )  # "speaker: text" lines of the window, in time order
    cfg = RecallConfig(weights={"window": 1.0, "dense": 1.0, "dense_window": 1.0})
    assert warm_message_embeddings(store, emb, cfg) == 8
    res = recall(view, "hotel near the river", cfg, emb)
    assert "dense_window" in res.channels and view.ids[res.pool[0]] == "m5"


def test_records_channel_ranks_the_messages_records_rest_on(store):  # noqa: F811
    view = GroupView.of(store)
    emb = HashingEmbedder(64)
    scores = record_channel(view, "lives in Vienna for a new job", emb, LAYERS, top=1)
    assert view.ids[int(np.argmax(scores))] == "m6" and np.count_nonzero(scores) == 1
    assert not record_channel(view, "Vienna", emb, ("group_insight",)).any()  # layer filter
    cfg = QueryConfig(
        embedder="hashing", recall=RecallConfig(weights={"window": 1.0, "records": 0.5})
    )
    assert _recall_config(cfg.model_copy(update={"ablate": "s2"})).weights["records"] == 0.0
    assert (
        "group_interaction"
        not in _recall_config(cfg.model_copy(update={"ablate": "s2-group"})).record_layers
    )
    assert "m6" in answer_question(store, "Where does Dev live?", cfg).cited_ids(3)


def test_per_row_merge_puts_each_person_first_and_keeps_scores_ordered(store):  # noqa: F811
    view = GroupView.of(store)
    two = Projection(
        question="What do Ben and Dev prefer?", issue="prefer", rows=["Ben", "Dev"], tense="head"
    )
    assert person_rows(two, ["Ana", "Ben", "Chloe", "Dev"]) == ["Ben", "Dev"]
    one = Projection(question="What does Ben prefer?", issue="prefer", rows=["Ben"], tense="head")
    assert person_rows(one, ["Ana", "Ben"]) == []
    fused = np.array([0.9, 0.2, 0.8, 0.1, 0.7, 0.15, 0.05, 0.6])
    selected = [Selected(0, 0.9), Selected(2, 0.8), Selected(4, 0.7), Selected(7, 0.6)]
    merged = merge_rows(view, selected, fused, ["Ben", "Dev"], 1)
    assert [s.row for s in merged[:2]] == [1, 3]  # Ben's and Dev's best messages lead
    assert [s.row for s in merged[2:]] == [0, 2, 4, 7]
    assert [s.score for s in merged] == sorted((s.score for s in merged), reverse=True)
    cited = answer_question(store, "What do Ben and Dev each prefer?", CFG).cited_ids(4)
    assert {"m1", "m3"} <= set(cited) or {"m1", "m6"} <= set(cited)


def test_id_fusion_keeps_system1_hits_ahead_of_a_wide_record(store):  # noqa: F811
    from speakerflow.ops.query.compose import ComposeConfig, compose

    view = GroupView.of(store)
    selected = [Selected(r, 1.0 - r / 10) for r in (0, 1, 2, 3, 4)]
    wide = {
        "kind": "record",
        "row": "Ana",
        "text": "thread",
        "msg_ids": ["m7", "m6", "m5", "m2"],
        "score": 5.0,
        "speaker": "Ana",
        "ts": None,
        "entry_id": "r9",
        "history": False,
        "source": "Ana",
        "owner": "Ana",
    }
    proj = Projection(question="What about Ana?", issue="x", rows=["Ana"], tense="head")
    by_score = compose(view, selected, [wide], proj, ComposeConfig(merge="score")).cited_ids(5)
    assert by_score[:4] == [
        "m7",
        "m6",
        "m5",
        "m2",
    ]  # the record's ids first: System 1 hits pushed out
    fused = compose(view, selected, [wide], proj, ComposeConfig(id_s2_weight=0.25))
    ids = fused.cited_ids()
    assert ids[:2] == ["m0", "m2"]  # m2, found by both tracks, rises; S1's own order otherwise kept
    assert set(ids[:5]) >= {"m0", "m1", "m2", "m3"} and set(ids) == {f"m{i}" for i in range(8)}
    assert fused.evidence[0].msg_ids == ["m0"]


def test_protect_confident_keeps_system1_hits_ahead_of_record_lifts():
    from speakerflow.ops.query.channels import fuse, protect_confident, rank_of

    # six messages; System 1 ranks 0 > 1 > 2 > 3 > 4 > 5 on every channel; message 1 is also
    # the dense channel's single best, message 4 nobody's top 1; records lift 4 and 5 hard
    bm25 = np.array([6.0, 5.0, 4.0, 3.0, 2.0, 1.0])
    dense = np.array([0.5, 0.9, 0.4, 0.3, 0.2, 0.1])
    records = np.array([0.0, 0.0, 0.0, 0.0, 0.9, 0.8])
    channels = {"bm25": bm25, "dense": dense, "records": records}
    weights = {"bm25": 1.0, "dense": 1.0, "records": 5.0}
    fused = fuse(channels, weights)
    assert rank_of(fused)[4] < rank_of(fused)[1]  # unprotected: the record lift passes message 1
    held = protect_confident(channels, weights, fused, top=1)
    assert (
        rank_of(held)[1] < rank_of(held)[4] and rank_of(held)[0] < rank_of(held)[4]
    )  # confident hits stay ahead
    assert rank_of(held)[4] < rank_of(held)[2]  # the lift still reorders unconfident messages
    assert np.all(held <= fused) and np.array_equal(held[[0, 1]], fused[[0, 1]])
    # wider protection: everything in some channel's top 6 is confident, so nothing moves down
    s1 = fuse({k: v for k, v in channels.items() if k != "records"}, {**weights, "records": 0.0})
    assert np.array_equal(
        np.argsort(-protect_confident(channels, weights, fused, top=6)), np.argsort(-fused)
    )
    assert (
        protect_confident({"records": records}, {"records": 1.0}, records, top=3) is records
    )  # no System 1 hit
    assert s1.argmax() == 0


def test_question_kind_drives_the_records_weight(store):  # noqa: F811
    from speakerflow.ops.query.channels import query_weights
    from speakerflow.ops.query.project import question_kind

    assert question_kind("What books has John read?") == "aggregate"
    assert question_kind("How many games has John won?") == "aggregate"
    assert question_kind("What do both Ana and Ben like?") == "aggregate"
    assert (
        question_kind("Has Ngozi's cooking changed recently?") == "broad"
    )  # a change, not a gathering
    assert question_kind("What did the group decide about the venue?") == "broad"
    assert question_kind("Where does Dev live?") == "focused"
    cfg = RecallConfig(
        weights={"window": 1.0, "records": 0.25}, aggregate_weights={"records": 0.5, "dense": 1.0}
    )
    assert query_weights("What books has John read?", cfg) == (
        {"window": 1.0, "records": 0.5},
        "aggregate",
    )
    assert query_weights("Where does Dev live?", cfg)[0]["records"] == 0.25
    assert query_weights("What did the group decide about the venue?", cfg) == (
        {"window": 1.0, "records": 0.5},  # broad: the default broad_weights
        "broad",
    )
    assert (
        query_weights("Has Ngozi's cooking changed?", cfg.model_copy(update={"broad_weights": {}}))[
            0
        ]["records"]
        == 0.25
    )
    off = cfg.model_copy(
        update={"weights": {"window": 1.0, "records": 0.0}}
    )  # the s2 ablation stays off
    assert query_weights("What books has John read?", off)[0]["records"] == 0.0
    emb = HashingEmbedder(64)
    view = GroupView.of(store)
    full = RecallConfig(weights={"window": 1.0, "dense": 1.0, "records": 0.5})
    protected = recall(view, "Where does Dev live?", full, emb)
    free = recall(view, "Where does Dev live?", full.model_copy(update={"protect_top": 0}), emb)
    assert np.all(protected.fused <= free.fused + 1e-15)


def test_top_mask_is_rank_of_top_k_in_linear_time():
    from speakerflow.ops.query.channels import rank_of, top_mask

    rng = np.random.default_rng(0)
    for _ in range(50):
        scores = rng.integers(0, 4, size=30).astype(float)  # many ties and zeros
        for k in (1, 3, 10, 40):
            assert np.array_equal(top_mask(scores, k), (rank_of(scores) <= k) & (scores > 0))

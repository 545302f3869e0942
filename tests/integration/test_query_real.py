"""The query path on real stores (Kuzu + Tantivy), the rules Writer's records, and real MiniLM."""

import json

from speakerflow.cli import main
from speakerflow.ops.loaders import load
from speakerflow.pipelines.query_path import QueryConfig, answer_question
from speakerflow.pipelines.write_path import write_group
from speakerflow.settings import BUNDLED_SAMPLE


def _sample_store(home):
    [(gid, table)] = load(BUNDLED_SAMPLE, "jsonl", group="sample-team")
    store = home.open(gid, writable=True)
    store.append_messages(table)
    write_group(store, "rules", progress=False)
    return store


def test_dual_track_answers_on_tantivy_and_kuzu(home):
    with _sample_store(home) as store:
        assert store.records().num_rows > 0
        cfg = QueryConfig(embedder="hashing")
        decision = answer_question(store, "Where did the group decide to hold the offsite?", cfg)
        assert "s2-t05" in decision.cited_ids(5) and "Porto" in decision.context
        # the settling message answers: its speaker and its place (the picker may quote a clause)
        assert decision.answer.startswith("Ana") and "Porto" in decision.answer
        rollup = answer_question(store, "What does each person prefer for the offsite city?", cfg)
        assert {e.row for e in rollup.evidence[:4]} == {"Ana", "Ben", "Chloe", "Dev"}
        assert any(
            e.kind == "record" for e in rollup.evidence
        )  # System 2 records from the rules Writer
        for item in rollup.evidence:
            assert item.kind == "empty_row" or item.msg_ids  # every item rests on messages
        change = answer_question(store, "Where does Dev live now?", cfg)
        assert "s3-t00" in change.cited_ids(5)


def test_minilm_embeddings_are_cached_in_the_group_folder(home):
    with _sample_store(home) as store:
        r = answer_question(store, "Who takes the night train?", QueryConfig(embedder="minilm"))
        assert "s3-t05" in r.cited_ids(5)
        cache = list((store.root / "embeddings").glob("messages-labelled-minilm*.npz"))
        assert cache, "message embeddings are cached beside the group's store"


def test_ask_cli_prints_answer_projection_and_cited_messages(home, capsys):
    assert main(["demo", "--embedder", "hashing"]) == 0
    out = capsys.readouterr().out
    assert "Q (a group decision)" in out and "[s2-t05]" in out and "Porto" in out
    assert (
        main(
            ["ask", "sample-team", "What does Ben think of Ana?", "--json", "--embedder", "hashing"]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["projection"]["owner"] == "Ana" and data["projection"]["source"] == "Ben"
    assert any(c["msg_id"] == "s3-t07" for c in data["cited"])
    assert main(["ask", "no-such-group", "x"]) == 2

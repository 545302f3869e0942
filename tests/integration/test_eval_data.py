"""The evaluation on slices of the real data sets (skipped when ../shared/data is absent)."""

import json
import shutil

import pytest
from conftest import shared

from speakerflow.benchmarks.evaluate import run_eval
from speakerflow.benchmarks.qa_data import load_qa
from speakerflow.cli import main


def test_locomo_questions_resolve_as_documented():
    qa = load_qa(shared("locomo", "locomo10.json"), "locomo")
    assert len(qa.questions) == 1536
    assert qa.skipped == {"adversarial (category 5)": 446, "evidence does not resolve": 4}
    assert {q.category for q in qa.questions} == {
        "multi-hop",
        "temporal",
        "open-domain",
        "single-hop",
    }


@pytest.fixture
def one_network(tmp_path):
    src = sorted(shared("socialmem", "training").glob("social_grp_*.json"))[0]
    folder = tmp_path / "nets"
    folder.mkdir()
    shutil.copy(src, folder / src.name)
    return folder


@pytest.mark.slow
def test_eval_reports_every_system_on_a_network(one_network, tmp_path):
    reports = {
        s: run_eval(one_network, "socialmem", s, embedder="hashing")
        for s in ("bm25", "hybrid", "speakerflow")
    }
    n = reports["bm25"]["questions"]
    assert n >= 6
    for rep in reports.values():
        assert rep["questions"] == n
        assert set(rep["evidence_recall"]) == {"5", "10", "20"}
        assert all(0.0 <= v <= 1.0 for v in rep["evidence_recall"].values())
        assert (
            rep["evidence_recall"]["5"]
            <= rep["evidence_recall"]["10"]
            <= rep["evidence_recall"]["20"]
        )
        assert sum(c["questions"] for c in rep["by_category"].values()) == n
        assert rep["latency_ms"]["p50"] <= rep["latency_ms"]["p95"]
        assert rep["context_tokens"]["mean"] > 0
    assert reports["speakerflow"]["prepare_seconds"]["write"] > 0  # the rules Writer ran


@pytest.mark.slow
def test_eval_cli_writes_json_markdown_and_plot(one_network, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "eval",
                str(one_network),
                "--format",
                "socialmem",
                "--system",
                "bm25,speakerflow",
                "--ablate",
                "s2",
                "--embedder",
                "hashing",
                "--limit",
                "4",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    reports = json.loads(out.read_text())
    assert [r["system"] for r in reports] == ["bm25", "speakerflow", "speakerflow"]
    assert reports[2]["ablate"] == "s2" and reports[0]["questions"] == 4
    assert out.with_suffix(".png").stat().st_size > 1000
    assert "| speakerflow -s2 |" in out.with_suffix(".md").read_text()
    gain = reports[2]["vs_full"]  # what System 2 adds, paired with the full run's questions
    assert gain["questions"] == 4 and gain["groups"] == 1
    assert "vs_full" not in reports[1] and "-s2 vs the full system @10" in capsys.readouterr().out
    assert "what each ablated part adds" in out.with_suffix(".md").read_text()
    assert main(["eval", str(one_network)]) == 2  # --format missing: a clear error
    assert "--format" in capsys.readouterr().err


def test_eval_writer_dispatches_or_explains(tmp_path, capsys):
    assert main(["eval", "writer"]) == 2
    assert "usage" in capsys.readouterr().err


@pytest.mark.slow
def test_locomo_bm25_reproduces_the_flat_baseline_and_speakerflow_beats_it(tmp_path):
    qa = load_qa(shared("locomo", "locomo10.json"), "locomo")
    bm25 = run_eval(qa, "locomo", "bm25", home=tmp_path / "home")
    assert bm25["questions"] == 1536
    assert (
        0.48 <= bm25["evidence_recall"]["10"] <= 0.62
    )  # independently: 0.506 (no stemmer) - 0.550 (Porter)
    # the full path on one conversation, with the model-free hashing embedder (no MiniLM in this
    # test)
    qa.questions = [q for q in qa.questions if q.group == "conv-26"]
    qa.groups = [g for g in qa.groups if g[0] == "conv-26"]
    flat = run_eval(qa, "locomo", "bm25", home=tmp_path / "home")
    ours = run_eval(qa, "locomo", "speakerflow", home=tmp_path / "home", embedder="hashing")
    assert ours["evidence_recall"]["10"] > flat["evidence_recall"]["10"] + 0.05


def test_eval_groups_filter_reports_by_group_and_split(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "eval",
                str(shared("locomo", "locomo10.json")),
                "--format",
                "locomo",
                "--system",
                "bm25",
                "--groups",
                "conv-26,conv-44",
                "--home",
                str(tmp_path / "home"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rep = json.loads(out.read_text())
    assert rep["groups"] == ["conv-26", "conv-44"] and set(rep["by_group"]) == {
        "conv-26",
        "conv-44",
    }
    assert rep["questions"] == sum(g["questions"] for g in rep["by_group"].values())
    assert rep["splits"]["dev"]["groups"] == ["conv-26"] and rep["splits"]["test"]["groups"] == [
        "conv-44"
    ]
    assert "dev half" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "home").iterdir() if p.is_dir()) >= [
        "conv-26",
        "conv-44",
    ]
    assert (
        main(
            [
                "eval",
                str(shared("locomo", "locomo10.json")),
                "--format",
                "locomo",
                "--system",
                "bm25",
                "--groups",
                "conv-99",
            ]
        )
        == 2
    )

"""Smoke run of the Stage A harness (2 seeds) and the injection benchmark on a small graph."""

import pytest

from speakerflow.benchmarks.harness import MEASURED, NAMES, run
from speakerflow.benchmarks.harness.injection_bench import run as injection

KEYS = {
    "hits",
    "gold",
    "stale_usage",
    "rumour_use",
    "context_precision",
    "traceability",
    "tokens",
    "retrieval_latency_ms",
    "quality_equal",
    "quality_paper",
    "latency_ms_modelled",
    "per_round",
}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_harness_two_seeds(tmp_path):
    rep = run(seeds=2, out=tmp_path / "report.json", episodes=30, workers=1, injection_edges=0)
    for name in NAMES:
        assert KEYS <= set(rep[name]) and {"p50", "p95"} <= set(rep[name]["retrieval_latency_ms"])
        assert set(rep[name]["per_round"]) == {"1", "2", "3", "4"}
    assert rep["InKH"]["stale_usage"] < rep["KH-NoInv"]["stale_usage"]
    assert rep["InKH"]["traceability"] >= rep["SimpleMemory"]["traceability"] - 1e-9
    assert rep["ModelOnly"]["context_precision"] == 0.0 and rep["ModelOnly"]["hits"] == 0.0
    assert len({rep[n]["gold"] for n in NAMES}) == 1  # the same episodes for every baseline
    for block in (rep["headline"]["vs_all"], rep["headline"]["vs_memory"]):
        assert set(block["measured"]) == {*MEASURED, "retrieval_p50_ms"}
        assert sorted(block["leads"] + block["ties"] + block["trails"]) == sorted(block["measured"])
    # the plots go next to --out, named after it
    assert (tmp_path / "report_frontier.png").stat().st_size > 0 and (
        tmp_path / "report_stale_by_round.png"
    ).exists()


@pytest.mark.timeout(120)
def test_injection_respects_budget_on_every_event():
    rep = injection(edges=3000, events=100, budget=300)
    assert rep["events_over_budget"] == 0 and rep["max_tokens"] <= 300

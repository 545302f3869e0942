"""``benchmarks.write_cost`` at a small size: both groups get the same messages, and the
report carries each group's CPU per write and their ratio (timings are not asserted)."""

from speakerflow.benchmarks.write_cost import run


def test_write_cost_small():
    report = run(appends=3, embedder="hashing")
    assert report["messages_at_end"] == {"cached": 32 + 15, "reread": 32 + 15}
    per = report["cpu_ms_per_write"]
    assert per["cached"] > 0 and per["reread"] > 0
    assert report["ratio_cached_to_reread"] == round(per["cached"] / per["reread"], 3)

"""A harness report as printed rows and sentences (the CLI renders the rows as a table).

The table's headline columns are measured; the two quality scores and the modelled latency
follow, labelled as derived. :func:`headline_lines` says in words where InKH leads, ties and
trails the best other baseline, and the best baseline with memory, on each measured figure.
"""

from __future__ import annotations

from .baselines import NAMES

#: (column, report key) in print order: measured first, then derived
COLUMNS = (
    ("baseline", None),
    ("hits/ep", "hits"),
    ("stale", "stale_usage"),
    ("rumour", "rumour_use"),
    ("precision", "context_precision"),
    ("trace", "traceability"),
    ("tokens", "tokens"),
    ("retr p50 ms", "p50"),
    ("retr p95 ms", "p95"),
    ("quality (equal)", "quality_equal"),
    ("quality (paper)", "quality_paper"),
    ("latency ms (modelled)", "latency_ms_modelled"),
)
LABEL = {
    "hits": "gold hits per episode",
    "stale_usage": "stale usage",
    "rumour_use": "rumour use",
    "context_precision": "context precision",
    "traceability": "traceability",
    "tokens": "context tokens",
    "retrieval_p50_ms": "retrieval p50",
}


def table_rows(report: dict) -> tuple[list[str], list[dict]]:
    """Column names and one row per baseline of a harness report."""
    rows = []
    for n in NAMES:
        if n not in report:
            continue
        r = report[n]
        row = {"baseline": n}
        for col, key in COLUMNS[1:]:
            row[col] = r["retrieval_latency_ms"][key] if key in ("p50", "p95") else r.get(key)
        rows.append(row)
    return [c for c, _ in COLUMNS], rows


def _one(metric: str, c: dict) -> str:
    p = f", Wilcoxon p {c['wilcoxon_p']:.2g}" if c.get("wilcoxon_p") is not None else ""
    return (
        f"{LABEL.get(metric, metric)} {c['InKH']:.4g} vs {c['best_other']} "
        f"{c['best_other_value']:.4g} ({c['difference']:+.4g}{p})"
    )


def headline_lines(h: dict) -> list[str]:
    """Where InKH leads, ties and trails (measured) against every other baseline and against
    those with memory, then the two quality scores, labelled."""
    out = [
        f"{h['seeds']} seeds, holdout {h['holdout']}: {h['gold_per_episode']} gold slots per "
        f"episode (the same episodes for every baseline); extraction recall "
        f"{h['extraction_recall']}"
    ]
    for key, whom in (("vs_all", "the best other baseline"), ("vs_memory", "the best with memory")):
        block = h[key]
        for verdict in ("leads", "ties", "trails"):
            if block[verdict]:
                parts = "; ".join(_one(m, block["measured"][m]) for m in block[verdict])
                out.append(f"InKH {verdict} {whom} on: {parts}")
    for key, what in (
        ("quality_equal", "quality, equal coefficients (derived from hits, misses and stale use)"),
        ("quality_paper", "quality, the paper's formula (per-baseline coefficients favour InKH)"),
    ):
        c = h[key]
        out.append(
            f"{what}: InKH {c['InKH']} vs {c['best_other']} {c['best_other_value']} "
            f"({c['difference']:+g})"
        )
    return out

"""The figure of a ``speakerflow bench scale`` report."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plot(report: dict[str, Any], path: str | Path) -> Path | None:
    """Log-log cost against size: one panel per cost, one line per shape."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is a core dependency
        return None
    panels = [
        ("ingest µs / message", lambda r: 1e6 / r["ingest_messages_per_s"]),
        ("rules Writer µs / message", lambda r: 1e6 / r["writer_messages_per_s"]),
        ("bytes on disk / message", lambda r: r["bytes_per_message"]),
        ("peak RSS (MB)", lambda r: r["peak_rss_mb"]),
        ("rules query p50 / p95 (ms)", lambda r: r["query_p50_ms"]),
        ("dense query p50 (ms): encode + channel", lambda r: r.get("dense_query_p50_ms")),
        ("injection p50 (ms)", lambda r: r.get("injection_p50_ms")),
    ]
    fig, axes = plt.subplots(2, 4, figsize=(16, 7))
    for ax, (title, get) in zip(axes.flat, panels, strict=False):
        for shape, style in (("one", "o-"), ("many", "s--")):
            rows = [r for r in report["sizes"] if r.get("shape") == shape and get(r)]
            if rows:
                ax.plot(
                    [r["messages"] for r in rows],
                    [get(r) for r in rows],
                    style,
                    label="one group" if shape == "one" else "groups of 1,000",
                )
            if title.startswith("dense"):
                for key, lab in (
                    ("dense_channel_p50_ms", "channel only"),
                    ("brute_top50_p50_ms", "brute-force top-50"),
                ):
                    rows = [r for r in report["sizes"] if r.get("shape") == shape and r.get(key)]
                    if rows:
                        ax.plot(
                            [r["messages"] for r in rows],
                            [r[key] for r in rows],
                            ":",
                            marker=".",
                            label=lab,
                        )
            if title.startswith("rules query"):
                rows = [
                    r for r in report["sizes"] if r.get("shape") == shape and r.get("query_p95_ms")
                ]
                if rows:
                    ax.plot(
                        [r["messages"] for r in rows],
                        [r["query_p95_ms"] for r in rows],
                        ":",
                        alpha=0.6,
                        label=f"p95 ({shape})",
                    )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("messages")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:  # a panel with no measured series has no legend
            ax.legend(fontsize=7)
    axes.flat[-1].axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)

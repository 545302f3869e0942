"""PNG plots of measured figures: gold hits against context tokens, and stale usage by round."""

from __future__ import annotations

from pathlib import Path


def plot(report: dict, names, out_dir: Path, prefix: str = "") -> list[Path]:
    """Two PNGs in ``out_dir``, named ``<prefix>frontier.png`` (gold hits per episode against
    context tokens) and ``<prefix>stale_by_round.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for n in names:
        r = report[n]
        ax.scatter(r["tokens"], r["hits"])
        ax.annotate(n, (r["tokens"], r["hits"]), fontsize=8)
    ax.set_xlabel("context tokens per episode (measured)")
    ax.set_ylabel("gold hits per episode (measured)")
    ax.set_title("Gold hits against context size")
    ax.grid(True)
    p1 = out_dir / f"{prefix}frontier.png"
    fig.tight_layout()
    fig.savefig(p1, dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, n in enumerate(names):  # distinct markers/widths: several baselines share the zero line
        rounds = sorted(report[n]["per_round"], key=int)
        ax.plot(
            [int(r) for r in rounds],
            [report[n]["per_round"][r]["stale_usage"] for r in rounds],
            marker="os^Dvx"[i % 6],
            linewidth=3.0 if n == "InKH" else 1.2,
            markersize=9 - i,
            label=n,
        )
    ax.set_xlabel("round")
    ax.set_ylabel("stale-knowledge usage (share of episodes)")
    ax.set_xticks([1, 2, 3, 4])
    ax.legend(fontsize=8)
    ax.grid(True)
    p2 = out_dir / f"{prefix}stale_by_round.png"
    fig.tight_layout()
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    return [p1, p2]

"""The report side of the judge-free evaluation: what an ablated part adds (resampled by
group), the Markdown summary (overall, by category, by conversation/network, the two LoCoMo
halves), the recall@k plot and the files beside ``--out``.

Every figure these print is a dev figure when the data is LoCoMo or the SocialMemBench
training networks: the query path was tuned on them, both LoCoMo halves included.
"""

from __future__ import annotations

import json
from pathlib import Path

from .percentiles import pct


def ablation_gain(
    full: dict,
    ablated: dict,
    k: str = "10",
    threshold: float = 0.03,
    resamples: int = 10_000,
    seed: int = 0,
) -> dict:
    """What the part ``ablated`` switches off adds to ``full`` at recall@``k``, and how sure
    that is for groups not seen: the questions are paired by id, the gain is ``full -
    ablated`` per question, and a cluster bootstrap draws as many groups as there are, with
    replacement, ``resamples`` times (seeded: the same reports give the same figures).
    Returns the gain, its 5th/50th/95th percentiles over the draws, the share of draws with
    a gain of at least ``threshold`` and above 0, and the gain per group."""
    import random

    other = {q["qid"]: q for q in ablated.get("per_question", [])}
    rows: dict[str, list[float]] = {}
    for q in full.get("per_question", []):
        if q["qid"] in other:
            gain = q["recall"][k] - other[q["qid"]]["recall"][k]
            rows.setdefault(q["group"], []).append(gain)
    if not rows:
        raise ValueError("no question is in both reports")
    groups = sorted(rows)

    def mean(gs: list[str]) -> float:
        vals = [v for g in gs for v in rows[g]]
        return sum(vals) / len(vals)

    rng = random.Random(seed)
    draws = sorted(mean([rng.choice(groups) for _ in groups]) for _ in range(resamples))

    return {
        "k": int(k),
        "gain": round(mean(groups), 4),
        "groups": len(groups),
        "questions": sum(len(v) for v in rows.values()),
        "percentiles": {"5": pct(draws, 5, 4), "50": pct(draws, 50, 4), "95": pct(draws, 95, 4)},
        "threshold": threshold,
        "share_at_least_threshold": round(sum(d >= threshold for d in draws) / len(draws), 4),
        "share_above_zero": round(sum(d > 0 for d in draws) / len(draws), 4),
        "by_group": {g: {"questions": len(rows[g]), "gain": round(mean([g]), 4)} for g in groups},
        "resamples": resamples,
    }


def ablation_line(report: dict) -> str | None:
    """One line on an ablated report's ``vs_full`` (``None`` without one)."""
    g = report.get("vs_full")
    if not g:
        return None
    pc = g["percentiles"]
    return (
        f"-{report['ablate']} vs the full system @{g['k']}: the part adds {g['gain']:+.3f} "
        f"({g['questions']} questions, {g['groups']} groups; over new groups, 90% of draws "
        f"{pc['5']:+.3f} .. {pc['95']:+.3f}, at least {g['threshold']:+.2f} in "
        f"{g['share_at_least_threshold']:.0%}, above 0 in {g['share_above_zero']:.0%})"
    )


def label(report: dict) -> str:
    """``system`` or ``system -ablation`` (the name a report is shown under)."""
    return report["system"] + (f" -{report['ablate']}" if report.get("ablate") else "")


def markdown_summary(reports: list[dict]) -> str:
    """A Markdown table of several reports side by side, with recall@10 per category and per
    conversation/network, what each ablated part adds, and the LoCoMo halves."""
    ks = sorted({int(b) for r in reports for b in r["evidence_recall"]})
    lines = _overall(reports, ks) + _by_category(reports) + _by_group(reports)
    gains = [line for r in reports if (line := ablation_line(r))]
    if gains:
        lines += ["", "what each ablated part adds (paired by question, resampled by group):", ""]
        lines += [f"- {line}" for line in gains]
    splits = [name for name in ("dev", "test") if any(name in r.get("splits", {}) for r in reports)]
    if splits:
        lines += [
            "",
            "The two halves below are both dev data (the query path was tuned looking at both):",
            "their difference shows how much recall moves between conversations.",
        ]
    for name in splits:
        lines += _split(reports, name, ks)
    return "\n".join(lines) + "\n"


def _table(columns: list[str]) -> list[str]:
    """The header and rule of a table of the systems with these columns."""
    return ["| system | " + " | ".join(columns) + " |", "|" + "---|" * (len(columns) + 1)]


def _overall(reports: list[dict], ks: list[int]) -> list[str]:
    """Recall at each budget, token-F1, latency and context tokens per system."""
    head = (
        "| system | questions | "
        + " | ".join(f"recall@{b}" for b in ks)
        + " | token-F1 | p50 ms | p95 ms | ctx tokens |"
    )
    lines = [head, "|" + "---|" * (len(ks) + 6)]
    for r in reports:
        rec = " | ".join(f"{r['evidence_recall'].get(str(b), 0):.3f}" for b in ks)
        lines.append(
            f"| {label(r)} | {r['questions']} | {rec} | {r['token_f1']:.3f} | "
            f"{r['latency_ms']['p50']:.1f} | "
            f"{r['latency_ms']['p95']:.1f} | {r['context_tokens']['mean']:.0f} |"
        )
    return lines


def _by_category(reports: list[dict]) -> list[str]:
    """Recall@10 per question category (the first report's question counts)."""
    cats = sorted({c for r in reports for c in r["by_category"]})
    lines = [
        "",
        "recall@10 by category:",
        "",
        *_table(
            [f"{c} ({reports[0]['by_category'].get(c, {}).get('questions', 0)})" for c in cats]
        ),
    ]
    for r in reports:
        lines.append(
            f"| {label(r)} | "
            + " | ".join(
                f"{r['by_category'].get(c, {}).get('evidence_recall', {}).get('10', 0):.3f}"
                for c in cats
            )
            + " |"
        )
    return lines


def _by_group(reports: list[dict]) -> list[str]:
    """Recall@10 per conversation/network ('-' where a report has none); nothing without
    groups."""
    groups = list(dict.fromkeys(g for r in reports for g in r.get("by_group", {})))
    if not groups:
        return []
    g0 = reports[0].get("by_group", {})
    lines = [
        "",
        "recall@10 by conversation/network:",
        "",
        *_table([f"{g} ({g0.get(g, {}).get('questions', 0)})" for g in groups]),
    ]
    for r in reports:
        per = r.get("by_group", {})
        lines.append(
            f"| {label(r)} | "
            + " | ".join(
                f"{per[g]['evidence_recall'].get('10', 0):.3f}" if g in per else "-" for g in groups
            )
            + " |"
        )
    return lines


def _split(reports: list[dict], name: str, ks: list[int]) -> list[str]:
    """One half (``dev`` / ``test``): recall at each budget and recall@10 per category, for
    the reports that have it."""
    part = [r for r in reports if name in r.get("splits", {})]
    sp0 = part[0]["splits"][name]
    scats = sorted({c for r in part for c in r["splits"][name]["by_category"]})
    lines = [
        "",
        f"{name} half ({', '.join(sp0['groups'])}; {sp0['questions']} questions):",
        "",
        "| system | "
        + " | ".join(f"recall@{b}" for b in ks)
        + " | "
        + " | ".join(
            f"{c} @10 ({sp0['by_category'].get(c, {}).get('questions', 0)})" for c in scats
        )
        + " |",
        "|" + "---|" * (len(ks) + len(scats) + 1),
    ]
    for r in part:
        sp = r["splits"][name]
        lines.append(
            f"| {label(r)} | "
            + " | ".join(f"{sp['evidence_recall'].get(str(b), 0):.3f}" for b in ks)
            + " | "
            + " | ".join(
                f"{sp['by_category'].get(c, {}).get('evidence_recall', {}).get('10', 0):.3f}"
                for c in scats
            )
            + " |"
        )
    return lines


def plot_recall(reports: list[dict], path) -> Path:
    """One PNG: recall@k curves, one line per report."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for r in reports:
        ks = sorted(int(b) for b in r["evidence_recall"])
        ax.plot(ks, [r["evidence_recall"][str(b)] for b in ks], marker="o", label=label(r))
    ax.set_xlabel("budget B (distinct cited messages)")
    ax.set_ylabel("evidence recall@B")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.set_title(f"{reports[0].get('format', '')}: evidence recall")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_outputs(reports: dict | list[dict], out) -> dict[str, Path]:
    """Write the report JSON (one report, or a list), ``.md`` summary and ``.png`` plot beside
    it."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    many = reports if isinstance(reports, list) else [reports]
    out.write_text(json.dumps(reports, indent=1, default=str) + "\n")
    md = out.with_suffix(".md")
    md.write_text(markdown_summary(many))
    png = plot_recall(many, out.with_suffix(".png"))
    return {"json": out, "md": md, "png": png}

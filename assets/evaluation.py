"""Evaluation reports as assets: LoCoMo and SocialMemBench evidence recall, and the InKH
harness benchmark, each with its PNG plot shown in the UI.

Reports are written under ``<home>/reports/<asset>/``. The evaluation ingests its data
into a home of its own, so these assets never touch the groups' stores.
"""

import time
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from speakerflow.pipelines import constants as C
from speakerflow.pipelines.resources import StoreResource

from .common import EVALUATION, png_markdown, report_metadata


class EvalConfig(dg.Config):
    """Which data and which systems; every system runs in the same process, side by side."""

    data: str = Field(default="", description="Data file or folder; empty = the shared data set")
    systems: list[str] = Field(
        default_factory=lambda: ["bm25", "speakerflow"],
        description="Systems to compare (the first is the baseline)",
    )
    k: list[int] = Field(default_factory=lambda: [5, 10, 20])
    embedder: str = Field(
        default="minilm", description="minilm | hashing | none (speakerflow's dense recall)"
    )
    limit: int = Field(default=0, ge=0, description="Evaluate only the first N questions (0 = all)")


def run_reports(
    name: str, data: str, fmt: str, config: EvalConfig, out_dir: Path
) -> dict[str, Any]:
    """Run ``run_eval`` for each system of ``config``; write the side-by-side summary and plot.

    Returns ``{"reports": {system: report}, "files": {"json", "md", "png"}}``.
    """
    from speakerflow.benchmarks.evaluate import run_eval, write_outputs

    if not Path(data).exists():
        raise dg.Failure(f"{name}: data {data} is absent; set config 'data' to the file or folder")
    reports = {}
    for system in config.systems:
        reports[system] = run_eval(
            data,
            fmt,
            system,
            k=tuple(config.k),
            out=str(out_dir / f"{system}.json"),
            embedder=config.embedder,
            limit=config.limit or None,
        )
    files = write_outputs(list(reports.values()), out_dir / "comparison.json")
    return {"reports": reports, "files": {k: str(v) for k, v in files.items()}}


def eval_metadata(result: dict[str, Any], seconds: float) -> dict[str, Any]:
    """Each system's top-level numbers side by side, the comparison plot and summary."""
    meta: dict[str, Any] = {}
    for system, rep in result["reports"].items():
        for key, value in rep.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                meta[f"{system}/{key}"] = value
    files = result["files"]
    if Path(files.get("png", "")).exists():
        meta["plot"] = png_markdown(files["png"], "evidence recall@k per system")
        meta["plot_path"] = dg.MetadataValue.path(files["png"])
    if Path(files.get("md", "")).exists():
        meta["summary"] = dg.MetadataValue.md(Path(files["md"]).read_text(encoding="utf-8")[:20000])
    meta["report_path"] = dg.MetadataValue.path(files.get("json", ""))
    meta["systems"] = dg.MetadataValue.json(list(result["reports"]))
    meta["seconds"] = round(seconds, 2)
    return meta


def _eval_asset(name: str, fmt: str, default_data: str, description: str) -> dg.AssetsDefinition:
    @dg.asset(
        name=name, group_name=EVALUATION, kinds={"python", "matplotlib"}, description=description
    )
    def _asset(
        context: dg.AssetExecutionContext, config: EvalConfig, store: StoreResource
    ) -> dg.MaterializeResult:
        start = time.perf_counter()
        result = run_reports(
            name, config.data or default_data, fmt, config, store.subdir(C.REPORTS_DIRNAME, name)
        )
        return dg.MaterializeResult(metadata=eval_metadata(result, time.perf_counter() - start))

    return _asset


locomo_eval_report = _eval_asset(
    "locomo_eval_report",
    "locomo",
    C.LOCOMO_PATH,
    "LoCoMo evidence recall@k per system (bm25 baseline vs speakerflow), with the recall plot.",
)
socialmem_eval_report = _eval_asset(
    "socialmem_eval_report",
    "socialmem",
    C.SOCIALMEM_PATH,
    "SocialMemBench evidence recall@k per system (bm25 baseline vs speakerflow), with the recall "
    "plot.",
)


class HarnessConfig(dg.Config):
    """Size of the controlled InKH benchmark (defaults: the full suite)."""

    seeds: int = Field(default=24, gt=0)
    rounds: int = Field(default=4, gt=0)
    episodes: int = Field(default=80, gt=0)
    injection_edges: int = Field(default=100_000, ge=0)


@dg.asset(group_name=EVALUATION, kinds={"python", "matplotlib"})
def harness_report(
    context: dg.AssetExecutionContext, config: HarnessConfig, store: StoreResource
) -> dg.MaterializeResult:
    """InKH controlled benchmark: six configurations side by side, with its plots."""
    from speakerflow.benchmarks.harness import run

    start = time.perf_counter()
    out = store.subdir(C.REPORTS_DIRNAME, "harness_report") / "report.json"
    report = dict(
        run(
            seeds=config.seeds,
            out=str(out),
            rounds=config.rounds,
            episodes=config.episodes,
            injection_edges=config.injection_edges,
        )
    )
    meta = report_metadata(report)
    meta["seconds"] = round(time.perf_counter() - start, 2)
    return dg.MaterializeResult(metadata=meta)

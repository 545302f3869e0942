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

from .common import EVALUATION, report_metadata, require


class EvalConfig(dg.Config):
    """Which data and which systems; every system runs in the same process, side by side."""

    data: str = Field(default="", description="Data file or folder; empty = the shared data set")
    systems: list[str] = Field(default_factory=lambda: ["bm25", "speakerflow"],
                               description="Systems to compare (the first is the baseline)")
    k: list[int] = Field(default_factory=lambda: [5, 10, 20])


def run_reports(name: str, data: str, fmt: str, config: EvalConfig, out_dir: Path) -> dict[str, Any]:
    """Run ``run_eval`` for each system of ``config`` and gather recall@10 side by side."""
    run_eval = require("speakerflow.benchmarks.evaluate", "run_eval", "the evaluation (query path)")
    if not Path(data).exists():
        raise dg.Failure(f"{name}: data {data} is absent; set config 'data' to the file or folder")
    reports = {}
    for system in config.systems:
        out = out_dir / f"{system}.json"
        reports[system] = run_eval(data, fmt, system, k=tuple(config.k), out=str(out), home=None)
    return reports


def eval_metadata(reports: dict[str, dict[str, Any]], seconds: float) -> dict[str, Any]:
    """The last system's report (numbers, plot) plus each system's top-level numbers."""
    systems = list(reports)
    meta = report_metadata(reports[systems[-1]])
    for system, rep in reports.items():
        for key, value in rep.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                meta[f"{system}/{key}"] = value
    meta["systems"] = dg.MetadataValue.json(systems)
    meta["seconds"] = round(seconds, 2)
    return meta


def _eval_asset(name: str, fmt: str, default_data: str, description: str) -> dg.AssetsDefinition:
    @dg.asset(name=name, group_name=EVALUATION, kinds={"python", "matplotlib"}, description=description)
    def _asset(context: dg.AssetExecutionContext, config: EvalConfig, store: StoreResource) -> dg.MaterializeResult:
        start = time.perf_counter()
        reports = run_reports(name, config.data or default_data, fmt, config, store.subdir(C.REPORTS_DIRNAME, name))
        return dg.MaterializeResult(metadata=eval_metadata(reports, time.perf_counter() - start))

    return _asset


locomo_eval_report = _eval_asset(
    "locomo_eval_report", "locomo", C.LOCOMO_PATH,
    "LoCoMo evidence recall@k per system (bm25 baseline vs speakerflow), with the recall plot.")
socialmem_eval_report = _eval_asset(
    "socialmem_eval_report", "socialmem", C.SOCIALMEM_PATH,
    "SocialMemBench evidence recall@k per system (bm25 baseline vs speakerflow), with the recall plot.")


class HarnessConfig(dg.Config):
    """Episodes of the controlled InKH benchmark."""

    seeds: int = Field(default=24, gt=0)


@dg.asset(group_name=EVALUATION, kinds={"python", "matplotlib"})
def harness_report(context: dg.AssetExecutionContext, config: HarnessConfig,
                   store: StoreResource) -> dg.MaterializeResult:
    """InKH controlled benchmark: six configurations side by side, with its plots."""
    run = require("speakerflow.benchmarks.harness", "run", "the InKH harness benchmark")
    start = time.perf_counter()
    out = store.subdir(C.REPORTS_DIRNAME, "harness_report") / "report.json"
    report = dict(run(seeds=config.seeds, out=str(out)))
    meta = report_metadata(report)
    meta["seconds"] = round(time.perf_counter() - start, 2)
    return dg.MaterializeResult(metadata=meta)

"""Many groups through Dagster: ``speakerflow bench backfill --partitions 200 --out r.json``.

The same ``N`` small groups (``--messages`` each, synthetic multi-party chat from
:func:`speakerflow.benchmarks.scale.synthetic_stream`) are ingested three ways, each into a
fresh store home, and timed end to end:

* ``cli`` - a sequential loop, one ``speakerflow ingest <group>.jsonl --writer rules``
  process per group (what a shell ``for`` loop does);
* ``multiprocess`` - a real Dagster backfill: the groups are added as ``groups`` partitions,
  a partition backfill of ``ingest_job`` is launched the way the UI launches one (the
  ``launchPartitionBackfill`` GraphQL mutation, through ``dagster-graphql``), and
  ``dagster-daemon``'s backfill daemon submits its runs to a ``QueuedRunCoordinator``
  (``--concurrency`` runs at a time): one run per ``--partitions-per-run`` groups, the
  ingest assets' ``BackfillPolicy``; each run executes on the shipped multiprocess executor
  (one process per step);
* ``celery`` - the same backfill of ``ingest_job`` from ``assets/celery_definitions.py``:
  each run's steps go through a redis-server broker to two Celery workers
  (``--celery-workers``, one process each).

The clock runs from the backfill's submission (daemon, workers and redis already up) to the
end of the last run. The report gives, per mode, total wall seconds, runs per minute,
groups (partitions) per minute, run seconds p50/p95 (Dagster's run stats) and checks that
every group holds its ``--messages`` messages and the same derived records as the CLI
loop.

The benchmark starts ``dagster``, ``dagster-daemon``, ``redis-server`` and ``celery``
as child processes: it never imports the assets layer (the import layers put benchmarks
below it), it names code locations by module.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .backfill_dagster import BIN, run_dagster
from .percentiles import pct

MODES = ("cli", "multiprocess", "celery")


def write_groups(folder: Path, partitions: int, messages: int, seed: int = 11) -> list[str]:
    """``partitions`` JSONL files ``bf0000.jsonl`` ... of ``messages`` messages each (group id
    on every line); returns the group ids."""
    from speakerflow.benchmarks.scale import synthetic_stream

    folder.mkdir(parents=True, exist_ok=True)
    rows = synthetic_stream(
        partitions * messages, shape="one", seed=seed
    ).to_pylist()  # one stream, cut in groups
    groups = []
    for i in range(partitions):
        gid = f"bf{i:04d}"
        chunk = rows[i * messages : (i + 1) * messages]
        ids = {r["msg_id"] for r in chunk}
        with (folder / f"{gid}.jsonl").open("w", encoding="utf-8") as fh:
            for row in chunk:
                row = {
                    **row,
                    "group_id": gid,
                    "ts": row["ts"].isoformat().replace("+00:00", "Z"),
                    "reply_to": row["reply_to"] if row["reply_to"] in ids else None,
                }
                fh.write(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n")
        groups.append(gid)
    return groups


def store_summary(home: Path, groups: list[str]) -> dict[str, dict[str, int]]:
    """Messages and derived records per group of ``home`` (read-only opens)."""
    from speakerflow.graphs import Home

    out = {}
    h = Home(home)
    stored = set(h.groups())
    for g in groups:
        if g not in stored:
            out[g] = {"messages": 0, "records": 0}
            continue
        with h.open(g) as store:
            out[g] = {"messages": store.messages().num_rows, "records": store.records().num_rows}
    return out


# -- the sequential CLI loop ---------------------------------------------------------------------
def run_cli(
    src: Path,
    home: Path,
    groups: list[str],
    log: Callable[[str], None],
    timeout_s: float = float("inf"),
) -> dict[str, Any]:
    env = {
        k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"
    }  # plain CLI: no Dagster instance
    per: list[float] = []
    failures = []
    timed_out = False
    start = time.perf_counter()
    for i, g in enumerate(groups):
        if time.perf_counter() - start > timeout_s:
            log(f"cli: timeout: {i}/{len(groups)} groups in {timeout_s:.0f}s")
            timed_out = True
            break
        t0 = time.perf_counter()
        proc = subprocess.run(
            [
                str(BIN / "speakerflow"),
                "ingest",
                str(src / f"{g}.jsonl"),
                "--format",
                "jsonl",
                "--writer",
                "rules",
                "--home",
                str(home),
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        per.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            failures.append({"group": g, "error": proc.stderr[-500:]})
        if (i + 1) % 10 == 0 or i + 1 == len(groups):
            log(f"cli: {i + 1}/{len(groups)} groups, {time.perf_counter() - start:.0f}s")
    wall = time.perf_counter() - start
    return {
        "wall_s": round(wall, 2),
        "runs": len(per),
        "partitions_done": len(per) - len(failures),
        "failed": len(failures),
        "timed_out": timed_out,
        "runs_per_minute": round(len(per) / wall * 60, 2),
        "partitions_per_minute": round((len(per) - len(failures)) / wall * 60, 2),
        "run_s_p50": pct(per, 50),
        "run_s_p95": pct(per, 95),
        "failures": failures[:5],
    }


# -- Dagster: instance, daemon, backfill ----------------------------------------------------------


def run(
    partitions: int = 200,
    messages: int = 50,
    modes: tuple[str, ...] = MODES,
    concurrency: int = 2,
    celery_workers: int = 2,
    out: str | Path | None = None,
    workdir: str | Path | None = None,
    seed: int = 11,
    timeout_s: float = 7200,
    log: Callable[[str], None] = lambda _: None,
    partitions_per_run: int | None = None,
) -> dict[str, Any]:
    """Write ``partitions`` groups of ``messages`` messages, backfill them once per mode and
    compare each mode's stores with the CLI loop's; the report (also written to ``out``
    after each mode)."""
    bad = [m for m in modes if m not in MODES]
    if partitions_per_run is not None and partitions_per_run < 1:
        raise ValueError(f"partitions_per_run must be >= 1, got {partitions_per_run}")
    if bad:
        raise ValueError(f"unknown mode(s) {bad}: choose from {', '.join(MODES)}")
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="sf-backfill-")
        workdir = tmp.name
    work = Path(workdir)
    saved_dh = os.environ.get("DAGSTER_HOME")
    try:
        src = work / "groups"
        groups = write_groups(src, partitions, messages, seed=seed)
        report: dict[str, Any] = {
            "partitions": partitions,
            "messages_per_group": messages,
            "modes": {},
            "cpus": os.cpu_count(),
            "load_avg_before": [round(x, 2) for x in os.getloadavg()],
            "command": f"speakerflow bench backfill --partitions {partitions} --messages "
            f"{messages} "
            f"--modes {','.join(modes)} --concurrency {concurrency} --celery-workers "
            f"{celery_workers}"
            + (f" --partitions-per-run {partitions_per_run}" if partitions_per_run else ""),
        }
        for mode in modes:
            res = _run_mode(
                mode,
                src,
                work / mode,
                groups,
                messages,
                log,
                timeout_s,
                (concurrency, celery_workers, partitions_per_run),
            )
            report["modes"][mode] = res
            log(
                f"{mode}: {res['wall_s']}s wall, {res['runs_per_minute']} runs/min, "
                f"{res['partitions_per_minute']} partitions/min, {res['failed']} failed"
            )
            if out:  # after each mode, so a long run keeps what it measured
                _write(out, report)
        _compare_with_cli(report["modes"], messages)
        for res in report["modes"].values():
            res.pop("_summary")
        report["complete"] = True
        if out:
            _write(out, report)
        return report
    finally:
        if saved_dh is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = saved_dh
        if tmp is not None:
            tmp.cleanup()


def _run_mode(
    mode: str,
    src: Path,
    mwork: Path,
    groups: list[str],
    messages: int,
    log: Callable[[str], None],
    timeout_s: float,
    dagster: tuple[int, int, int | None],
) -> dict[str, Any]:
    """Backfill the groups in ``src`` one way (the CLI loop, or Dagster with ``dagster`` =
    (concurrency, celery workers, partitions per run)); its figures, the load average around
    it, and ``_summary``: the messages and records of each completed group's store."""
    mwork.mkdir()
    load0 = os.getloadavg()[0]
    if mode == "cli":
        home = mwork / "home"
        res = run_cli(src, home, groups, log, timeout_s)
    else:
        concurrency, celery_workers, partitions_per_run = dagster
        res = run_dagster(
            mode,
            src,
            mwork,
            groups,
            concurrency,
            celery_workers,
            log,
            timeout_s,
            partitions_per_run,
        )
        home = Path(res.pop("home"))
    res["load_avg_1m_before"] = round(load0, 2)
    res["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
    done = res.pop("_succeeded", None)  # Dagster: partitions whose run succeeded
    summary = store_summary(home, groups if done is None else done)
    res["groups_complete"] = sum(s["messages"] == messages for s in summary.values())
    res["records"] = sum(s["records"] for s in summary.values())
    res["_summary"] = summary
    return res


def _compare_with_cli(modes: dict[str, dict[str, Any]], messages: int) -> None:
    """Each Dagster mode against the CLI loop (when it ran): the groups both completed, whether
    their stores hold the same records, and the speedup in groups per minute."""
    base = modes.get("cli")
    for mode, res in modes.items():
        if base is not None and mode != "cli":
            both = [
                g
                for g, v in res["_summary"].items()
                if v["messages"] == messages
                and base["_summary"].get(g, {}).get("messages") == messages
            ]
            res["compared_with_cli"] = len(both)
            res["same_records_as_cli"] = all(
                res["_summary"][g] == base["_summary"][g] for g in both
            )
            res["speedup_vs_cli"] = (
                round(res["partitions_per_minute"] / base["partitions_per_minute"], 3)
                if base["partitions_per_minute"]
                else None
            )  # groups per minute against the loop's


def _write(out: str | Path, report: dict[str, Any]) -> None:
    view = {
        **report,
        "modes": {
            m: {k: v for k, v in r.items() if k != "_summary"} for m, r in report["modes"].items()
        },
    }
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(view, indent=2) + "\n")


def summary_table(report: dict[str, Any]) -> str:
    """The report as a plain-text table (one line per mode)."""
    cols = (
        "mode",
        "runs",
        "failed",
        "wall_s",
        "runs/min",
        "groups/min",
        "run_s_p50",
        "run_s_p95",
        "complete",
        "vs_cli",
    )
    rows = [cols]
    for mode, r in report["modes"].items():
        rows.append(
            (
                mode,
                r["runs"],
                r["failed"],
                r["wall_s"],
                r["runs_per_minute"],
                r["partitions_per_minute"],
                r["run_s_p50"],
                r["run_s_p95"],
                f"{r['groups_complete']}/{report['partitions']}",
                f"{r['speedup_vs_cli']}x" if r.get("speedup_vs_cli") is not None else "-",
            )
        )
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(cols))]
    return "\n".join(
        "  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)) for row in rows
    )


def add_bench(bsub: argparse._SubParsersAction) -> None:
    """``speakerflow bench backfill`` (registered by ``speakerflow/cli/bench.py``)."""
    p = bsub.add_parser(
        "backfill",
        help="N group partitions: Dagster backfill (multiprocess, Celery) against a "
        "sequential CLI loop",
    )
    p.add_argument(
        "--partitions", type=int, default=200, help="groups (= partitions) to ingest (default 200)"
    )
    p.add_argument("--messages", type=int, default=50, help="messages per group (default 50)")
    p.add_argument(
        "--modes",
        default=",".join(MODES),
        help="comma-separated: cli, multiprocess, celery (default all)",
    )
    p.add_argument(
        "--concurrency", type=int, default=2, help="Dagster runs at a time (QueuedRunCoordinator)"
    )
    p.add_argument(
        "--celery-workers", type=int, default=2, help="Celery worker processes (one slot each)"
    )
    p.add_argument(
        "--workdir",
        default=None,
        help="keep the homes, instances and logs here (default: a temp folder)",
    )
    p.add_argument(
        "--partitions-per-run",
        type=int,
        default=None,
        help="groups per Dagster backfill run (the ingest assets' BackfillPolicy; default: the "
        "assets' own, 10); 1 = one run per group",
    )
    p.add_argument("--seed", type=int, default=11, help="seed of the synthetic groups")
    p.add_argument(
        "--timeout",
        type=float,
        default=7200,
        help="seconds a backfill may run; then the runs finished so far are reported (timed_out: "
        "true)",
    )
    p.add_argument("--out", default=None, help="write the report JSON here")
    p.add_argument(
        "--json", action="store_true", help="print the report as JSON instead of a table"
    )
    p.set_defaults(func=_run_cli)


def _run_cli(args: argparse.Namespace) -> int:
    report = run(
        args.partitions,
        args.messages,
        modes=tuple(m for m in args.modes.split(",") if m),
        concurrency=args.concurrency,
        celery_workers=args.celery_workers,
        out=args.out,
        workdir=args.workdir,
        seed=args.seed,
        timeout_s=args.timeout,
        log=lambda line: print(line, file=sys.stderr, flush=True),
        partitions_per_run=args.partitions_per_run,
    )
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(summary_table(report))
        if args.out:
            print(f"report: {args.out}")
    return 0

"""Fault benchmark: SIGKILL real writer processes, reopen, and compare with a clean run.

``speakerflow bench faults [--kills N] --out report.json``

A worker process ingests real messages (the first LoCoMo conversation when
``../shared/data`` is present, else the bundled sample) in three batches (sessions split in
thirds), runs the rules Writer after each batch (``write_group``, records flushed every
``--flush-every`` segments) and finally the entity path (``build_entity_graph``). The
benchmark runs it once cleanly (the reference), then for each kill:

1. starts a fresh worker in a new home and kills it with SIGKILL, either at a named step
   boundary (``SPEAKERFLOW_FAILPOINT=step@n``; every boundary the reference run passed,
   in turn) or after a random delay within the reference run's duration;
2. reopens the group writable (the recovery pass) and audits it
   (:func:`speakerflow.graphs.audit.audit`): Parquet, Kuzu, Tantivy and the watermark must
   agree, no record may cite a missing message;
3. re-runs the worker to completion (what a user does after a crash) and compares messages,
   records (id, content, chain, evidence), roster and audit with the reference.

Report: ``kills``, ``recovered`` (kills after which every check passed), ``lost`` (reference
messages/records missing at the end), ``duplicated``, ``orphaned``, ``mismatched`` (store
disagreements after recovery or at the end, records that differ from the reference, extra
records, roster differences, failed reopen/resume), and one entry per kill.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GROUP = "faults"
_WORKER = (
    "import sys; from speakerflow.benchmarks.faults import worker; worker(sys.argv[1], sys.argv[2])"
)


def _default_data(kind: str = "socialmem") -> tuple[Path, str]:
    """Real data for the worker: a SocialMemBench network (default), the first LoCoMo
    conversation, or the bundled sample when ``../shared/data`` is absent."""
    from speakerflow.settings import BUNDLED_SAMPLE

    shared = Path(
        os.environ.get(
            "SPEAKERFLOW_SHARED_DATA",
            Path(__file__).resolve().parents[1].parent / "shared" / "data",
        )
    )
    if kind == "locomo" and (shared / "locomo" / "locomo10.json").exists():
        return shared / "locomo" / "locomo10.json", "locomo"
    if kind == "socialmem":
        nets = sorted((shared / "socialmem" / "training").glob("social_*.json"))
        if nets:
            return nets[0], "socialmem"
    return BUNDLED_SAMPLE, "jsonl"


def prepare(
    out: Path,
    source: str | Path | None = None,
    fmt: str | None = None,
    entity_path: bool = True,
    flush_every: int = 8,
    data: str = "socialmem",
) -> Path:
    """Write the worker's input (messages of one group as Parquet, split points) under ``out``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from speakerflow.ops.loaders import load

    if source is None and data == "events":
        table, source, fmt = (
            _events_table(),
            "benchmarks.harness.generator (seed 0, 3 rounds x 12 episodes)",
            "events",
        )
    else:
        if source is None:
            source, fmt = _default_data(data)
        loaded = load(source, fmt or "jsonl", group=None if fmt != "jsonl" else GROUP)
        _, table = loaded[0]
    table = table.set_column(
        table.schema.get_field_index("group_id"), "group_id", pa.array([GROUP] * table.num_rows)
    )
    sessions = sorted(set(table["session_id"].to_pylist()), key=lambda s: (len(s), s))
    thirds = [sessions[i::3] for i in range(3)] if len(sessions) >= 3 else [sessions]
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out / "messages.parquet")
    (out / "plan.json").write_text(
        json.dumps(
            {
                "source": str(source),
                "format": fmt,
                "batches": thirds,
                "entity_path": entity_path,
                "flush_every": flush_every,
            }
        )
    )
    return out


def _events_table():
    """Agent events from the InKH stream generator: entity-path input that yields facts."""
    import pyarrow as pa

    from speakerflow.benchmarks.harness.generator import Generator
    from speakerflow.schemas import MESSAGE_SCHEMA

    gen = Generator(0, rounds=3, episodes=12, group=GROUP)
    rows = []
    for rnd, batch in gen.stream():
        for ep in batch:
            rows += [
                {**e, "reply_to": None, "group_id": GROUP, "session_id": f"r{rnd}"}
                for e in ep.events
            ]
    return pa.Table.from_pylist(rows, schema=MESSAGE_SCHEMA)


def worker(home: str, data: str) -> None:
    """The process under test: three ingest batches + Writer, then the entity path."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from speakerflow.graphs import Home
    from speakerflow.pipelines.write_path import write_group

    plan = json.loads((Path(data) / "plan.json").read_text())
    table = pq.read_table(Path(data) / "messages.parquet")
    h = Home(home)
    for sessions in plan["batches"]:
        chunk = table.filter(pc.is_in(table["session_id"], pa.array(sessions)))
        with h.open(GROUP, writable=True) as store:
            store.append_messages(chunk)
            write_group(store, "rules", progress=False, flush_every=plan["flush_every"])
    if plan["entity_path"]:
        from speakerflow.pipelines.entity_path import build_entity_graph

        with h.open(GROUP, writable=True) as store:
            build_entity_graph(store)


#: Top-level folders installed as ``speakerflow.*`` (see setup.py).
MAPPED = ("schemas", "ops", "graphs", "assets", "pipelines", "training", "benchmarks")


def freeze_code(dest: Path) -> Path:
    """Copy the speakerflow sources into ``dest`` (put first on PYTHONPATH): every worker of
    one benchmark runs the same code, even if the checkout changes while it runs."""
    import speakerflow

    repo = Path(speakerflow.__file__).resolve().parent.parent
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(repo / "speakerflow", dest / "speakerflow", ignore=ignore, dirs_exist_ok=True)
    for top in MAPPED:
        if (repo / top).is_dir():
            shutil.copytree(
                repo / top, dest / "speakerflow" / top, ignore=ignore, dirs_exist_ok=True
            )
    return dest


_CODE: dict[str, str] = {}


def _run_worker(
    home: Path,
    data: Path,
    env_extra: dict[str, str] | None = None,
    kill_after: float | None = None,
    timeout: float = 600,
) -> tuple[int, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPEAKERFLOW_FAILPOINT")}
    env.update(env_extra or {})
    if "path" in _CODE:
        env["PYTHONPATH"] = os.pathsep.join(x for x in (_CODE["path"], env.get("PYTHONPATH")) if x)
    start = time.perf_counter()
    # cwd: ``python -c`` puts the working directory first on sys.path; run from a checkout,
    # its live ``speakerflow/`` would shadow the frozen copy (found when a commit landed mid-run)
    proc = subprocess.Popen(
        [sys.executable, "-c", _WORKER, str(Path(home).resolve()), str(Path(data).resolve())],
        env=env,
        cwd=_CODE.get("path") or None,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if kill_after is not None:
        try:
            proc.wait(kill_after)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    if proc.returncode not in (0, -signal.SIGKILL):
        raise RuntimeError(f"worker failed ({proc.returncode}): {err[-3000:]}")
    return proc.returncode, time.perf_counter() - start


def snapshot(home: Path) -> dict[str, Any]:
    """Open the group writable (running recovery) and read what the comparison needs."""
    from speakerflow.graphs import Home
    from speakerflow.graphs.audit import audit

    h = Home(home)
    if GROUP not in h.groups():
        return {
            "recovered": None,
            "audit": None,
            "messages": [],
            "records": {},
            "roster": [],
            "facts": 0,
        }
    with h.open(GROUP, writable=True) as s:
        rec = s.recovered
        a = audit(s)
        recs = {
            r["entry_id"]: (
                r["content"],
                r["supersedes"],
                r["superseded_by"],
                tuple(r["from_ids"] or []),
                r["write_order"],
            )
            for r in s.records().to_pylist()
        }
        facts = s.graph.count("Fact") if (s.root / "graph.kuzu").exists() else 0
        return {
            "recovered": rec,
            "audit": a,
            "messages": sorted(s.messages()["msg_id"].to_pylist()),
            "records": recs,
            "roster": s.roster(),
            "facts": facts,
        }


def compare(
    ref: dict[str, Any], after_recovery: dict[str, Any], final: dict[str, Any]
) -> dict[str, int]:
    """Counts for one kill (see the module doc)."""
    out = {"lost": 0, "duplicated": 0, "orphaned": 0, "mismatched": 0}
    for snap in (after_recovery, final):
        a = snap["audit"]
        if a is None:
            continue
        out["duplicated"] += a["duplicated"]
        out["orphaned"] += a["orphaned"]
        out["mismatched"] += a["mismatched"] + int(a["pending_batch"])
    out["lost"] += len(set(ref["messages"]) - set(final["messages"]))
    out["lost"] += len(set(ref["records"]) - set(final["records"]))
    out["duplicated"] += len(final["messages"]) - len(set(final["messages"]))
    out["mismatched"] += len(set(final["records"]) - set(ref["records"]))
    out["mismatched"] += sum(
        1 for k, v in final["records"].items() if k in ref["records"] and ref["records"][k] != v
    )
    out["mismatched"] += int(final["roster"] != ref["roster"]) + int(final["facts"] != ref["facts"])
    return out


def named_steps(log: Path) -> list[str]:
    """``step@n`` for every step boundary a run passed, in order."""
    seen: dict[str, int] = {}
    out = []
    for name in log.read_text().split():
        seen[name] = seen.get(name, 0) + 1
        out.append(f"{name}@{seen[name]}")
    return out


def _one_kill(
    i: int,
    how: str,
    step: str | None,
    delay: float | None,
    base: Path,
    data: Path,
    ref: dict[str, Any],
) -> dict[str, Any]:
    home = base / f"kill-{i:04d}"
    shutil.rmtree(home, ignore_errors=True)
    entry: dict[str, Any] = {"i": i, "how": how, "step": step}
    if how == "step":
        rc, _ = _run_worker(home, data, {"SPEAKERFLOW_FAILPOINT": step or ""})
    else:
        for _ in range(4):  # a worker that finished before the delay ran out: retry sooner
            entry["after_s"] = round(delay or 0.0, 3)
            rc, _ = _run_worker(home, data, kill_after=delay)
            if rc == -signal.SIGKILL:
                break
            shutil.rmtree(home, ignore_errors=True)
            delay = (delay or 0.0) * 0.6
    entry["killed"] = rc == -signal.SIGKILL
    if not entry["killed"]:  # finished before the kill landed: not counted as a kill
        entry["note"] = "finished before the kill"
        shutil.rmtree(home, ignore_errors=True)
        return entry
    errors = []
    try:
        mid = snapshot(home)
        entry["recovery"] = mid["recovered"]
    except Exception as exc:  # noqa: BLE001 - counted and reported
        errors.append(f"reopen: {type(exc).__name__}: {exc}")
        mid = {"audit": None}
    try:
        _run_worker(home, data)
        final = snapshot(home)
    except Exception as exc:  # noqa: BLE001
        errors.append(f"resume: {type(exc).__name__}: {exc}")
        final = {"audit": None, "messages": [], "records": {}, "roster": [], "facts": -1}
    counts = compare(ref, mid, final)
    counts["mismatched"] += len(errors)
    entry.update(counts)
    if errors:
        entry["errors"] = errors
    entry["ok"] = not any(counts.values())
    shutil.rmtree(home, ignore_errors=True)
    return entry


def run(
    kills: int = 100,
    out: str | Path | None = None,
    seed: int = 0,
    source: Path | None = None,
    fmt: str | None = None,
    entity_path: bool = True,
    flush_every: int = 2,
    workdir: Path | None = None,
    progress: bool = True,
    jobs: int = 2,
    data: str = "socialmem",
) -> dict[str, Any]:
    """Run the benchmark (``jobs`` kills at a time); returns (and writes to ``out``) the report."""
    from concurrent.futures import ThreadPoolExecutor

    rng = random.Random(seed)
    base = Path(workdir or tempfile.mkdtemp(prefix="speakerflow-faults-")).resolve()
    data_dir = prepare(base / "data", source, fmt, entity_path, flush_every, data)
    _CODE["path"] = str(freeze_code(base / "code"))
    ref_home = base / "reference"
    log = base / "steps.log"
    log.unlink(missing_ok=True)
    rc, ref_seconds = _run_worker(ref_home, data_dir, {"SPEAKERFLOW_FAILPOINT_LOG": str(log)})
    ref = snapshot(ref_home)
    steps = named_steps(log)
    plan = _plan(kills, steps, ref_seconds, rng)
    totals = {
        "kills": 0,
        "recovered": 0,
        "lost": 0,
        "duplicated": 0,
        "orphaned": 0,
        "mismatched": 0,
    }
    per_kill: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [
            pool.submit(_one_kill, i, how, step, delay, base, data_dir, ref)
            for i, (how, step, delay) in enumerate(plan)
        ]
        for fut in futures:
            entry = fut.result()
            per_kill.append(entry)
            _count(totals, entry)
            if progress:
                _print_kill(entry, len(plan))
            # the report so far, rewritten after every kill (a long run can be read while it runs)
            if out:
                _write_report(
                    out,
                    _report(
                        totals, plan, per_kill, steps, ref, ref_seconds, data_dir, t0, done=False
                    ),
                )
    report = _report(totals, plan, per_kill, steps, ref, ref_seconds, data_dir, t0, done=True)
    if out:
        _write_report(out, report)
    if workdir is None:
        shutil.rmtree(base, ignore_errors=True)
    return report


def _plan(
    kills: int, steps: list[str], ref_seconds: float, rng: random.Random
) -> list[tuple[str, str | None, float | None]]:
    """The kills in a random order: half at named step boundaries (spread over every boundary
    the reference run passed), the rest at random times within its duration."""
    n_steps = (kills + 1) // 2
    plan: list[tuple[str, str | None, float | None]] = (
        [("step", steps[(i * len(steps)) // n_steps % len(steps)], None) for i in range(n_steps)]
        if steps
        else []
    )
    plan += [("random", None, rng.uniform(0.0, ref_seconds)) for _ in range(kills - len(plan))]
    rng.shuffle(plan)
    return plan


def _count(totals: dict[str, int], entry: dict[str, Any]) -> None:
    """Add a kill's outcome to the totals (a worker that finished before its kill: nothing)."""
    if entry["killed"]:
        totals["kills"] += 1
        totals["recovered"] += int(entry["ok"])
        for k in ("lost", "duplicated", "orphaned", "mismatched"):
            totals[k] += entry[k]


def _print_kill(entry: dict[str, Any], n: int) -> None:
    """One progress line on stderr for a kill."""
    print(
        f"[faults] {entry['i'] + 1}/{n} {entry['how']} "
        f"{entry['step'] or entry.get('after_s')}: "
        f"{'not killed' if not entry['killed'] else 'ok' if entry['ok'] else entry} "
        f"{entry.get('recovery') or ''}",
        file=sys.stderr,
        flush=True,
    )


def _write_report(out: str | Path, report: dict[str, Any]) -> None:
    Path(out).write_text(json.dumps(report, indent=2, default=str) + "\n")


def _report(
    totals, plan, per_kill, steps, ref, ref_seconds, data, t0, done: bool
) -> dict[str, Any]:
    return {
        **totals,
        "complete": done,
        "attempts": len(plan),
        "named_step_kills": sum(1 for e in per_kill if e["how"] == "step" and e.get("killed")),
        "random_kills": sum(1 for e in per_kill if e["how"] == "random" and e.get("killed")),
        "step_boundaries": sorted(set(s.split("@")[0] for s in steps)),
        "step_boundary_hits_in_reference": len(steps),
        "reference": {
            "messages": len(ref["messages"]),
            "records": len(ref["records"]),
            "facts": ref["facts"],
            "seconds": round(ref_seconds, 2),
            "source": json.loads((data / "plan.json").read_text())["source"],
        },
        "seconds": round(time.perf_counter() - t0, 1),
        "per_kill": per_kill,
    }

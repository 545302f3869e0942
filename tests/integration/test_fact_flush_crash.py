"""The InKH fact write is one batch: a Kuzu transaction inside a batch manifest.

A process running the entity path (``build_entity_graph``) on generated agent events is
killed at each step of its fact flush; the next writable open finds the ``facts``
manifest and reports it rolled back (the transaction never committed: no fact of it is in
the graph) or rolled forward (committed: all of them are); never half. Re-running the
entity path then ends with exactly the facts of a run that was never interrupted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from speakerflow.benchmarks.faults import GROUP, _events_table
from speakerflow.graphs import Home
from speakerflow.graphs.audit import audit

pytestmark = pytest.mark.timeout(600)
RUN = """
import sys
from datetime import UTC, datetime
from speakerflow.graphs import Home
from speakerflow.pipelines.entity_path import build_entity_graph
with Home(sys.argv[1]).open(sys.argv[2], writable=True) as store:
    build_entity_graph(store, now=datetime(2026, 6, 1, tzinfo=UTC))
"""


def _home(path: Path) -> Path:
    with Home(path).open(GROUP, writable=True) as store:
        store.append_messages(_events_table())
    return path


def _entity_path(home: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", RUN, str(home), GROUP],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=400,
    )


def _facts(home: Path) -> dict[str, tuple]:
    with Home(home).open(GROUP) as store:
        rows = store.graph.rows(
            "MATCH (f:Fact) RETURN f.edge_id AS id, f.description AS d, f.evidence_ids AS ev, "
            "f.invalid_at AS inv"
        )
    return {r["id"]: (r["d"], tuple(r["ev"] or []), r["inv"]) for r in rows}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    home = _home(tmp_path_factory.mktemp("ref") / "home")
    log = home.parent / "steps.log"
    run = _entity_path(home, SPEAKERFLOW_FAILPOINT_LOG=str(log))
    assert run.returncode == 0, run.stderr[-3000:]
    steps = log.read_text().split()
    facts = _facts(home)
    assert facts and "facts.committed" in steps
    return facts, steps


@pytest.mark.parametrize("step", ["facts.manifest", "facts.written", "facts.committed"])
def test_a_killed_fact_flush_is_all_or_nothing_and_recovered(tmp_path, reference, step):
    ref, steps = reference
    home = _home(tmp_path / "home")
    killed = _entity_path(home, SPEAKERFLOW_FAILPOINT=step)
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert (home / "groups" / GROUP / "batch.json").exists()  # the flush's manifest is pending
    with Home(home).open(GROUP, writable=True) as store:
        rec = store.recovered
        assert rec["kind"] == "facts", rec
        assert rec["action"] == (
            "rolled forward" if step == "facts.committed" else "rolled back"
        ), rec
        a = audit(store)
        assert (a["orphaned"], a["mismatched"], a["pending_batch"]) == (0, 0, False), a
    facts = _facts(home)
    if step == "facts.committed":
        assert facts and set(facts) <= set(ref)
    else:
        assert facts == {}  # the first flush never committed: none of its facts exist
    again = _entity_path(home)
    assert again.returncode == 0, again.stderr[-3000:]
    assert set(_facts(home)) == set(ref)

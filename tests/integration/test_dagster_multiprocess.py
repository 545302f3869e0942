"""Two groups ingested at once by ``ingest_job`` on the multiprocess executor: no lock
errors, the runs overlap in time, the asset checks pass, and the stores hold exactly what
a sequential run produces. Then two runs of the *same* group at once: the second waits
for the group's writer lock and writes nothing twice.
"""

from __future__ import annotations

import dagster as dg
import pytest
from dagster_run_helpers import (
    check_results,
    dagster_home,
    fill_inbox,
    launch_runs,
    run_window,
    store_state,
)

from speakerflow.assets.definitions import ingest_job_def
from speakerflow.settings import BUNDLED_SAMPLE

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]


def test_two_groups_in_parallel_match_a_sequential_run(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home(tmp_path / "dh")))
    parallel_home, sequential_home = tmp_path / "parallel", tmp_path / "sequential"
    groups = fill_inbox(parallel_home)
    fill_inbox(sequential_home)
    monkeypatch.setenv("SPEAKERFLOW_HOME", str(parallel_home))  # the Parquet IO manager's base

    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("groups", groups)
        results = launch_runs(parallel_home, groups)
        for result in results:
            assert result["success"], result
            assert not any("lock" in (m or "").lower() for m in result["failures"])
            run = instance.get_run_by_id(result["run_id"])
            assert run.tags["dagster/partition"] == result["group"]
            # every step ran in its own process: the multiprocess executor
            workers = instance.all_logs(
                result["run_id"], of_type=dg.DagsterEventType.STEP_WORKER_STARTED
            )
            assert len(workers) == 4
            checks = check_results(instance, result["run_id"])
            assert len(checks) == 5 and all(checks.values()), checks
        (a0, a1), (b0, b1) = (run_window(instance, r["run_id"]) for r in results)
        assert a0 < b1 and b0 < a1, "the two groups' runs did not overlap in time"

        # the same partitions one after the other, in one process, in a second home
        job = ingest_job_def()
        for group in groups:
            result = job.execute_in_process(
                partition_key=group,
                instance=instance,
                run_config={
                    "resources": {
                        "store": {"config": {"home": str(sequential_home)}},
                        "table_io": {"config": {"base_dir": str(sequential_home / "io")}},
                    }
                },
            )
            assert result.success

    for group in groups:
        par, seq = store_state(parallel_home, group), store_state(sequential_home, group)
        assert par["messages"] and par["records"], f"{group}: nothing ingested"
        assert par["messages"] == seq["messages"]
        only_par = sorted(set(par["records"]) - set(seq["records"]))
        only_seq = sorted(set(seq["records"]) - set(par["records"]))
        assert not only_par and not only_seq, (
            f"{group}: parallel-only {only_par[:3]}, sequential-only {only_seq[:3]}"
        )
    team = store_state(parallel_home, "team")
    assert len(team["messages"]) == sum(
        1 for line in BUNDLED_SAMPLE.read_text().splitlines() if line.strip()
    )
    assert any(owner == "GROUP" for _, owner, *_ in team["records"])
    assert any(sup for *_, sup in team["records"]), (
        "the sample's changes of mind make update chains"
    )


def test_same_group_twice_at_once_is_serialised(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home(tmp_path / "dh")))
    home = tmp_path / "home"
    fill_inbox(home)
    monkeypatch.setenv("SPEAKERFLOW_HOME", str(home))
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("groups", ["team"])
    results = launch_runs(home, ["team", "team"])
    assert all(r["success"] for r in results), "\n".join(
        str(f) for r in results for f in r["failures"]
    )
    state = store_state(home, "team")
    assert len(state["messages"]) == len(set(state["messages"]))
    ids = [r[0] for r in state["records"]]
    assert len(ids) == len(set(ids)), "a record was written twice"

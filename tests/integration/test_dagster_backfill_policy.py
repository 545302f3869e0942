"""``ingest_job`` over a range of groups in one run (the ingest assets' ``BackfillPolicy``):
one materialisation per group and asset with that group's own metadata, five check
evaluations per group scoped to its partition, one IO file per group, stores equal to
one run per group; a single-partition run next to it is unchanged; a group of the range
without messages fails the run naming it."""

from __future__ import annotations

import json

import dagster as dg
import pytest
from dagster_run_helpers import store_state

from speakerflow.assets.common import BACKFILL_PARTITIONS_ENV, backfill_policy
from speakerflow.assets.definitions import ingest_job_def

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
SIZES = {"ga": 12, "gb": 7, "gc": 9, "gd": 5}


def _inbox(home):
    box = home / "inbox"
    box.mkdir(parents=True)
    speakers = ["Ana", "Bo", "Cy"]
    for g, n in SIZES.items():
        rows = [
            {
                "msg_id": f"{g}-{i}",
                "group_id": g,
                "session_id": "s1",
                "ts": f"2026-05-01T10:{i:02d}:00Z",
                "speaker": speakers[i % 3],
                "text": f"I moved to Lisbon last year and I work as a nurse now ({g} {i}).",
            }
            for i in range(n)
        ]
        (box / f"{g}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _config(home):
    return {
        "resources": {
            "store": {"config": {"home": str(home)}},
            "table_io": {"config": {"base_dir": str(home / "io")}},
        }
    }


def _events(result, kind):
    return [e for e in result.all_events if e.event_type_value == kind]


def test_backfill_policy_default_and_override(monkeypatch):
    assert ingest_job_def().backfill_policy == dg.BackfillPolicy.multi_run(10)
    monkeypatch.setenv(BACKFILL_PARTITIONS_ENV, "25")
    assert backfill_policy().max_partitions_per_run == 25
    monkeypatch.setenv(BACKFILL_PARTITIONS_ENV, "zero")
    assert backfill_policy().max_partitions_per_run == 10


def test_a_range_run_records_each_group_like_its_own_run(tmp_path, monkeypatch):
    ranged, single = tmp_path / "ranged", tmp_path / "single"
    _inbox(ranged)
    _inbox(single)
    groups = list(SIZES)
    job = ingest_job_def()
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("groups", groups)
        monkeypatch.setenv("SPEAKERFLOW_HOME", str(ranged))
        result = job.execute_in_process(
            instance=instance,
            run_config=_config(ranged),
            tags={RANGE_START: "ga", RANGE_END: "gc"},
        )
        assert result.success
        mats = _events(result, "ASSET_MATERIALIZATION")
        by_asset: dict[str, dict[str, dict]] = {}
        for e in mats:
            meta = e.event_specific_data.materialization.metadata
            by_asset.setdefault(e.asset_key.to_user_string(), {})[e.partition] = meta
        assert sorted(by_asset) == [
            "derived_memory",
            "raw_messages",
            "verbatim_track",
            "writer_actions",
        ]
        assert all(sorted(v) == ["ga", "gb", "gc"] for v in by_asset.values())
        # each group's event carries its own numbers, not the run's
        assert {g: m["rows"].value for g, m in by_asset["raw_messages"].items()} == {
            g: SIZES[g] for g in ("ga", "gb", "gc")
        }
        assert {g: m["added"].value for g, m in by_asset["verbatim_track"].items()} == {
            g: SIZES[g] for g in ("ga", "gb", "gc")
        }
        evals = [e.event_specific_data for e in _events(result, "ASSET_CHECK_EVALUATION")]
        assert len(evals) == 15 and all(ev.passed for ev in evals)
        assert sorted({(ev.partition, ev.check_name) for ev in evals}) == sorted(
            (g, c) for g in ("ga", "gb", "gc") for c in {ev.check_name for ev in evals}
        )
        assert all(ev.target_materialization_data.run_id == result.run_id for ev in evals)
        assert sorted(p.name for p in (ranged / "io" / "raw_messages").iterdir()) == [
            "ga.parquet",
            "gb.parquet",
            "gc.parquet",
        ]
        for key in ("raw_messages", "verbatim_track", "writer_actions", "derived_memory"):
            assert instance.get_materialized_partitions(dg.AssetKey(key)) == {"ga", "gb", "gc"}

        # a single-partition run beside it: unchanged (one group, its checks on its partition)
        one = job.execute_in_process(
            instance=instance, run_config=_config(ranged), partition_key="gd"
        )
        assert one.success
        evals = [e.event_specific_data for e in _events(one, "ASSET_CHECK_EVALUATION")]
        assert len(evals) == 5 and {ev.partition for ev in evals} == {"gd"}
        assert instance.get_materialized_partitions(dg.AssetKey("derived_memory")) == set(groups)

        # the same groups one run each, in a second home: the same stores
        monkeypatch.setenv("SPEAKERFLOW_HOME", str(single))
        for g in ("ga", "gb", "gc"):
            assert job.execute_in_process(
                instance=instance, run_config=_config(single), partition_key=g
            ).success
    for g in ("ga", "gb", "gc"):
        assert store_state(ranged, g) == store_state(single, g)
        assert len(store_state(ranged, g)["messages"]) == SIZES[g]


def test_knowledge_and_maintenance_range_runs_cover_each_group(tmp_path, monkeypatch):
    """Every per-group asset has the same policy (a job over the whole chain warns about
    none), and a range run of the knowledge and maintenance jobs does each group's work."""
    from speakerflow.assets.definitions import defs

    home = tmp_path / "home"
    _inbox(home)
    monkeypatch.setenv("SPEAKERFLOW_HOME", str(home))
    policies = {
        a.key.to_user_string(): a.backfill_policy
        for a in defs.resolve_asset_graph().assets_defs
        if a.partitions_def is not None
    }
    assert set(policies.values()) == {backfill_policy()}, policies
    range_tags = {RANGE_START: "ga", RANGE_END: "gc"}
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("groups", list(SIZES))
        for name in ("ingest_job", "knowledge_job", "maintenance_job"):
            run_config = _config(home)
            if name == "maintenance_job":
                run_config["ops"] = {
                    "maintenance_tick": {"config": {"now": "2026-06-01T00:00:00+00:00"}}
                }
            result = defs.resolve_job_def(name).execute_in_process(
                instance=instance, run_config=run_config, tags=range_tags
            )
            assert result.success, name
        mats = _events(result, "ASSET_MATERIALIZATION")
        assert sorted(e.partition for e in mats) == ["ga", "gb", "gc"]
        assert all("seconds" in e.event_specific_data.materialization.metadata for e in mats)
        for key in ("entity_graph", "wiki_pages", "maintenance_tick"):
            assert instance.get_materialized_partitions(dg.AssetKey(key)) == {"ga", "gb", "gc"}
    for g in ("ga", "gb", "gc"):
        assert any((home / "wiki" / g).glob("*.md")), g
    assert not (home / "wiki" / "gd").exists()


def test_a_group_without_messages_fails_its_range_run_by_name(tmp_path, monkeypatch):
    home = tmp_path / "home"
    _inbox(home)
    monkeypatch.setenv("SPEAKERFLOW_HOME", str(home))
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("groups", ["ga", "ghost", "gb"])
        result = ingest_job_def().execute_in_process(
            instance=instance,
            run_config=_config(home),
            tags={RANGE_START: "ga", RANGE_END: "gb"},
            raise_on_error=False,
        )
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert (
        failure.step_key == "raw_messages" and "ghost" in failure.event_specific_data.error.message
    )

"""Forget as a Dagster job: ``forget_job`` executed in-process (ephemeral instance, real
on-disk store) forgets a speaker, dry-runs without changes, and refuses bad config."""

from __future__ import annotations

import dagster as dg
import pytest

from speakerflow.assets.definitions import defs
from speakerflow.assets.jobs import forget_job
from speakerflow.graphs import Home
from speakerflow.graphs.records import all_records
from speakerflow.ops.loaders import load
from speakerflow.pipelines.resources import HomeStore
from speakerflow.pipelines.write_path import write_group
from speakerflow.settings import BUNDLED_SAMPLE

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    store = Home(home).open("team", writable=True)
    try:
        store.append_messages(load(BUNDLED_SAMPLE, "jsonl", group="team")[0][1])
        assert write_group(store, "rules", progress=False).accepted > 0
    finally:
        store.close()
    return home


def _run(home, **config):
    with dg.instance_for_test() as instance:
        return forget_job.execute_in_process(
            run_config={"ops": {"forget_op": {"config": {"group": "team", **config}}}},
            resources={"store": HomeStore(home=str(home))},
            instance=instance,
            raise_on_error=False,
        )


def _state(home):
    store = Home(home).open("team")
    try:
        msgs = store.messages().to_pylist()
        return msgs, all_records(store), list(store.roster())
    finally:
        store.close()


def test_forget_job_is_registered():
    assert "forget_job" in {j.name for j in defs.jobs}
    assert defs.resolve_job_def("forget_job").name == "forget_job"


def test_forget_job_dry_run_then_forget_a_speaker(home):
    msgs0, recs0, roster0 = _state(home)
    dev_msgs = [m for m in msgs0 if m["speaker"] == "Dev"]
    assert dev_msgs and "Dev" in roster0

    dry = _run(home, speaker="Dev", dry_run=True)
    assert dry.success
    out = dry.output_for_node("forget_op")
    assert out["dry_run"] and out["messages"] == len(dev_msgs)
    assert _state(home) == (msgs0, recs0, roster0)  # a dry run changes nothing

    result = _run(home, speaker="Dev")
    assert result.success
    out = result.output_for_node("forget_op")
    assert (
        out["messages"] == len(dev_msgs)
        and out["roster_removed"] == 1
        and "Dev" not in str(out)
        and not out["dry_run"]
        and out["rewritten"]  # auto: the rules Writer wrote the group, so all is rewritten
    )
    msgs1, recs1, roster1 = _state(home)
    assert "Dev" not in roster1 and not [m for m in msgs1 if m["speaker"] == "Dev"]
    assert len(msgs1) == len(msgs0) - len(dev_msgs)
    gone = {m["msg_id"] for m in dev_msgs}
    # what others said about Dev stays (docs/reliability.md); nothing Dev said or that cites Dev
    assert not [r for r in recs1 if r["source"] == "Dev" or set(r["from_ids"]) & gone]
    log = Home(home).group_path("team") / "forget_log.jsonl"
    assert log.exists() and "Dev" not in log.read_text()  # the audit line holds no name


def test_forget_job_refuses_bad_config(home):
    before = _state(home)
    both = _run(home, speaker="Dev", all=True)
    assert not both.success
    (fail,) = both.get_step_failure_events()
    assert "exactly one of speaker, message_ids or all" in fail.step_failure_data.error.message
    with dg.instance_for_test() as instance:
        bad = forget_job.execute_in_process(
            run_config={"ops": {"forget_op": {"config": {"group": "nope", "all": True}}}},
            resources={"store": HomeStore(home=str(home))},
            instance=instance,
            raise_on_error=False,
        )
    assert not bad.success
    (fail,) = bad.get_step_failure_events()
    assert "no group 'nope'" in fail.step_failure_data.error.message
    odd = _run(home, speaker="Dev", rederive="some")
    assert not odd.success
    (fail,) = odd.get_step_failure_events()
    assert "rederive is one of ['affected', 'all', 'auto']" in fail.step_failure_data.error.message
    assert _state(home) == before


def test_forget_job_rederive_modes(home):
    """``auto`` (rules wrote the group) writes every record again; ``affected`` cascades."""
    msgs0, recs0, _ = _state(home)
    out = _run(home, speaker="Dev", rederive="affected").output_for_node("forget_op")
    assert not out["rewritten"] and out["rederive"] < len(msgs0)  # only what lost a record
    kept = {r["entry_id"] for r in _state(home)[1]} & {r["entry_id"] for r in recs0}
    assert kept  # the other records keep their ids

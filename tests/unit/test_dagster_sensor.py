"""The inbox (layout, formats, groups), the inbox sensor, the maintenance schedule and the
test resources, without running a job."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime

import dagster as dg
import pytest

from speakerflow.assets.common import md_table
from speakerflow.assets.inbox import inbox_files, messages_for_group
from speakerflow.assets.jobs import inbox_requests, inbox_sensor, maintenance_schedule
from speakerflow.pipelines.resources import (
    HashingEmbedder,
    HomeStore,
    InMemoryStore,
    ScriptedChatModel,
)
from speakerflow.settings import BUNDLED_SAMPLE

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def inbox_home(tmp_path):
    home = tmp_path / "home"
    inbox = home / "inbox"
    (inbox / "events").mkdir(parents=True)
    shutil.copy(
        BUNDLED_SAMPLE, inbox / "team.jsonl"
    )  # lines carry no group_id: the stem names the group
    (inbox / "events" / "desk.jsonl").write_text(
        json.dumps(
            {
                "event_id": "e1",
                "group_id": "desk",
                "ts": "2026-05-01T10:00:00Z",
                "source_type": "market_update",
                "source": "feed",
                "content": "BTC up 3%",
            }
        )
        + "\n"
    )
    (inbox / "notes.txt").write_text("not a message file")
    return home


def test_inbox_layout_formats_and_groups(inbox_home):
    files = inbox_files(inbox_home / "inbox")
    assert [(f.path.name, f.fmt, f.default_group) for f in files] == [
        ("desk.jsonl", "events", None),
        ("team.jsonl", "jsonl", "team"),
    ]
    table, used = messages_for_group("team", files)
    assert table.num_rows == sum(
        1 for line in BUNDLED_SAMPLE.read_text().splitlines() if line.strip()
    )
    assert set(table["group_id"].to_pylist()) == {"team"} and used == [str(files[1].path)]


def test_files_at_the_top_of_the_inbox_have_their_format_detected(inbox_home):
    inbox = inbox_home / "inbox"
    network = {
        "sessions": [
            {
                "session_id": "n_s01",
                "turns": [
                    {
                        "turn": "n_s01_t000",
                        "speaker": "Ana",
                        "content": "Drinks on Thursday?",
                        "ts": "2025-10-06T12:08:00",
                    }
                ],
            }
        ],
        "meta": {"network_id": "n1"},
    }
    (inbox / "net.json").write_text(json.dumps(network, indent=2))
    shutil.copy(inbox / "events" / "desk.jsonl", inbox / "feed.jsonl")
    found = {f.path.name: f.fmt for f in inbox_files(inbox)}
    assert found == {
        "desk.jsonl": "events",
        "feed.jsonl": "events",
        "net.json": "socialmem",
        "team.jsonl": "jsonl",
    }
    table, _ = messages_for_group("n1", inbox_files(inbox))
    assert table["text"].to_pylist() == ["Drinks on Thursday?"]


def test_sensor_adds_partitions_and_requests_one_run_per_new_file(inbox_home):
    store = HomeStore(home=str(inbox_home))
    with dg.instance_for_test() as instance:
        ctx = dg.build_sensor_context(instance=instance, resources={"store": store})
        result = inbox_sensor(ctx)
        assert sorted(r.partition_key for r in result.run_requests) == ["desk", "team"]
        team = next(r for r in result.run_requests if r.partition_key == "team")
        assert team.run_config["ops"]["raw_messages"]["config"]["fmt"] == "jsonl"
        (add,) = result.dynamic_partitions_requests
        assert sorted(add.partition_keys) == ["desk", "team"]

        # nothing new: no runs; a rewritten file: one run, no new partition
        again = inbox_requests(store, result.cursor, {"desk", "team"})
        assert again.run_requests == [] and again.dynamic_partitions_requests == []
        path = inbox_home / "inbox" / "team.jsonl"
        path.write_text(
            path.read_text()
            + json.dumps(
                {
                    "msg_id": "late-1",
                    "session_id": "s9",
                    "ts": "2026-04-01T09:00:00Z",
                    "speaker": "Ana",
                    "text": "One more thing.",
                }
            )
            + "\n"
        )
        changed = inbox_requests(store, again.cursor, {"desk", "team"})
        assert [r.partition_key for r in changed.run_requests] == ["team"]
        assert changed.dynamic_partitions_requests == []


def test_sensor_skips_a_broken_file_until_it_changes(inbox_home):
    (inbox_home / "inbox" / "broken.jsonl").write_text(
        '{"msg_id": "x", "group_id": "g", "text": \n'
    )
    store = HomeStore(home=str(inbox_home))
    result = inbox_requests(store, None, set())
    assert sorted(r.partition_key for r in result.run_requests) == ["desk", "team"]
    assert any("broken.jsonl" in k for k in json.loads(result.cursor))


def test_maintenance_schedule_one_run_per_group():
    with dg.instance_for_test() as instance:
        when = datetime(2026, 6, 1, 3, 0, tzinfo=UTC)
        ctx = dg.build_schedule_context(instance=instance, scheduled_execution_time=when)
        assert isinstance(maintenance_schedule(ctx), dg.SkipReason)
        instance.add_dynamic_partitions("groups", ["a", "b"])
        requests = maintenance_schedule(
            dg.build_schedule_context(instance=instance, scheduled_execution_time=when)
        )
        assert [r.partition_key for r in requests] == ["a", "b"]
        assert requests[0].run_key == "maintenance:a:2026-06-01"


def test_test_resources():
    store = InMemoryStore(namespace="unit-resources")
    InMemoryStore.reset("unit-resources")
    with store.open("g1", write=True) as s:
        assert s.in_memory and s.group_id == "g1"
    assert store.groups() == ["g1"]
    chat = ScriptedChatModel(replies=["hello"]).chat()
    assert chat.chat([{"role": "user", "content": "hi"}]).text == "hello"
    assert ScriptedChatModel().writer() == "rules"
    vecs = HashingEmbedder(dim=16).get().encode(["a b", "a b", "c"])
    assert vecs.shape == (3, 16) and (vecs[0] == vecs[1]).all()


def test_md_table_escapes_and_cuts():
    text = md_table([{"a": "x|y", "b": ["m1", "m2"]}, {"a": "z" * 100, "b": None}], width=10)
    assert "x\\|y" in text and "m1, m2" in text and "zzzzzzzzz…" in text

"""Read snapshots shared between processes, in one process: a writer ``Memory`` publishes its
snapshots (``SnapshotPublisher``) and a ``ReplicaMemory`` on the same home answers from the
files alone, as a reader process does (real stores, hashing embedder)."""

from __future__ import annotations

import json

from speakerflow.graphs import ann
from speakerflow.memory import Memory
from speakerflow.server.replica import MANIFEST, ReplicaMemory, SnapshotPublisher
from speakerflow.settings import BUNDLED_SAMPLE

ROWS = [
    {k: v for k, v in json.loads(line).items() if k != "group_id"}
    for line in BUNDLED_SAMPLE.read_text().splitlines()
    if line.strip()
]
Q = "Where will the offsite be?"


def _writer(home) -> tuple[Memory, SnapshotPublisher]:
    mem = Memory(home=home, embedder="hashing")
    mem.snapshot_knowledge = True
    publisher = SnapshotPublisher()
    mem.on_publish = publisher.publish
    return mem, publisher


def test_a_replica_answers_as_the_writer_from_the_published_files(tmp_path):
    writer, publisher = _writer(tmp_path)
    replica = ReplicaMemory(home=tmp_path, embedder="hashing", wait_s=0)
    try:
        writer.add("team", ROWS)
        mine, theirs = writer.ask("team", Q), replica.ask("team", Q)
        assert theirs.answer == mine.answer and theirs.cited_ids() == mine.cited_ids()
        assert replica.stats("team") == writer.stats("team")
        assert [r.entry_id for r in replica.memory("team")] == [
            r.entry_id for r in writer.memory("team")
        ]
        assert replica.inject("team", {"content": "Porto?"}).text() == (
            writer.inject("team", {"content": "Porto?"}).text()
        )
        # a later write: the replica reloads on the manifest's change
        late = {"msg_id": "late-1", "ts": "2026-06-01T10:00:00Z", "speaker": "Ana"}
        writer.add("team", [{**late, "text": "The zeppelin tour is booked."}])
        assert [h.msg_id for h in replica.search("team", "zeppelin")] == []  # not polled yet
        replica._refresh("team")
        assert [h.msg_id for h in replica.search("team", "zeppelin")] == ["late-1"]
        assert replica.loads == 2
        # a forget: withdrawn first, then published anew without the message
        folder = tmp_path / "groups" / "team"
        assert publisher.retract(folder)
        replica._refresh("team")
        assert replica.current_snapshot("team") is None
        writer.forget("team", message_ids=["late-1"])
        writer.snapshot("team")
        # no file of a snapshot from before the forget is left (they held its records)
        names = sorted(p.name for p in (folder / "snapshot").iterdir())
        assert names == ["knowledge-1.pkl", MANIFEST, "records-1.parquet"], names
        replica._refresh("team")
        assert [h.msg_id for h in replica.search("team", "zeppelin")] == []
        assert replica.stats("team")["messages"] == len(ROWS)
    finally:
        replica.close()
        writer.close()


def test_a_group_past_the_ann_threshold_is_read_by_the_writer(tmp_path, monkeypatch):
    monkeypatch.setattr(ann, "THRESHOLD", 10)
    writer, _ = _writer(tmp_path)
    replica = ReplicaMemory(home=tmp_path, embedder="hashing", wait_s=0)
    try:
        writer.add("team", ROWS)  # 32 messages: no snapshot, reads under the writer's lock
        manifest = json.loads((tmp_path / "groups" / "team" / "snapshot" / MANIFEST).read_text())
        assert manifest["forward"] is True
        assert replica.forwarded("team") and not replica.forwarded("other")
        assert replica.published_groups() == []
    finally:
        replica.close()
        writer.close()

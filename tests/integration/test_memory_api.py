"""``from speakerflow import Memory``: add / ask / search / memory / inject on real stores."""

from __future__ import annotations

import json

import pytest

from speakerflow import Memory
from speakerflow.graphs import GroupBusyError, Home
from speakerflow.memory import GroupNotFoundError, SearchHit, UnknownSpeakerError
from speakerflow.ops.loaders import LoadError
from speakerflow.schemas import KnowledgeItem
from speakerflow.settings import BUNDLED_SAMPLE

ROWS = [json.loads(line) for line in BUNDLED_SAMPLE.read_text().splitlines() if line.strip()]


def test_memory_round_trip(tmp_path):
    with Memory(home=tmp_path, embedder="hashing") as mem:
        first = mem.add("team", ROWS)
        assert (first.ingested, first.already_stored) == (len(ROWS), 0)
        assert first.write.accepted > 0
        again = mem.add("team", ROWS[:5])
        assert (again.ingested, again.already_stored) == (0, 5)

        result = mem.ask("team", "Where will the offsite be?")
        assert "s2-t05" in result.cited_ids(10)
        assert [m.msg_id for m in mem.cited_messages("team", result)] == result.cited_ids()

        hits = mem.search("team", "offsite", speaker="Ana", k=3)
        assert hits and all(isinstance(h, SearchHit) and h.speaker == "Ana" for h in hits)
        with pytest.raises(UnknownSpeakerError, match="Ana"):
            mem.search("team", "offsite", speaker="Zed")

        heads = mem.memory("team")
        assert heads and all(
            isinstance(r, KnowledgeItem) and r.superseded_by is None for r in heads
        )
        assert all(r.owner == "Ben" for r in mem.memory("team", owner="Ben"))
        assert any(len(c) > 1 for c in mem.history("team"))

        ctx = mem.inject(
            "team", {"content": "offsite in Porto?", "ts": "2026-03-07T10:00:00Z"}, user="Ana"
        )
        assert ctx.tokens >= 0 and isinstance(ctx.text(), str)

        with pytest.raises(GroupNotFoundError):
            mem.ask("nobody", "anything?")
        with pytest.raises(ValueError, match="invalid group id"):
            mem.ask("../etc", "anything?")
        with pytest.raises(LoadError, match="row 0: field .speaker."):
            mem.add("team", [{"msg_id": "x", "ts": "2026-03-07T10:00:00Z", "text": "no speaker"}])
        with pytest.raises(LoadError, match="line 2: invalid JSON"):
            mem.add("team", json.dumps(ROWS[0]) + "\n{oops\n")
        assert mem.add("team", str(BUNDLED_SAMPLE), write=False).already_stored == len(ROWS)
        with pytest.raises(LoadError, match="other group"):
            mem.add("team", [{**ROWS[0], "group_id": "other"}])
        # the group stays open (and locked for other writers) until close()
        with pytest.raises(GroupBusyError):
            Home(tmp_path).open("team", writable=True)
    Home(tmp_path).open("team", writable=True).close()


def test_read_only_memory_sees_what_was_written(tmp_path):
    with Memory(home=tmp_path, embedder="none") as mem:
        mem.add("team", ROWS)
    with Memory(home=tmp_path, embedder="none", read_only=True) as ro:
        assert "s2-t05" in ro.ask("team", "Where will the offsite be?").cited_ids(10)
        with pytest.raises(PermissionError):
            ro.add("fresh", ROWS[:1])


def test_threads_share_one_memory(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    with Memory(home=tmp_path, embedder="hashing") as mem:

        def work(i: int) -> list[str]:
            group = f"g{i % 3}"
            batch = [{**r, "msg_id": f"{r['msg_id']}-{i}"} for r in ROWS[:8]]
            mem.add(group, batch)
            return mem.ask(group, "Where will the offsite be?").cited_ids()

        with ThreadPoolExecutor(max_workers=6) as pool:
            cited = list(pool.map(work, range(12)))
        assert all(cited)
        assert sorted(mem.groups()) == ["g0", "g1", "g2"]
        assert all(mem.stats(g)["messages"] == 32 for g in ("g0", "g1", "g2"))


def test_least_recently_used_groups_are_closed(tmp_path):
    with Memory(home=tmp_path, embedder="none", max_open=2) as mem:
        for g in ("g0", "g1", "g2"):
            mem.add(g, ROWS[:6])
        assert len(mem._groups) == 2 and "g0" not in mem._groups
        Home(tmp_path).open("g0", writable=True).close()  # its writer lock was released
        with mem.use("g1") as store:  # a group in use is never closed under its user
            assert mem.search("g0", "offsite") is not None and store._lock_fd is not None
        assert mem.ask("g2", "Where will the offsite be?").cited_ids() is not None
        assert len(mem._groups) == 2


def test_reads_use_a_snapshot_and_never_wait_for_a_write(tmp_path):
    """ask/search answer from the last complete write while the group's lock is held (a
    write running); an append with a write pending stays out of reads until the write
    lands; a plain append is read at once; forget drops the snapshot."""
    import threading
    import time

    new = {
        "msg_id": "late-1",
        "ts": "2026-03-20T10:00:00Z",
        "speaker": "Ana",
        "text": "Zanzibar replaces Porto as the offsite venue.",
    }
    with Memory(home=tmp_path, embedder="hashing") as mem:
        mem.add("team", ROWS)
        before = mem.ask("team", "Where will the offsite be?")
        held, release = threading.Event(), threading.Event()

        def writer_holding_the_group():
            with mem.use("team"):
                held.set()
                release.wait(30)

        t = threading.Thread(target=writer_holding_the_group)
        t.start()
        assert held.wait(10)
        try:
            start = time.perf_counter()
            during = mem.ask("team", "Where will the offsite be?")
            hits = mem.search("team", "offsite")
            took = time.perf_counter() - start
        finally:
            release.set()
            t.join()
        assert took < 5 and during.stats["group_wait_ms"] < 1000
        assert during.cited_ids() == before.cited_ids() and hits

        # a queued write: the appended message is not read until the write has run
        assert mem.append("team", [new], pending_write=True).ingested == 1
        assert not mem.search("team", "zanzibar")
        mem.write("team")
        assert [h.msg_id for h in mem.search("team", "zanzibar")] == ["late-1"]

        # without a pending write a read takes a new snapshot at once
        mem.append("team", [{**new, "msg_id": "late-2", "text": "Quokkas at the venue."}])
        assert [h.msg_id for h in mem.search("team", "quokkas")] == ["late-2"]

        mem.forget("team", message_ids=["late-1", "late-2"])
        assert not mem.search("team", "zanzibar") and not mem.search("team", "quokkas")


def test_reads_run_beside_appends_and_writes_of_the_same_group(tmp_path):
    """Threads asking and searching one group while others append and write it: no read
    fails or waits for a write, and every appended message is found once written."""
    import threading
    import time

    errors: list[str] = []
    stop = threading.Event()
    with Memory(home=tmp_path, embedder="hashing") as mem:
        mem.add("team", ROWS)

        def reader(i: int) -> None:
            n = 0
            while not stop.is_set():
                try:
                    if n % 2:
                        assert mem.search("team", "offsite porto")
                    else:
                        assert mem.ask("team", "Where will the offsite be?").cited_ids()
                except Exception as exc:  # noqa: BLE001 - collected and asserted below
                    errors.append(f"reader {i}: {type(exc).__name__}: {exc}")
                n += 1

        def writer(i: int) -> None:
            for n in range(4):
                msgs = [
                    {
                        "msg_id": f"w{i}-{n}-{j}",
                        "ts": f"2026-04-0{1 + n}T10:0{j}:00Z",
                        "speaker": "Ben",
                        "text": f"Reminder {i} {n} {j}: quokka{i}x{n} tickets are booked.",
                    }
                    for j in range(3)
                ]
                try:
                    mem.append("team", msgs, pending_write=True)
                    mem.write("team")
                except Exception as exc:  # noqa: BLE001
                    errors.append(f"writer {i}: {type(exc).__name__}: {exc}")

        readers = [threading.Thread(target=reader, args=(i,)) for i in range(6)]
        writers = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
        for t in readers + writers:
            t.start()
        for t in writers:
            t.join(120)
        time.sleep(0.2)
        stop.set()
        for t in readers:
            t.join(60)
        assert not errors, errors[:5]
        for i in range(2):
            for n in range(4):
                assert {h.msg_id for h in mem.search("team", f"quokka{i}x{n}", k=10)} == {
                    f"w{i}-{n}-{j}" for j in range(3)
                }

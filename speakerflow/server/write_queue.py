"""The background write queue: :meth:`Memory.write <speakerflow.memory.Memory.write>` (the
Writer, the embeddings of the new rows, a new read snapshot) after appends, one job per group
at a time, at a lower CPU priority than the reads, with its state and progress per group."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

log = logging.getLogger("speakerflow.server")


def lower_thread_priority(nice: int) -> None:
    """Raise the calling thread's nice value by ``nice`` (Linux, where the nice value is per
    thread; elsewhere nothing, since there it would apply to the whole process)."""
    if nice > 0 and sys.platform.startswith("linux"):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), os.nice(0) + nice)


class WriteQueue:
    """Runs ``memory.write(group, progress=...)`` (Writer + embeddings + a new read snapshot)
    after appends: at most one job per group at a time (appends while it runs make it run
    once more), groups in parallel on ``workers`` threads, run at ``nice`` (Linux: those
    threads only, so reads get the cores first; threads the stores start from them inherit
    it). A job starts ``coalesce`` seconds after it is queued, so a burst of appends to a
    group is written (and embedded) in one run; a rerun (appends arrived while it ran) waits
    at least as long as the run took, so under a steady stream of appends the Writer holds a
    group about half the time at most.

    :meth:`status` never waits for a write: the state (``queued``, ``running``, ``idle``,
    ``failed``: the last run raised and nothing is queued), the messages appended and not
    yet written, the running write's ``progress`` (phase ``writer`` with messages and
    Writer windows done of their totals, then ``embedding`` and ``snapshot``) and the last
    error."""

    def __init__(self, memory: Any, workers: int = 2, coalesce: float = 1.0, nice: int = 10):
        self.memory = memory
        self.coalesce = coalesce
        self.pool = ThreadPoolExecutor(
            max_workers=workers,
            thread_name_prefix="speakerflow-write",
            initializer=lower_thread_priority,
            initargs=(nice,),
        )
        self._state: dict[str, dict[str, Any]] = {}
        self._timers: set[threading.Timer] = set()
        self._closed = False
        self._lock = threading.Condition()

    def _entry(self, group: str) -> dict[str, Any]:
        return self._state.setdefault(
            group,
            {
                "state": "idle",
                "pending_messages": 0,
                "writes": 0,
                "progress": None,
                "again": False,
                "last_write": None,
                "last_write_at": None,
                "last_error": None,
                "last_error_at": None,
            },
        )

    def _schedule(self, group: str, delay: float | None = None) -> None:
        """Start the group's job after ``delay`` (default ``coalesce``) seconds (call with
        the lock held)."""
        if self._closed:
            return
        delay = self.coalesce if delay is None else delay
        if delay <= 0:
            self.pool.submit(self._run, group)
            return

        def fire() -> None:
            with self._lock:
                self._timers.discard(timer)
                if self._closed:
                    return
                self.pool.submit(self._run, group)

        timer = threading.Timer(delay, fire)
        timer.daemon = True
        self._timers.add(timer)
        timer.start()

    def submit(self, group: str, new_messages: int) -> Literal["queued", "running"]:
        """Queue a write of ``group``; returns the state it is now in (queued/running)."""
        with self._lock:
            st = self._entry(group)
            st["pending_messages"] += new_messages
            if st["state"] == "running":
                st["again"] = True
                return "running"
            if st["state"] == "queued":
                return "queued"
            st["state"] = "queued"
            self._schedule(group)
        return "queued"

    def _progress(self, st: dict[str, Any], started: float):
        """The callback the write reports its progress to (``phase`` and counters)."""

        def report(**fields: Any) -> None:
            with self._lock:
                progress = st["progress"]
                if progress is not None:
                    progress.update(fields)
                    progress["elapsed_s"] = round(time.monotonic() - started, 2)

        return report

    def _run(self, group: str) -> None:
        started = time.monotonic()
        with self._lock:
            st = self._entry(group)
            taking = st["pending_messages"]
            st.update(
                state="running",
                again=False,
                pending_messages=0,
                progress={"phase": "starting", "appended": taking, "elapsed_s": 0.0},
            )
        report, error = None, None
        try:
            report = self.memory.write(group, progress=self._progress(st, started))
        except Exception as exc:  # noqa: BLE001 - reported on the status endpoint and the log
            error = f"{type(exc).__name__}: {exc}"
            log.exception("background write of group %r failed", group)
        with self._lock:
            st["writes"] += 1
            st["progress"] = None
            st["last_write_at"] = time.time()
            if error is not None:
                st["last_error"], st["last_error_at"] = error, st["last_write_at"]
            if report is not None:
                st["last_write"] = {
                    "summary": report.summary(),
                    "accepted": report.accepted,
                    "rejected": report.rejected,
                    "messages": report.messages,
                    "seconds": round(report.seconds, 3),
                    "wall_s": round(time.monotonic() - started, 3),
                }
            if st["again"] and not self._closed:
                st["state"] = "queued"
                # the Writer holds the group at most about half the time under a steady stream
                self._schedule(
                    group,
                    max(self.coalesce, time.monotonic() - started) if self.coalesce > 0 else 0,
                )
            else:
                st["state"] = "failed" if error is not None else "idle"
            self._lock.notify_all()

    def status(self, group: str) -> dict[str, Any]:
        """The group's write state (never waits for the write itself)."""
        with self._lock:
            st = dict(self._entry(group))
            if st["progress"] is not None:
                st["progress"] = dict(st["progress"])
        st.pop("again", None)
        return st

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Block until no group has a queued or running write (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while any(s["state"] in ("queued", "running") for s in self._state.values()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
        return True

    def close(self) -> None:
        """Run the writes already queued, then stop (appends after this are not written
        until the next start: the write path picks up unwritten messages then)."""
        with self._lock:
            timers = list(self._timers)
        for t in timers:  # queued jobs run now instead of after their delay
            t.cancel()
        with self._lock:
            self._closed = True
            pending = [g for g, s in self._state.items() if s["state"] == "queued"]
            self._timers.clear()
        for g in pending:
            self.pool.submit(self._run, g)
        self.pool.shutdown(wait=True)

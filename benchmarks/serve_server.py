"""A real ``speakerflow serve`` in a subprocess on 127.0.0.1, for the serving benchmarks and
tests: started on a free port, ready when it says so, stopped on exit; the CPU seconds and
memory of its whole process tree (the supervisor, the writer and reader processes of
``--workers N``)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

_SERVE = "import sys; from speakerflow.cli import main; sys.exit(main())"
#: the line ``speakerflow serve`` prints once every process is warm
READY_LINE = "speakerflow serve: ready on "


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_kib(pid: int, field: str) -> int | None:
    """A ``/proc/<pid>/status`` field in KiB (``VmRSS``, ``VmHWM``), ``None`` if gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def proc_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) process ``pid`` has used, ``None`` if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """``pid`` and every descendant alive now (from ``/proc/*/stat``)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


class Server:
    """``speakerflow serve`` in a subprocess on 127.0.0.1 (stopped on exit).

    Ready when ``/healthz`` answers and, for a server that reports its role (this tree's),
    once it printed :data:`READY_LINE` (with ``--workers N`` every reader is warm then).
    ``ready_s``: seconds from the start to ready. ``extra``: more ``serve`` arguments."""

    def __init__(
        self,
        home: Path,
        keys: dict[str, list[str]],
        embedder: str,
        start_timeout: float = 300.0,
        reads: str = "snapshot",
        batch_queries: bool = True,
        ask_threads: int = 32,
        write_nice: int = 10,
        workers: int = 1,
        store: Path | None = None,
        extra: tuple[str, ...] = (),
    ):
        self.home = home
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = home / "server.log"
        env = {**os.environ, "SPEAKERFLOW_API_KEYS": json.dumps(keys)}
        env.pop("SPEAKERFLOW_HOME", None)
        self._log_fh = self.log.open("w")
        started = time.monotonic()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _SERVE,
                "serve",
                "--home",
                str(store or home / "store"),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--embedder",
                embedder,
                "--log-level",
                "warning",
                "--reads",
                reads,
                "--ask-threads",
                str(ask_threads),
                "--write-nice",
                str(write_nice),
                *([] if batch_queries else ["--no-query-batching"]),
                *([] if workers == 1 else ["--workers", str(workers)]),
                *extra,
            ],
            stdout=self._log_fh,
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = started + start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"server exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}"
                )
            if self._ready():
                self.ready_s = time.monotonic() - started
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server was not ready within {start_timeout:.0f}s")

    def _ready(self) -> bool:
        try:
            r = httpx.get(self.url + "/healthz", timeout=2.0)
        except httpx.HTTPError:
            return False
        if r.status_code != 200:
            return False
        return "role" not in r.json() or READY_LINE in self.log.read_text()

    def pids(self) -> list[int]:
        return process_tree(self.proc.pid)

    def cpu_by_process(self) -> dict[str, float]:
        """CPU seconds (user + system) each of the server's processes has used so far, by
        role: ``server`` (the process started: the whole server with ``--workers 1``, the
        supervisor otherwise), ``writer``, ``reader 0`` ... (from the log's ``[role pid]``
        lines), ``other`` (e.g. multiprocessing's resource tracker)."""
        roles = {
            int(pid): role
            for role, pid in re.findall(r"\[(writer|reader \d+) (\d+)\]", self.log.read_text())
        }
        out: dict[str, float] = {}
        for pid in self.pids():
            cpu = proc_cpu_s(pid)
            if cpu is not None:
                role = "server" if pid == self.proc.pid else roles.get(pid, "other")
                out[role] = out.get(role, 0.0) + cpu
        return out

    def rss_mb(self) -> tuple[float | None, float | None]:
        """RSS now and peak, summed over the server's processes (pages they share, such
        as the model files, count once per process)."""
        now = [proc_kib(p, "VmRSS") for p in self.pids()]
        peak = [proc_kib(p, "VmHWM") for p in self.pids()]
        total = sum(v for v in now if v)
        top = sum(v for v in peak if v)
        return (round(total / 1024, 1) if total else None, round(top / 1024, 1) if top else None)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log_fh.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

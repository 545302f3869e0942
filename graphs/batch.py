"""Write-ahead batch manifests and named fault points for crash-consistent writes.

A write that touches more than one store (Parquet, Kuzu, Tantivy, ``group.json``) first
writes ``<group>/batch.json`` (atomically: temp file, fsync, rename), then runs its steps,
each of which is idempotent, and removes the manifest last. If the process dies in between,
the next writable open of the group finds the manifest and completes or rolls back the
batch (:meth:`speakerflow.graphs.GroupStore.recover`). Readers hide what a pending
manifest names, so they see the last complete batch.

Fault points: ``failpoint("messages.indexed")`` does nothing unless the environment asks:

* ``SPEAKERFLOW_FAILPOINT=NAME`` (or ``NAME@N`` for the N-th time the point is reached in
  this process) sends SIGKILL to this process there (``SPEAKERFLOW_FAILPOINT_ACTION=pause``
  prints ``paused at NAME`` to stderr and sleeps instead, for an outside killer);
* ``SPEAKERFLOW_FAILPOINT_LOG=FILE`` appends each point reached, one name per line (the
  fault benchmark lists the step boundaries of a clean run this way).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from speakerflow.settings import setting

MANIFEST = "batch.json"
_HITS: Counter[str] = Counter()


def failpoint(name: str) -> None:
    """A named step boundary: log it and, when the environment names it, die (or pause) here."""
    log = setting("failpoint_log")
    if log:
        with open(log, "a") as fh:
            fh.write(name + "\n")
    spec = setting("failpoint")
    if not spec:
        return
    _HITS[name] += 1
    target, _, nth = spec.partition("@")
    if target != name or _HITS[name] != (int(nth) if nth else 1):
        return
    if setting("failpoint_action") == "pause":
        print(f"paused at {name}", file=sys.stderr, flush=True)
        time.sleep(3600)
        return
    os.kill(os.getpid(), signal.SIGKILL)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json_atomic(path: Path, obj: Any, fsync: bool = False) -> None:
    """Write JSON to ``path`` via a temp file and a rename (never half a file)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as fh:
        fh.write(json.dumps(obj, indent=1, sort_keys=True, default=str))
        if fsync:
            fh.flush()
            os.fsync(fh.fileno())
    tmp.replace(path)
    if fsync:
        _fsync_dir(path.parent)


def begin(root: Path, manifest: dict[str, Any]) -> None:
    """Record the batch about to be written (the write-ahead record)."""
    write_json_atomic(Path(root) / MANIFEST, manifest, fsync=True)


def pending(root: Path) -> dict[str, Any] | None:
    """The manifest of an unfinished batch, or ``None``."""
    path = Path(root) / MANIFEST
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except json.JSONDecodeError:  # cannot happen with the rename; treat as no batch
        return None


def end(root: Path) -> None:
    """The batch is complete in every store."""
    (Path(root) / MANIFEST).unlink(missing_ok=True)

"""``python -m speakerflow.benchmarks.scale ingest-ab``: the ingest path of an earlier git
revision against the current one, in one process on the same stream."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .scale_stream import WHOLE, folder_bytes, slices, synthetic_stream

# -- the sweep --------------------------------------------------------------------------------
#: the store code an ``ingest-ab`` compares against: the commit before issue 15's ingest work
#: of this session (Kuzu COPY on every core beside a one-thread Tantivy writer per commit)
INGEST_AB_REV = "a47a5df"
#: the files of ``graphs/`` that make up the ingest path (loaded from the revision together)
INGEST_FILES = ("store.py", "text_index.py", "kuzu_graph.py", "batch.py")


def _store_at(rev: str) -> Any:
    """``graphs/store.py`` of git revision ``rev`` with its ingest-path siblings
    (:data:`INGEST_FILES`) of the same revision, imported as a package of their own beside
    :mod:`speakerflow.graphs` (other siblings, imported lazily, are today's)."""
    import importlib
    import types

    from speakerflow import graphs

    pkg_name = f"speakerflow.graphs._at_{re.sub(r'[^A-Za-z0-9_]', '_', rev)}"
    if f"{pkg_name}.store" in sys.modules:  # loaded before in this process
        return sys.modules[f"{pkg_name}.store"]
    here = Path(graphs.__file__).resolve().parent
    folder = Path(tempfile.mkdtemp(prefix=f"speakerflow-store-{rev}-"))
    atexit.register(shutil.rmtree, folder, True)  # removed when this process exits
    for name in INGEST_FILES:
        source = subprocess.run(
            ["git", "show", f"{rev}:graphs/{name}"],
            capture_output=True,
            text=True,
            check=True,
            cwd=here.parent,
        ).stdout
        (folder / name).write_text(source)
    pkg = types.ModuleType(pkg_name)
    pkg.__path__ = [str(folder), str(here)]
    pkg.__package__ = pkg_name
    sys.modules[pkg_name] = pkg
    return importlib.import_module(f"{pkg_name}.store")


def ingest_ab(
    n: int = 100_000,
    rev: str = INGEST_AB_REV,
    batch: int = WHOLE,
    rounds: int = 2,
    seed: int = 7,
    workdir: str | Path | None = None,
) -> dict[str, Any]:
    """Ingest throughput of the store code at git revision ``rev`` (:data:`INGEST_FILES` of
    that revision) against the current code, in this process, alternating, each into a
    fresh home, the big group in appends of ``batch`` (0: one append of all; the clock
    stops after the store is closed, so background merges are counted). Also the current
    code's per-step wall seconds (:meth:`~speakerflow.graphs.GroupStore.ingest_profile`) of
    its last round, and bytes on disk per message of each."""
    from speakerflow.graphs import store as new_store

    old = _store_at(rev)
    table = synthetic_stream(n, "one", seed)
    out: dict[str, Any] = {
        "messages": n,
        "batch": batch if batch > 0 else n,
        "rev": rev,
        "cpu_count": os.cpu_count(),
        "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
    }
    for _ in range(rounds):
        for label, cls in (("before", old.GroupStore), ("after", new_store.GroupStore)):
            with tempfile.TemporaryDirectory(prefix="speakerflow-ab-", dir=workdir) as tmp:
                t0, cpu0 = time.perf_counter(), time.process_time()
                with cls(Path(tmp) / "big", "big", writable=True) as st:
                    for lo, size in slices(n, batch):
                        st.append_messages(table.slice(lo, size))
                seconds = time.perf_counter() - t0
                out.setdefault(f"{label}_messages_per_s", []).append(round(n / seconds, 1))
                # CPU of all threads (Kuzu's, Tantivy's): the cost less the machine's load
                cpu_us = 1e6 * (time.process_time() - cpu0) / n
                out.setdefault(f"{label}_cpu_us_per_message", []).append(round(cpu_us, 1))
                out[f"{label}_bytes_per_message"] = round(folder_bytes(Path(tmp)) / n, 1)
                if hasattr(st, "ingest_profile"):
                    out[f"{label}_profile_s"] = {"total": round(seconds, 3), **st.ingest_profile()}
    out["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    return out

"""Concurrent writers, for real (separate processes, on-disk stores, rules Writer):

* two processes writing one group: the second waits up to ``wait_s`` and then fails with
  a clear GroupBusyError, writes nothing, and succeeds once the first is done; nothing
  of either batch is lost or doubled;
* 8 groups written in parallel processes: every record's evidence resolves in its own
  group only.
"""

from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest

from speakerflow.graphs import GroupBusyError, Home
from speakerflow.graphs.audit import audit
from speakerflow.graphs.records import all_records, written_ids
from speakerflow.ops.loaders import load
from speakerflow.pipelines.write_path import write_group
from speakerflow.settings import BUNDLED_SAMPLE

pytestmark = pytest.mark.timeout(600)


def _messages(group: str, part: slice = slice(None)) -> pa.Table:
    """The bundled chat as group ``group``: ids prefixed with the group (unique across groups)."""
    table = load(BUNDLED_SAMPLE, "jsonl", group=group)[0][1]
    rows = table.to_pylist()[part]
    for r in rows:
        r["msg_id"], r["group_id"] = f"{group}:{r['msg_id']}", group
    return pa.Table.from_pylist(rows, schema=table.schema)


def _ingest_and_write(root: str, group: str, part: slice, wait_s: float = 0.0) -> int:
    with Home(Path(root)).open(group, writable=True, wait_s=wait_s) as store:
        store.append_messages(_messages(group, part))
        return write_group(store, "rules", progress=False).accepted


def _writer_holding(root: str, group: str, part: slice, holding, release) -> None:
    """Ingest, then hold the lock (as a long write would) until ``release``, then write records."""
    with Home(Path(root)).open(group, writable=True) as store:
        store.append_messages(_messages(group, part))
        holding.set()
        release.wait(300)
        write_group(store, "rules", progress=False)


def _check_group(root: Path, group: str, n_expected: int) -> dict:
    with Home(root).open(group) as store:
        msgs = store.messages().to_pylist()
        recs = all_records(store)
        done = written_ids(store)
        problems = audit(store)
    ids = [m["msg_id"] for m in msgs]
    return {
        "n": len(msgs),
        "unique": len(set(ids)),
        "expected": n_expected,
        "ids": set(ids),
        "records": recs,
        "unwritten": set(ids) - set(done),
        "audit": problems,
    }


def _disagreements(problems: dict) -> dict:
    """The non-zero disagreement counts of :func:`audit` (``messages``/``records`` are sizes)."""
    return {k: v for k, v in problems.items() if k not in ("messages", "records") and v}


def test_second_writer_of_a_group_waits_then_fails_clearly_and_nothing_is_lost(tmp_path):
    ctx = mp.get_context("spawn")
    holding, release = ctx.Event(), ctx.Event()
    first = ctx.Process(
        target=_writer_holding, args=(str(tmp_path), "team", slice(0, 16), holding, release)
    )
    first.start()
    try:
        assert holding.wait(300)
        with pytest.raises(GroupBusyError) as err:
            _ingest_and_write(str(tmp_path), "team", slice(16, None), wait_s=0.5)
        msg = str(err.value)
        assert (
            "'team'" in msg
            and "another process" in msg
            and "waited 0.5 s" in msg
            and "SPEAKERFLOW_LOCK_WAIT" in msg
        )
    finally:
        release.set()
        first.join(300)
    assert first.exitcode == 0
    with Home(tmp_path).open("team") as store:  # the refused writer wrote nothing
        assert store.messages().num_rows == 16
    # a second writer that waits long enough gets the lock once the first is done
    assert _ingest_and_write(str(tmp_path), "team", slice(16, None), wait_s=300) >= 0
    state = _check_group(tmp_path, "team", 32)
    total = _messages("team").num_rows
    assert state["n"] == state["unique"] == total  # nothing lost, nothing doubled
    assert not state["unwritten"]  # both batches went through the Writer
    assert state["records"] and all(set(r["from_ids"]) <= state["ids"] for r in state["records"])
    assert _disagreements(state["audit"]) == {}, state["audit"]


def _in_processes(calls: list[tuple]) -> list:
    """``_ingest_and_write(*call)`` for each call, each in its own spawned process, all at
    once. A ProcessPoolExecutor waits for its workers on exit; ``multiprocessing.Pool``'s
    context manager terminates them instead, and once hung in that (a replacement worker
    started while the pool was being terminated was joined forever)."""
    with ProcessPoolExecutor(len(calls), mp_context=mp.get_context("spawn")) as ex:
        return list(ex.map(_ingest_and_write, *zip(*calls, strict=True)))


def test_two_waiting_writers_of_one_group_both_land(tmp_path):
    results = _in_processes(
        [
            (str(tmp_path), "team", slice(0, 16), 300.0),
            (str(tmp_path), "team", slice(16, None), 300.0),
        ]
    )
    assert len(results) == 2
    state = _check_group(tmp_path, "team", 32)
    assert state["n"] == state["unique"] == _messages("team").num_rows
    assert not state["unwritten"]
    assert _disagreements(state["audit"]) == {}, state["audit"]


GROUPS = [f"g{i}" for i in range(8)]


def test_eight_groups_in_parallel_keep_their_evidence_in_their_own_group(tmp_path):
    results = _in_processes([(str(tmp_path), g, slice(None), 0.0) for g in GROUPS])
    assert all(accepted > 0 for accepted in results), results
    states = {g: _check_group(tmp_path, g, 32) for g in GROUPS}
    all_ids = {g: s["ids"] for g, s in states.items()}
    for g, s in states.items():
        assert s["n"] == s["unique"] == _messages(g).num_rows and not s["unwritten"]
        assert s["records"]
        for r in s["records"]:
            assert r["group_id"] == g
            assert r["from_ids"] and set(r["from_ids"]) <= all_ids[g], (g, r["from_ids"])
            for other in GROUPS:
                if other != g:
                    assert not set(r["from_ids"]) & all_ids[other]
        assert _disagreements(s["audit"]) == {}, (g, s["audit"])
    # the same chat gives the same records in every group (no group saw another's state)
    shapes = {
        g: sorted((r["owner"], r["layer"], r["content"]) for r in s["records"])
        for g, s in states.items()
    }
    assert len({tuple(v) for v in shapes.values()}) == 1

"""Appending messages to a group's verbatim track: checked, deduplicated by ``msg_id``, then
written to Parquet, Kuzu and Tantivy as one all-or-nothing batch
(:meth:`GroupStore.append_messages <speakerflow.graphs.store.GroupStore.append_messages>`
calls :func:`append_messages`)."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from speakerflow.schemas import MESSAGE_SCHEMA

from . import batch
from .batch import failpoint
from .tables import MESSAGE_ORDER, IngestResult, StoreError, conform
from .text_index import index_threads


def append_messages(store: Any, table: pa.Table) -> IngestResult:
    """Append messages to ``store``; rows whose ``msg_id`` is already stored are skipped.

    All or nothing, also across a crash: the batch is checked first, staged as a Parquet
    temp part, recorded in a batch manifest (``batch.json``), then written to Kuzu (one
    COPY), Tantivy (one commit), the part renamed into place and the roster saved; the
    manifest is removed last. A failure in a step undoes the earlier ones; a process
    killed in between is completed on the next writable open (:func:`.recovery.recover`).
    """
    store._require_writable()
    t0 = time.perf_counter()
    where = f"group {store.group_id!r}"
    table = conform(table, MESSAGE_SCHEMA, where)
    bad = pc.not_equal(table["group_id"], store.group_id)
    if pc.any(bad).as_py():
        row = pc.index(bad, True).as_py()
        raise StoreError(
            f"{where}: row {row}: field 'group_id' is {table['group_id'][row].as_py()!r}; "
            "a group's store only takes its own messages"
        )
    t1 = time.perf_counter()
    store.timings["validate"] += t1 - t0
    keep, repeats = new_rows(store, table["msg_id"])
    if len(repeats):  # a repeat is skipped only if it is the same message, never replaced
        _check_repeats(store, table, keep, repeats, where)
    result = IngestResult(store.group_id, added=len(keep), skipped=table.num_rows - len(keep))
    if not len(keep):
        store.timings["dedup"] += time.perf_counter() - t1
        return result
    new = table.take(pa.array(keep)) if len(keep) < table.num_rows else table
    known = set(store.roster())
    result.new_speakers = [s for s in pc.unique(new["speaker"]).to_pylist() if s not in known]
    before = store._msg_ids()
    store.timings["dedup"] += time.perf_counter() - t1
    if store.in_memory:
        _write_in_memory(store, new)
        return result
    _write_messages(store, new)
    # the id column grows by the batch; nothing is re-read
    store.__dict__["_stored_ids"] = pa.chunked_array(
        [*before.chunks, *new["msg_id"].chunks], pa.string()
    )
    return result


def new_rows(store: Any, ids: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of a batch to write (first time an id is seen: neither stored nor earlier in
    the batch) and rows to skip, found column-wise: the stored ids are probed against a
    hash of the batch's (``pc.is_in``), not loaded into a Python set."""
    stored = store._msg_ids()
    batch_ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    hits = stored.filter(pc.is_in(stored, value_set=batch_ids)) if len(stored) else stored
    old = (
        pc.is_in(batch_ids, value_set=hits.combine_chunks()).to_numpy(zero_copy_only=False)
        if len(hits)
        else np.zeros(len(batch_ids), dtype=bool)
    )
    first = np.ones(len(batch_ids), dtype=bool)
    distinct = pc.unique(batch_ids)
    if len(distinct) < len(batch_ids):  # repeats inside the batch: only the first counts
        code = pc.index_in(batch_ids, value_set=distinct).to_numpy()
        at = np.full(len(distinct), len(batch_ids))
        np.minimum.at(at, code, np.arange(len(batch_ids)))
        first[:] = False
        first[at] = True
    fresh = first & ~old
    return np.flatnonzero(fresh), np.flatnonzero(~fresh)


def _check_repeats(
    store: Any, table: pa.Table, keep: np.ndarray, repeats: np.ndarray, where: str
) -> None:
    """Raise :class:`StoreError` when a repeated id comes with another text than the
    stored one (or than its first occurrence in the batch)."""
    ids, texts = table["msg_id"].to_pylist(), table["text"].to_pylist()
    wanted = pa.array(sorted({ids[i] for i in repeats}), pa.string())
    stored = store.messages()
    have = stored.filter(pc.is_in(stored["msg_id"], value_set=wanted))
    known = dict(zip(have["msg_id"].to_pylist(), have["text"].to_pylist(), strict=True))
    first: dict[str, str] = {}
    for i in keep:
        first.setdefault(ids[i], texts[i])
    for i in repeats:
        old = known.get(ids[i], first.get(ids[i]))
        if old != texts[i]:
            raise StoreError(
                f"{where}: row {i}: field 'msg_id' {ids[i]!r} is already stored with "
                "different text; messages are immutable (nothing was written)"
            )


def index_columns(new: pa.Table) -> dict[str, list]:
    """The text index's fields of messages as Python columns."""
    n = new.num_rows
    return {
        "doc_id": new["msg_id"].to_pylist(),
        "kind": ["message"] * n,
        "group_id": new["group_id"].to_pylist(),
        "speaker": new["speaker"].to_pylist(),
        "session_id": new["session_id"].to_pylist(),
        "text": new["text"].to_pylist(),
        "ts": new["ts"].to_pylist(),
    }


def index_table(new: pa.Table) -> pa.Table:
    """The text index's fields of messages as Arrow columns (see :func:`index_columns`)."""
    return pa.table(
        {
            "doc_id": new["msg_id"],
            "kind": pa.repeat("message", new.num_rows).cast(pa.string()),
            "group_id": new["group_id"],
            "speaker": new["speaker"],
            "session_id": new["session_id"],
            "text": new["text"],
            "ts": new["ts"],
        }
    )


def next_part(folder: Path) -> str:
    """The name of the next Parquet part of the message folder ``folder``."""
    nums = [
        int(p.stem.split("-")[1])
        for p in folder.glob("part-*.parquet")
        if p.stem.split("-")[1].isdigit()
    ]
    return f"part-{(max(nums) + 1) if nums else 0:06d}.parquet"


def _write_in_memory(store: Any, new: pa.Table) -> None:
    columns = index_columns(new)
    store.index.add(
        [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]
    )
    store._messages = pa.concat_tables([store._messages, new]).sort_by(MESSAGE_ORDER)
    store._add_speakers(pc.unique(new["speaker"]).to_pylist())


def _write_messages(store: Any, new: pa.Table) -> None:
    """Stage the part and the manifest, write graph and index side by side, then rename the
    part into place, save the roster and end the batch."""
    speakers = pc.unique(new["speaker"]).to_pylist()  # in order of first appearance
    timings, clock = store.timings, time.perf_counter
    t0 = clock()
    folder = store.root / "messages"
    folder.mkdir(exist_ok=True)
    part = next_part(folder)
    final, tmp = folder / part, folder / f".{part}.tmp"
    pq.write_table(new, tmp, compression="zstd")  # ~2x smaller than snappy on chat text
    failpoint("messages.staged")
    t1 = clock()
    batch.begin(store.root, {"kind": "messages", "part": part, "rows": new.num_rows})
    failpoint("messages.manifest")
    t2 = clock()
    timings["parquet"] += t1 - t0
    timings["manifest"] += t2 - t1
    _write_graph_and_index(store, new, tmp)
    failpoint("messages.indexed")
    t5 = clock()
    tmp.replace(final)
    if store._messages is not None:
        # the cached table gains the part's rows: what re-reading every part would give
        # (a stable sort), without reading them all again on each append
        store._messages = pa.concat_tables(
            [store._messages, new.cast(store._messages.schema)]
        ).sort_by(MESSAGE_ORDER)
    failpoint("messages.renamed")
    t6 = clock()
    store._add_speakers(speakers)
    failpoint("messages.roster")
    t7 = clock()
    batch.end(store.root)
    failpoint("messages.done")
    timings["roster"] += t7 - t6
    timings["manifest"] += clock() - t7 + t6 - t5  # the rename and the manifest's removal


def _write_graph_and_index(store: Any, new: pa.Table, tmp: Path) -> None:
    """Kuzu's COPY and Tantivy's indexing side by side (both release the GIL: the cores not
    taken by the index writer's threads go to the COPY); on a failure of either, the other
    is undone, the staged part removed, the batch ended and the error raised."""
    timings, clock = store.timings, time.perf_counter
    t2 = clock()
    graph = store.graph  # open in this thread; the COPY runs beside the Tantivy indexing
    index = store.index
    kuzu_threads = max(1, (os.cpu_count() or 1) - index_threads())

    def copy() -> None:
        c0 = clock()
        graph.copy_nodes("Message", new, threads=kuzu_threads)
        timings["kuzu_copy"] += clock() - c0

    t3 = clock()
    timings["open_stores"] += t3 - t2
    with ThreadPoolExecutor(max_workers=1) as pool:
        copied = pool.submit(copy)
        try:
            index.add_table(index_table(new))  # rolls itself back on error
            index_error = None
        except BaseException as exc:  # noqa: BLE001 - re-raised below after undoing the graph
            index_error = exc
        t4 = clock()
        graph_error = copied.exception()
    timings["index"] += t4 - t3
    timings["kuzu_wait"] += clock() - t4  # the COPY still running when the index was done
    if graph_error is None and index_error is None:
        return
    ids = new["msg_id"].to_pylist()
    if graph_error is None:
        graph.execute("MATCH (m:Message) WHERE m.msg_id IN $ids DETACH DELETE m", {"ids": ids})
    if index_error is None:
        index.delete(ids)
    tmp.unlink(missing_ok=True)
    batch.end(store.root)
    if graph_error is not None:
        raise graph_error
    assert index_error is not None  # one of the two failed
    raise index_error

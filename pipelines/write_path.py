"""The SpeakerMem write path for one group: Segmenter >> ForEach(segment: Writer >> Validate >>
Upsert).

:func:`write_group` takes the messages not yet written (the watermark in ``group.json``)
and runs :func:`write_pipeline` over them: Writer >> Validate >> Upsert on one segment at
a time, so each segment's Writer sees the heads the previous segments wrote. The records
are staged in a :class:`~speakerflow.graphs.records.RecordBuffer` and written all or
nothing every ``flush_every`` segments, after which their messages join the watermark:
running it twice writes nothing twice.

>>> from speakerflow.graphs import GroupStore
>>> from speakerflow.ops.loaders import load
>>> from speakerflow.settings import BUNDLED_SAMPLE
>>> store = GroupStore("/tmp/unused", "sample", in_memory=True)
>>> _ = store.append_messages(load(BUNDLED_SAMPLE, "jsonl", group="sample")[0][1])
>>> report = write_group(store, "rules", progress=False)
>>> report.accepted > 0 and report.updates > 0 and write_group(store, "rules", progress=False).segments
0
"""  # noqa: E501

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from speakerflow.graphs.records import BACKENDS_KEY, RecordBuffer, written_ids
from speakerflow.ops.core import ForEach, Pipeline
from speakerflow.ops.core.base import Context
from speakerflow.ops.write.interfaces import WriterBackend
from speakerflow.ops.write.segment import Segmenter
from speakerflow.ops.write.upsert import Upsert
from speakerflow.ops.write.validate import Validate
from speakerflow.ops.write.writer.operator import Writer
from speakerflow.ops.write.writer.registry import make_writer


@dataclass
class WriteReport:
    """What one ``write_group`` run did.

    ``proposed``: actions the backend proposed (a parse error counts as one);
    ``accepted``: ADD + UPDATE actions written; ``rejected``: proposals refused, with
    ``rejects`` (dicts: segment_id, position, payload, reason); ``noops``: NOOPs (proposed,
    or UPDATEs that changed nothing); ``records_by_layer``: records written per layer;
    ``updates``: UPDATE records written; ``tokens``/``model_calls``: model cost;
    ``seconds``: wall time.
    """

    group_id: str
    writer: str
    segments: int = 0
    messages: int = 0
    proposed: int = 0
    accepted: int = 0
    rejected: int = 0
    noops: int = 0
    rejects: list[dict[str, Any]] = field(default_factory=list)
    records_by_layer: dict[str, int] = field(default_factory=dict)
    updates: int = 0
    tokens: int = 0
    model_calls: int = 0
    seconds: float = 0.0
    stats: dict[str, dict[str, float | int]] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for people."""
        layers = ", ".join(f"{k} {v}" for k, v in sorted(self.records_by_layer.items())) or "none"
        return (
            f"{self.group_id}: {self.segments} segment(s), {self.proposed} proposed, "
            f"{self.accepted} written "
            f"({self.updates} updates; {layers}), {self.rejected} rejected, {self.noops} no-op, "
            f"{self.model_calls} model call(s), {self.tokens} tokens, {self.seconds:.2f}s"
        )


def write_group(
    store: Any,
    writer: str | WriterBackend = "rules",
    window: int = 25,
    progress: bool = True,
    flush_every: int = 64,
    on_segment: Callable[[int, int, int, int], None] | None = None,
) -> WriteReport:
    """Run the write path over the group's unwritten messages; returns a :class:`WriteReport`.

    Parameters
    ----------
    store
        A writable :class:`~speakerflow.graphs.GroupStore` (disk or in-memory).
    writer
        A backend name for :func:`~speakerflow.ops.write.writer.registry.make_writer` (``"none"``
        writes nothing and leaves the watermark alone) or a WriterBackend.
    window
        Messages per segment window.
    progress
        Show a tqdm bar over segments.
    flush_every
        Segments staged in memory (:class:`~speakerflow.graphs.records.RecordBuffer`) before
        their records are written in one all-or-nothing batch and their messages added to
        the watermark; 1 writes every segment on its own.
    on_segment
        Called as ``on_segment(segments_done, segments, messages_done, messages)`` after
        each segment's Writer >> Validate >> Upsert (a server's write status).
    """
    start = time.perf_counter()
    backend = make_writer(writer) if isinstance(writer, str) else writer
    report = WriteReport(
        store.group_id, writer if isinstance(writer, str) else getattr(writer, "name", "custom")
    )
    if backend is None:
        return report
    msgs = _unwritten(store)
    report.messages = msgs.num_rows
    if msgs.num_rows == 0:
        report.seconds = time.perf_counter() - start
        return report
    _note_backend(store, backend)
    segmenter, write, validate, upsert = (
        Segmenter(window=window),
        Writer(backend),
        Validate(),
        Upsert(),
    )
    pipeline = write_pipeline(
        segmenter,
        write,
        validate,
        upsert,
        progress=f"write {store.group_id}" if progress else None,
        on_step=None
        if on_segment is None
        else lambda done, total, rows: on_segment(done, total, rows, report.messages),
    )
    buffer = RecordBuffer(store, flush_every=flush_every)
    ctx = Context(store=buffer)
    written = pipeline(msgs, ctx)
    buffer.flush()
    _fill(report, (segmenter, write, validate, upsert), written, ctx)
    report.seconds = time.perf_counter() - start
    return report


def _unwritten(store: Any) -> pa.Table:
    """The group's messages not yet in the watermark (all of them on a first write)."""
    msgs = store.messages()
    done = written_ids(store)
    if done:
        msgs = msgs.filter(pc.invert(pc.is_in(msgs["msg_id"], pa.array(sorted(done), pa.string()))))
    return msgs


def _note_backend(store: Any, backend: WriterBackend) -> None:
    """Add the Writer's name to the backends the group's records came from (group meta)."""
    inner = getattr(backend, "inner", backend)  # forget's AsOfWriter wraps the real one
    name = getattr(inner, "name", type(inner).__name__)
    backends = store.meta(BACKENDS_KEY, [])
    if name not in backends:  # a forget rewrites the records only if rules wrote them all
        store.set_meta(BACKENDS_KEY, sorted({*backends, name}))


def _fill(
    report: WriteReport,
    ops: tuple[Segmenter, Writer, Validate, Upsert],
    written: pa.Table,
    ctx: Context,
) -> None:
    """Copy the operators' counts, the rejects and the written records' layers to ``report``."""
    segmenter, write, validate, upsert = ops
    report.segments = int(write.stats.extra.get("segments", 0))
    report.proposed = write.stats.rows_out
    report.rejects = list(ctx.state.get("rejects", []))
    report.rejected = validate.stats.rejects
    report.noops = int(validate.stats.extra.get("noops", 0))
    report.accepted = int(validate.stats.extra.get("accepted", 0))
    report.records_by_layer = dict(Counter(written["layer"].to_pylist()))
    report.updates = int(upsert.stats.extra.get("updates", 0))
    report.tokens, report.model_calls = write.stats.tokens, write.stats.model_calls
    report.stats = {
        op.op_name: op.stats.as_metadata() for op in (segmenter, write, validate, upsert)
    }


def write_pipeline(
    segmenter: Segmenter | None = None,
    writer: Writer | None = None,
    validate: Validate | None = None,
    upsert: Upsert | None = None,
    progress: str | None = None,
    on_step: Callable[[int, int, int], None] | None = None,
) -> Pipeline:
    """``Segmenter >> ForEach("segment_id", Writer >> Validate >> Upsert)``: the write path as
    one pipeline (defaults: window 25, the Writer's backend from ``ctx.backends["writer"]``).

    Call it with a message table and a :class:`~speakerflow.ops.Context` whose ``store`` is a
    writable GroupStore (or a :class:`~speakerflow.graphs.records.RecordBuffer` around one);
    it returns the records it wrote. ``on_step``: the :class:`ForEach` callback after each
    segment.
    """
    return (segmenter or Segmenter()) >> ForEach(
        "segment_id",
        (writer or Writer()) >> (validate or Validate()) >> (upsert or Upsert()),
        progress=progress,
        on_step=on_step,
    )

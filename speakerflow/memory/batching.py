"""One model call for the questions of concurrent asks: the process embedder with the one-text
calls of threads running side by side encoded together."""

from __future__ import annotations

import threading
from typing import Any


class _Memo(dict):
    """The query-vector memo of :func:`~speakerflow.ops.text.embed.encode_query`, safe when
    several threads evict at once (a missing key pops as ``None``; iteration works on a
    copy of the keys)."""

    def pop(self, key, *default):
        return super().pop(key, None)

    def __iter__(self):
        return iter(tuple(dict.keys(self)))


class _Slot:
    __slots__ = ("done", "error", "lead", "text", "vec")

    def __init__(self, text: str):
        self.text = text
        self.vec: Any = None
        self.error: BaseException | None = None
        self.lead = False
        self.done = threading.Event()


class BatchingEmbedder:
    """The process embedder with the one-text calls of concurrent threads (the question
    and issue vectors of asks running side by side) encoded together in one model call.

    MiniLM on torch cost about 12 ms CPU for one short question and about 3 ms per question
    in a batch of 8, most of a single call being per-call overhead; the int8 ONNX default
    costs about 2 ms for one question on an idle core (docs/scaling.md), so batching matters
    less with it. No timer: a call finding the model idle runs at once (alone, as before);
    calls arriving while it runs wait and go together in the next batch, run by the first
    of them. Calls with several texts (ingest-time embeddings) go straight through. With
    torch or fp32 ONNX, vectors differ from one-text calls by float rounding only (max 2e-7
    measured); int8 scales activations per call, so a batched vector differs slightly
    (cosine about 0.99 to the one-text vector)."""

    def __init__(self, inner: Any, max_batch: int = 64):
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._pending: list[_Slot] = []
        self._busy = False
        self.calls = 0  # model calls made for one-text requests (and the requests, below)
        self.requests = 0
        self._query_memo = _Memo()

    def encode(self, texts: list[str]):
        if len(texts) != 1:
            return self.inner.encode(texts)
        slot = _Slot(texts[0])
        with self._lock:
            self.requests += 1
            self._pending.append(slot)
            slot.lead = not self._busy
            self._busy = True
        while not slot.lead:
            slot.done.wait()
            if slot.vec is not None or slot.error is not None:
                break
            slot.done.clear()  # promoted: run the next batch (it starts with this call)
        if slot.lead:
            self._run_batch()
        if slot.error is not None:
            raise slot.error
        return slot.vec[None, :]

    def _run_batch(self) -> None:
        with self._lock:
            batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
            self.calls += 1
        texts = list(dict.fromkeys(s.text for s in batch))
        try:
            vecs = self.inner.encode(texts)
            by_text = {t: vecs[i] for i, t in enumerate(texts)}
            for s in batch:
                s.vec = by_text[s.text]
        except BaseException as exc:  # noqa: BLE001 - every waiting call gets the error
            for s in batch:
                s.error = exc
        with self._lock:
            nxt = self._pending[0] if self._pending else None
            if nxt is None:
                self._busy = False
            else:
                nxt.lead = True
        for s in batch:
            s.done.set()
        if nxt is not None:
            nxt.done.set()


_BATCHING_LOCK = threading.Lock()


def batching_embedder(config) -> BatchingEmbedder | None:
    """The process embedder for ``config``, wrapped once in :class:`BatchingEmbedder` and
    put back where the query path finds it (so every ask of this process shares it)."""
    from speakerflow.pipelines import query_path

    emb = query_path.embedder_for(config)
    if emb is None or isinstance(emb, BatchingEmbedder):
        return emb
    with _BATCHING_LOCK:
        emb = query_path._EMBEDDERS.get(config.embedder)
        if emb is not None and not isinstance(emb, BatchingEmbedder):
            emb = query_path._EMBEDDERS[config.embedder] = BatchingEmbedder(emb)
        return emb

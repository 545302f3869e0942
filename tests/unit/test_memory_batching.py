"""BatchingEmbedder: concurrent one-text encodes share model calls and get their own vectors."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from speakerflow.memory import BatchingEmbedder
from speakerflow.ops.text.embed import HashingEmbedder, encode_query

pytestmark = pytest.mark.timeout(60)


class SlowHashing(HashingEmbedder):
    """The hashing embedder with a fixed cost per call (as a model's per-call overhead),
    recording the batch sizes it was called with."""

    def __init__(self):
        super().__init__(dim=64)
        self.sizes: list[int] = []

    def encode(self, texts):
        self.sizes.append(len(texts))
        time.sleep(0.05)
        return super().encode(texts)


def test_concurrent_questions_are_encoded_together_with_the_right_vectors():
    inner = SlowHashing()
    emb = BatchingEmbedder(inner)
    reference = HashingEmbedder(dim=64)
    texts = [f"what did person {i} say about the train?" for i in range(24)] + ["same question"] * 8
    out: dict[int, np.ndarray] = {}
    start = threading.Barrier(len(texts))

    def ask(i: int) -> None:
        start.wait()
        out[i] = emb.encode([texts[i]])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, text in enumerate(texts):
        assert out[i].shape == (1, 64)
        np.testing.assert_allclose(out[i][0], reference.encode([text])[0], atol=1e-6)
    assert emb.requests == len(texts)
    assert emb.calls < len(texts) / 4  # 32 requests in a handful of model calls
    assert sum(inner.sizes) < len(texts)  # the repeated question is encoded once per batch


def test_alone_a_call_runs_at_once_and_many_texts_pass_through():
    inner = SlowHashing()
    emb = BatchingEmbedder(inner)
    assert emb.encode(["one"]).shape == (1, 64) and inner.sizes == [1]
    assert emb.encode(["a", "b", "c"]).shape == (3, 64) and inner.sizes == [1, 3]
    assert emb.name == inner.name and emb.dim == 64
    np.testing.assert_allclose(
        encode_query(emb, "one"), HashingEmbedder(64).encode(["one"])[0], atol=1e-6
    )


def test_an_error_reaches_every_waiting_call_and_the_batcher_recovers():
    class Failing(SlowHashing):
        fail = True

        def encode(self, texts):
            if self.fail:
                time.sleep(0.05)
                raise RuntimeError("model failed")
            return super().encode(texts)

    inner = Failing()
    emb = BatchingEmbedder(inner)
    errors: list[str] = []

    def ask(i: int) -> None:
        try:
            emb.encode([f"q{i}"])
        except RuntimeError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == ["model failed"] * 6
    inner.fail = False
    assert emb.encode(["fine"]).shape == (1, 64)

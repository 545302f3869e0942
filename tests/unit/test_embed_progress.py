"""Large encodes run in chunks (with a progress bar on a terminal) and give the same vectors."""

import numpy as np

from speakerflow.ops.text.embed import HashingEmbedder
from speakerflow.ops.text.embed_cache import PROGRESS_CHUNK, encode_with_progress


def test_chunked_encode_equals_one_call():
    emb = HashingEmbedder(64)
    texts = [
        f"Ana: message number {i} about the trip to Porto" for i in range(PROGRESS_CHUNK * 2 + 7)
    ]
    chunked = encode_with_progress(emb, texts, "messages")
    assert chunked.shape == (len(texts), 64)
    np.testing.assert_allclose(chunked, emb.encode(texts))

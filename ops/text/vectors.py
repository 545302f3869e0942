"""What every embedder shares: the :class:`Embedder` interface, L2-normalised rows, and the
process-wide table of loaded models (one load per model and process)."""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

import numpy as np

#: loaded models by name (torch MiniLM, ONNX sessions), shared by every embedder object
MODELS: dict[str, object] = {}
#: guards :data:`MODELS` (the ONNX session load re-enters it to build the cache)
MODEL_LOCK = threading.RLock()


@runtime_checkable
class Embedder(Protocol):
    """Anything that maps texts to L2-normalised vectors of a fixed width."""

    name: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray: ...


def normalise(mat: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (mat / norms).astype(np.float32)

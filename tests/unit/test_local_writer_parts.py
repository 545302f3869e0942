"""The learned Writer's model-free parts: model specs and adapter chains, the compact prompt's
short ids, windowed training targets under the contract, and the LocalWriter's batching
(with a scripted backend)."""

from __future__ import annotations

import json
from importlib import metadata

import pytest

from speakerflow.ops.backends.base import ChatResult
from speakerflow.ops.backends.errors import BackendConfigError
from speakerflow.ops.backends.models import KNOWN_MODELS, packaged_gguf, resolve_model
from speakerflow.ops.write.contract import Batch, check_action
from speakerflow.ops.write.interfaces import Segment
from speakerflow.ops.write.writer.prompt import (
    alias_actions,
    build_compact_messages,
    unalias_actions,
)
from speakerflow.training.data import Network
from speakerflow.training.windows import align, window_examples, windows

MSGS = (
    {"msg_id": "n_s1_t000", "speaker": "Ana", "text": "I moved to Porto last spring.",
     "ts": "2026-03-02T09:00:00Z", "session_id": "s1", "turn": 0},
    {"msg_id": "n_s1_t001", "speaker": "Ben", "text": "Nice! I still live in Lyon.",
     "ts": "2026-03-02T09:01:00Z", "session_id": "s1", "turn": 1, "reply_to": "n_s1_t000"},
    {"msg_id": "n_s1_t002", "speaker": "Ana", "text": "We agreed: the offsite is in Porto.",
     "ts": "2026-03-02T09:02:00Z", "session_id": "s1", "turn": 2},
)  # fmt: skip
HEAD = {"entry_id": "abc123", "layer": "per_speaker_core", "owner": "Ben", "source": "Ben",
        "utype": "fact", "content": "lives in Paris", "valid_at": "2026-01-01"}  # fmt: skip


def test_missing_model_package_names_the_install_command(monkeypatch):
    def absent(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", absent)
    with pytest.raises(BackendConfigError, match="requirements/models.txt"):
        packaged_gguf(KNOWN_MODELS["smollm2-135m"])


def test_unknown_spec_and_adapter_chains(tmp_path):
    with pytest.raises(BackendConfigError, match="unknown model"):
        resolve_model("no-such-model")
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")
    sft = tmp_path / "sft"
    sft.mkdir()
    (sft / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(base)}))
    grpo = tmp_path / "grpo"
    (grpo / "sft").mkdir(parents=True)
    (grpo / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "sft"}))
    (grpo / "sft" / "adapter_config.json").write_text(
        json.dumps({"base_model_name_or_path": str(base)})
    )
    assert resolve_model(base) == (base, [])
    assert resolve_model(sft) == (base, [sft])
    folder, chain = resolve_model(grpo)  # the relative base is the folder inside the adapter
    assert folder == base and chain == [(grpo / "sft").resolve(), grpo]


def test_compact_prompt_short_ids_round_trip():
    seg = Segment("s1#0", "g", ("Ana", "Ben"), MSGS, (HEAD,))
    prompt = build_compact_messages(seg)
    user = prompt.chat[1]["content"]
    assert "E1 [per_speaker_core|Ben by Ben] lives in Paris" in user
    assert "[2] Ben (to [1]): Nice!" in user and "n_s1_t001" not in user
    real = [{"action": "UPDATE", "entry_id": "abc123", "content": "lives in Lyon",
             "from_ids": ["n_s1_t001"]}]  # fmt: skip
    short = alias_actions(real, prompt)
    assert short[0]["entry_id"] == "E1" and short[0]["from_ids"] == [2]
    assert unalias_actions(short, prompt) == real
    # unknown ids stay as written, for Validate to refuse
    odd = unalias_actions([{"action": "UPDATE", "entry_id": "E9", "from_ids": [7, "[3]"]}], prompt)
    assert odd[0]["entry_id"] == "E9" and odd[0]["from_ids"] == [7, "n_s1_t002"]


def test_windowed_targets_pass_the_contract():
    seg = Segment("s1#0", "net", ("Ana", "Ben"), MSGS)
    wins = windows(seg, 2)
    assert [len(w.messages) for w in wins] == [2, 1]
    decision = {"action": "ADD", "owner": "GROUP", "source": "Ana", "layer": "group_interaction",
                "utype": "decision", "content": "the offsite is in Porto"}  # fmt: skip
    invented = {"action": "ADD", "owner": "Ben", "source": "Ben", "layer": "per_speaker_core",
                "utype": "fact", "content": "owns a boat in Marseille"}  # fmt: skip
    assert align(decision, wins) == 1
    net = Network("net", ("Ana", "Ben"), [seg], [[decision, invented]], [["e1", "e2"]], True)
    examples = window_examples(net, 2)
    assert len(examples) == 2
    first, second = (json.loads(e["completion"][0]["content"])["actions"] for e in examples)
    assert first == [{"action": "NOOP"}]  # the invented record is dropped, never a target
    assert [a["content"] for a in second] == ["the offsite is in Porto"]
    for ex in examples:  # every target action is one the store's Validate writes
        win = Segment(
            ex["segment_id"], "net", ("Ana", "Ben"), tuple(json.loads(ex["window_messages"]))
        )
        for i, a in enumerate(json.loads(ex["target_actions"])):
            assert check_action(a, Batch.from_segment(win), i).kind == "write"


class FakeBatchChat:
    """Records the batches it is given; replies per window."""

    name = "fake"

    def __init__(self, replies):
        self.replies, self.batches = list(replies), []

    def chat_batch(self, chats, *, max_tokens, temperature, prefix=""):
        self.batches.append(len(chats))
        return [ChatResult(self.replies.pop(0), 10, 5) for _ in chats]


def test_local_writer_batches_windows_and_maps_ids(monkeypatch):
    from speakerflow.ops.write.writer import local

    fake = FakeBatchChat(
        [
            '{"actions": [{"action": "UPDATE", "entry_id": "E1", "content": "lives in Lyon", '
            '"from_ids": [2]}]}',
            "not json at all",
        ]
    )
    monkeypatch.setattr("speakerflow.ops.backends.factory.make_backend", lambda kind, **cfg: fake)
    writer = local.LocalWriter(model="anything", window=2, backend="transformers")
    out = writer.propose(Segment("s1#0", "g", ("Ana", "Ben"), MSGS, (HEAD,)))
    assert fake.batches == [2]  # both windows in one generate call
    assert out.actions[0] == {"action": "UPDATE", "entry_id": "abc123",
                              "content": "lives in Lyon", "from_ids": ["n_s1_t001"]}  # fmt: skip
    assert "_invalid" in out.actions[1] and writer.parse_errors == 1
    assert out.model_calls == 2 and writer.throughput()["messages"] == 3


def test_models_command_lists_wheels_and_cache(tmp_path, monkeypatch, capsys):
    from speakerflow.cli import main

    monkeypatch.setenv("SPEAKERFLOW_MODEL_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "my-model").mkdir(parents=True)
    (tmp_path / "cache" / "my-model" / "config.json").write_text("{}")
    try:
        packaged_gguf(KNOWN_MODELS["smollm2-135m"])
        wheel = True
    except BackendConfigError:
        wheel = False
    assert main(["models", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    kinds = {m["name"]: m for m in report["models"]}
    assert kinds["my-model"]["kind"] == "converted" and report["cache"] == str(tmp_path / "cache")
    if wheel:  # installed here by make install; converted on first use into the (empty) cache
        assert kinds["smollm2-135m"]["path"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
        assert kinds["smollm2-135m"]["converted"].startswith("not yet")


def test_models_command_without_any_model_names_the_install(tmp_path, monkeypatch, capsys):
    from speakerflow.cli import main

    def absent(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", absent)
    monkeypatch.setenv("SPEAKERFLOW_MODEL_CACHE", str(tmp_path / "empty"))
    assert main(["models", "--json"]) == 1
    assert "requirements/models.txt" in capsys.readouterr().err

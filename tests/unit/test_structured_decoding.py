"""Structured decoding (ops/backends/structured.py, ops/write/writer/structured.py) on the
tiny random-initialised chat model: cached scores equal a full re-encoding, and every reply
parses, has the contract's shape and keeps to the options offered."""

from __future__ import annotations

import json

import pytest
import torch

from speakerflow.ops.backends.errors import BackendConfigError
from speakerflow.ops.backends.factory import make_backend
from speakerflow.ops.backends.structured import CachedDecoder, common_prefix, decoder_for
from speakerflow.ops.write.contract import Batch, check_action
from speakerflow.ops.write.interfaces import Segment
from speakerflow.ops.write.writer.chat import parse_writer_text
from speakerflow.ops.write.writer.prompt import (
    REPLY_OPENING,
    WRITER_UTYPES,
    build_compact_messages,
    unalias_actions,
)
from speakerflow.ops.write.writer.structured import (
    StructuredSettings,
    statements,
    structured_reply,
)
from speakerflow.schemas.records import GROUP_OWNER, LAYERS
from speakerflow.training.tiny import build_tiny_model

ROSTER = ("Ana", "Ben", "Cleo")
TEXTS = ("We always meet on Fridays.", "I moved to Porto last week.", "Ben is a great cook.")


@pytest.fixture(scope="module")
def chat(tmp_path_factory):
    folder = build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)
    return make_backend("transformers", model_dir=folder, device="cpu")


def _segment(heads: tuple = ()) -> Segment:
    msgs = tuple(
        {"msg_id": f"m{i}", "speaker": ROSTER[i], "text": t, "ts": f"2024-01-0{i + 1}T10:00:00"}
        for i, t in enumerate(TEXTS)
    )
    return Segment("s#0", "g", ROSTER, msgs, heads=heads)


HEAD = {
    "entry_id": "e-77",
    "layer": "per_speaker_core",
    "owner": "Ben",
    "source": "Ben",
    "content": "lives in Lisbon",
}


def _full_scores(chat, prompt: str, text: str, options: list[str]) -> list[float]:
    """Reference: every option's log-probability from a fresh full encoding."""
    tok = chat.tokenizer
    now = tok(prompt + text, add_special_tokens=False)["input_ids"]
    encoded = [tok(prompt + text + o, add_special_tokens=False)["input_ids"] for o in options]
    start = min(min(common_prefix(now, ids) for ids in encoded), *(len(i) - 1 for i in encoded))
    out = []
    for ids in encoded:
        with torch.no_grad():
            logits = chat.model(input_ids=torch.tensor([ids])).logits[0].float()
        logp = logits.log_softmax(-1)
        out.append(float(sum(logp[j - 1, ids[j]] for j in range(start, len(ids)))))
    return out


def test_cached_scores_equal_a_full_reencoding(chat):
    prompt = chat.render(build_compact_messages(_segment()).chat)
    dec = CachedDecoder(chat.model, chat.tokenizer, prompt)
    dec.set_text(REPLY_OPENING)
    options = ['ADD", "owner": "', 'UPDATE", "entry_id": "', 'NOOP"}]}']
    assert dec.score(options) == pytest.approx(
        _full_scores(chat, prompt, dec.text, options), abs=1e-4
    )
    choice = dec.choose(options)
    expected = _full_scores(chat, prompt, REPLY_OPENING, options)
    assert choice.logprobs == pytest.approx(expected, abs=1e-4)
    assert choice.logprobs[choice.index] == max(choice.logprobs)
    generated, why = dec.generate('"', 6)
    assert why in {"stop", "cap", "repeat", "eos"} and '"' not in generated
    assert dec.text == REPLY_OPENING + options[choice.index]  # generate writes nothing
    dec.set_text(dec.text + "x")
    names = [f'{n}", "source": "' for n in ROSTER]
    assert dec.score(names) == pytest.approx(_full_scores(chat, prompt, dec.text, names), abs=1e-4)
    dec.set_text(REPLY_OPENING)  # shortening crops the cache back
    assert dec.ids == chat.tokenizer(prompt + REPLY_OPENING, add_special_tokens=False)["input_ids"]
    assert dec.forwards < 40  # the prompt was encoded once, not per option


@pytest.mark.parametrize("heads", [(), (HEAD,)])
def test_structured_replies_parse_keep_to_the_options_and_pass_shape(chat, heads):
    seg = _segment(heads)
    prompt = build_compact_messages(seg)
    settings = StructuredSettings(max_actions=3, content_tokens=8, noop_min_p=1.0)
    dec = decoder_for(chat, prompt.chat, REPLY_OPENING)
    reply = structured_reply(dec, prompt, list(ROSTER), settings)
    found, error, repairs = parse_writer_text(reply.text)
    assert error is None and not repairs
    assert found == reply.actions and json.loads(reply.text) == {"actions": reply.actions}
    assert 1 <= len(found) <= 3 or reply.text == '{"actions": []}'
    batch = Batch.from_segment(seg)
    for i, act in enumerate(unalias_actions(found, prompt)):
        assert act["action"] in {"ADD", "UPDATE"}  # noop_min_p 1: NOOP is never offered
        assert act["utype"] in WRITER_UTYPES and act["content"]
        if act["action"] == "ADD":
            assert act["owner"] in (*ROSTER, GROUP_OWNER) and act["source"] in ROSTER
            assert act["layer"] in LAYERS
        else:
            assert act["entry_id"] == "e-77"
        assert set(act.get("from_ids", [])) <= {"m0", "m1", "m2"}
        verdict = check_action(dict(act), batch, i)
        field = (verdict.reason or "").split(":")[0]  # what the contract judged, if refused
        assert field not in {"shape", "action", "owner", "source", "layer", "from_ids"}, verdict


def test_local_writer_structured_decoding_and_onnx_refusal(chat, tmp_path):
    from speakerflow.ops.write.writer.local import LocalWriter

    writer = LocalWriter(
        model=str(chat.config.model_dir),
        decoding="structured",
        content_tokens=6,
        noop_min_p=1.0,  # never NOOP: at least one content is generated
        device="cpu",
    )
    out = writer.propose(_segment())
    assert out.model_calls == 1 and all(isinstance(a, dict) for a in out.actions)
    assert writer.name == "local:transformers+structured"
    assert sum(writer.throughput()["content_endings"].values()) >= 1
    extract = LocalWriter(
        model=str(chat.config.model_dir), decoding="extract", noop_min_p=1.0, device="cpu"
    )
    out = extract.propose(_segment())
    assert extract.name == "local:transformers+extract" and out.actions
    assert all(len(a["from_ids"]) == 1 for a in out.actions)
    (tmp_path / "model.onnx").write_bytes(b"")
    with pytest.raises(BackendConfigError, match="structured decoding needs the transformers"):
        LocalWriter(model=str(tmp_path), decoding="structured")
    (tmp_path / "decoding.json").write_text(json.dumps({"decoding": "beam"}))
    with pytest.raises(ValueError, match="decoding must be one of"):
        LocalWriter(model=str(tmp_path))


def test_statements_are_the_sources_sentences_in_the_third_person():
    window = [
        {"speaker": "Ana", "text": "Are you coming? I moved to Porto last week. Ok"},
        {"speaker": "Ben", "text": "My sister cooks well. I think so too."},
    ]
    assert statements(window, "Ana", "Ana") == [(1, "moved to Porto last week.")]
    assert statements(window, "Ana", "Ben") == [
        (2, "Ben's sister cooks well."),
        (2, "Ben thinks so too."),
    ]
    # a source who said nothing in the window: anyone's statements are offered
    assert [k for k, _ in statements(window, "GROUP", "Cleo")] == [1, 2, 2]


def test_extracted_contents_are_window_statements_cited_and_grounded(chat):
    seg = _segment((HEAD,))
    prompt = build_compact_messages(seg)
    settings = StructuredSettings(max_actions=3, noop_min_p=1.0, content="extract")
    with pytest.raises(ValueError, match="needs the window's 3 messages"):
        structured_reply(decoder_for(chat, prompt.chat, REPLY_OPENING), prompt, ["Ana"], settings)
    dec = decoder_for(chat, prompt.chat, REPLY_OPENING)
    reply = structured_reply(dec, prompt, list(ROSTER), settings, seg.messages)
    found, error, _ = parse_writer_text(reply.text)
    assert error is None and found == reply.actions and reply.actions
    assert reply.endings.get("extract") == len(reply.actions)
    batch = Batch.from_segment(seg)
    for i, act in enumerate(unalias_actions(found, prompt)):
        (k,) = act["from_ids"]
        owner, source = act.get("owner", ""), act.get("source")
        assert (int(k[1:]) + 1, act["content"]) in statements(seg.messages, owner, source)
        verdict = check_action(dict(act), batch, i)
        assert verdict.reason is None or not verdict.reason.startswith("content"), verdict


def test_sampled_choices_follow_the_temperature(chat):
    import random

    prompt = chat.render(build_compact_messages(_segment()).chat)
    dec = CachedDecoder(chat.model, chat.tokenizer, prompt)
    dec.set_text(REPLY_OPENING)
    options = ['ADD", "owner": "', 'UPDATE", "entry_id": "', 'NOOP"}]}']
    best = dec.choose(options).index
    rng, drawn = random.Random(0), set()
    for _ in range(60):
        dec.set_text(REPLY_OPENING)
        assert dec.choose(options, temperature=1e-6, rng=rng).index == best  # ~ greedy
        dec.set_text(REPLY_OPENING)
        drawn.add(dec.choose(options, temperature=1e6, rng=rng).index)  # ~ uniform
    assert drawn == {0, 1, 2}


def test_more_bias_is_calibrated_on_windows_and_merged_into_decoding_json(chat, tmp_path):
    import shutil

    from speakerflow.training.more_gate import calibrate_more
    from speakerflow.training.state import WriterState

    folder = tmp_path / "model"
    shutil.copytree(chat.config.model_dir, folder)
    # noop_min_p 1: the tiny model may not answer NOOP, so every window writes
    (folder / "decoding.json").write_text(json.dumps({"decoding": "extract", "noop_min_p": 1.0}))
    # every speaker says three statements, so a second action always has one left
    msgs = [{**m, "text": f"{m['text']} I like tea a lot. We have two cats at home."}
            for m in _segment().messages]  # fmt: skip
    target = [{"action": "ADD", "owner": "Ben", "source": "Ben", "layer": "per_speaker_core",
               "utype": "fact", "content": "moved to Porto last week"}] * 2  # fmt: skip
    example = {
        "state": json.dumps(WriterState(roster=ROSTER).to_json()),
        "window_messages": json.dumps(list(msgs)),
        "target_actions": json.dumps(target),
    }
    report = calibrate_more(folder, [example], ["t"], biases=(0.0, 100.0))
    by_bias = report["actions_per_window_by_bias"]
    assert report["teacher_actions_per_window"] == 2.0
    assert by_bias["100.0"] >= 2 > by_bias["0.0"]  # the random tiny model: a huge bias
    # the bias whose actions per window come closest to the teacher's 2 (ties: the smaller)
    gaps = {float(b): abs(n - 2.0) for b, n in by_bias.items()}
    assert report["more_bias"] == min(gaps, key=lambda b: (gaps[b], b))
    saved = json.loads((folder / "decoding.json").read_text())
    assert saved["decoding"] == "extract" and saved["noop_min_p"] == 1.0
    assert saved["more_bias"] == report["more_bias"]
    with pytest.raises(ValueError, match="not a model or adapter folder"):
        calibrate_more(tmp_path, [example], ["t"])
    with pytest.raises(ValueError, match="biases must lie in"):
        calibrate_more(folder, [example], ["t"], biases=(0.0, 500.0))


def test_walk_rollout_completions_extend_the_forced_opening(chat):
    from speakerflow.training.grpo_windows import WalkRollout, WindowGRPOSettings
    from speakerflow.training.state import WriterState

    tok = chat.tokenizer

    def example(texts):
        msgs = [{**m, "text": t} for m, t in zip(_segment().messages, texts, strict=True)]
        seg = Segment("s#0", "g", ROSTER, tuple(msgs))
        return {
            "prompt": build_compact_messages(seg).chat,
            "state": json.dumps(WriterState(roster=ROSTER).to_json()),
            "window_messages": json.dumps(msgs),
        }

    said, asked = example(TEXTS), example(["Are you in?", "Who cooks?", "Is it Friday?"])
    rollout = WalkRollout([said, asked], tok, WindowGRPOSettings(decoding="extract"))
    for ex, noop in ((said, False), (asked, True)):
        opened, reply = rollout.walk(chat.model, ex)
        text = tok.decode(opened + reply)
        assert text.endswith("]}") and REPLY_OPENING in text
        found, error, _ = parse_writer_text(text[text.index(REPLY_OPENING) :])
        assert error is None
        if noop:  # only questions: nothing to choose, written as the NOOP it amounts to
            assert found == [{"action": "NOOP"}]

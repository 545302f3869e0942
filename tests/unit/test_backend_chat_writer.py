"""The Writer prompt, the chat Writer's parsing and error reporting, and make_backend."""

from __future__ import annotations

import json

import pytest

from speakerflow.ops.backends import BackendConfigError, ScriptedChat, make_backend
from speakerflow.ops.backends.base import ChatResult
from speakerflow.ops.backends.errors import BackendUnavailableError
from speakerflow.ops.write.interfaces import Segment, WriterBackend
from speakerflow.ops.write.writer.chat import ChatWriter, extract_actions, make_chat_writer
from speakerflow.ops.write.writer.prompt import (
    build_writer_messages,
    render_actions,
)
from speakerflow.schemas.records import LAYERS

pytestmark = pytest.mark.timeout(30)


def _segment(n: int = 3, heads=()) -> Segment:
    speakers = ("Ana", "Ben", "Dev")
    msgs = tuple(
        {
            "msg_id": f"m{i}",
            "speaker": speakers[i % 3],
            "text": f"message number {i}",
            "ts": f"2026-03-0{1 + i % 9}T09:00:00Z",
            "session_id": "s1",
            "turn": i,
            "reply_to": f"m{i - 1}" if i else None,
        }
        for i in range(n)
    )
    return Segment("s1#0", "team", speakers, msgs, heads=heads, aliases={"Ben": ("Benny",)})


HEAD = {
    "entry_id": "r_dev_city",
    "layer": "per_speaker_core",
    "owner": "Dev",
    "source": "Dev",
    "utype": "fact",
    "content": "lives in Munich",
    "valid_at": "2026-02-01T10:00:00Z",
}


def test_prompt_carries_contract_roster_heads_and_message_ids():
    system, user = build_writer_messages(_segment(heads=(HEAD,)))
    assert system["role"] == "system" and user["role"] == "user"
    for layer in LAYERS:
        assert layer in system["content"]
    for term in (
        "owner",
        "source",
        "GROUP",
        "UPDATE",
        "NOOP",
        "entry_id",
        "from_ids",
        "One matter = one entry",
        "norm",
        "decision",
    ):
        assert term in system["content"], term
    text = user["content"]
    assert "ROSTER: Ana, Ben (also: Benny), Dev" in text
    assert "r_dev_city [per_speaker_core|Dev by Dev @2026-02-01] (fact) lives in Munich" in text
    assert "[m1] 2026-03-02 09:00 Ben (reply to m0): message number 1" in text
    assert "at most 8 actions" in text  # max(8, 2 * 3)


def test_prompt_without_heads_says_memory_is_empty_and_scales_the_limit():
    user = build_writer_messages(_segment(n=10))[1]["content"]
    assert "(empty: nothing recorded yet)" in user
    assert "at most 20 actions" in user


def test_prompt_is_deterministic():
    assert build_writer_messages(_segment(heads=(HEAD,))) == build_writer_messages(
        _segment(heads=(HEAD,))
    )


def test_render_actions_keeps_writer_fields_only():
    text = render_actions(
        [
            {
                "action": "UPDATE",
                "entry_id": "r1",
                "content": "lives in Vienna",
                "from_ids": ["m2"],
                "session_id": "s1",
                "owner": None,
            }
        ]
    )
    assert json.loads(text) == {
        "actions": [
            {"action": "UPDATE", "entry_id": "r1", "content": "lives in Vienna", "from_ids": ["m2"]}
        ]
    }


def test_chat_writer_parses_repaired_json_and_counts_tokens():
    reply = (
        '<think>Dev moved.</think>```json\n{"actions": [{"action": "UPDATE", '
        '"entry_id": "r_dev_city", "content": "lives in Vienna", "from_ids": ["m2"]},]}\n```'
    )
    chat = ScriptedChat([reply])
    writer = ChatWriter(chat)
    assert isinstance(writer, WriterBackend)
    out = writer.propose(_segment(heads=(HEAD,)))
    assert out.parse_error is None
    assert out.actions == [
        {
            "action": "UPDATE",
            "entry_id": "r_dev_city",
            "content": "lives in Vienna",
            "from_ids": ["m2"],
        }
    ]
    assert out.model_calls == 1 and out.tokens > 0 and out.raw_text == reply
    assert writer.repairs == {
        "think_block": 1,
        "code_fence": 1,
        "syntax": 1,
    }  # trailing comma (json-repair)
    assert chat.calls[0] == build_writer_messages(_segment(heads=(HEAD,)))


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("Nothing to add today!", "no JSON"),
        ('{"memory": []}', "without an 'actions' list"),
        ('{"actions": "NOOP"}', "should be a list"),
        ("", "empty"),
    ],
)
def test_unusable_replies_become_parse_errors(reply, error):
    writer = ChatWriter(ScriptedChat([reply]))
    out = writer.propose(_segment())
    assert out.actions == [] and error in out.parse_error
    assert out.raw_text == reply and out.model_calls == 1
    assert writer.parse_errors == 1


def test_non_object_items_are_kept_for_validate_to_reject():
    actions, error = extract_actions({"actions": [{"action": "NOOP"}, "ADD Ana likes tea", 3]})
    assert error is None
    assert actions == [{"action": "NOOP"}, {"_invalid": "ADD Ana likes tea"}, {"_invalid": 3}]
    assert extract_actions({"action": "NOOP"}) == ([{"action": "NOOP"}], None)
    assert extract_actions([{"action": "NOOP"}]) == ([{"action": "NOOP"}], None)


class _Down:
    name = "down"

    def chat(self, messages, *, max_tokens=512, temperature=0.0) -> ChatResult:
        raise BackendUnavailableError("server down after 3 attempts")


class _Misconfigured:
    name = "bad"

    def chat(self, messages, *, max_tokens=512, temperature=0.0) -> ChatResult:
        raise BackendConfigError("HTTP 401: the API key was refused")


def test_backend_failures_are_reported_but_config_errors_raise():
    out = ChatWriter(_Down()).propose(_segment())
    assert out.actions == [] and "backend failed: server down" in out.parse_error
    with pytest.raises(BackendConfigError, match="401"):
        ChatWriter(_Misconfigured()).propose(_segment())


def test_token_budget_grows_with_the_segment_but_is_capped():
    chat = ScriptedChat(lambda messages: '{"actions": []}')
    seen = []
    orig = chat.chat

    def spy(messages, *, max_tokens=512, temperature=0.0):
        seen.append(max_tokens)
        return orig(messages, max_tokens=max_tokens, temperature=temperature)

    chat.chat = spy
    writer = ChatWriter(chat, max_tokens=100, tokens_per_action=50, max_tokens_cap=1500)
    writer.propose(_segment(n=3))  # 8 actions -> 400
    writer.propose(_segment(n=25))  # 50 actions -> 2500, capped
    assert seen == [400, 1500]


def test_make_chat_writer_splits_writer_and_backend_settings():
    writer = make_chat_writer("scripted", replies=['{"actions": []}'], temperature=0.5)
    assert writer.config.temperature == 0.5 and writer.name == "chat:scripted"
    assert writer.propose(_segment()).actions == []


def test_make_backend_refuses_unknown_kinds_and_settings(tmp_path):
    with pytest.raises(BackendConfigError, match="unknown chat backend 'gpt'"):
        make_backend("gpt")
    with pytest.raises(BackendConfigError, match="valid settings"):
        make_backend("openai", model="m", base_url="http://127.0.0.1:9", temprature=0.1)
    with pytest.raises(BackendConfigError, match="no config.json"):
        make_backend("transformers", model_dir=tmp_path)
    with pytest.raises(BackendConfigError, match="export one first"):
        make_backend("onnx", model_dir=tmp_path)


def test_openai_settings_come_from_the_environment(monkeypatch):
    for name in (
        "SPEAKERFLOW_OPENAI_API_KEY",
        "OPENAI_API_KEY",
        "SPEAKERFLOW_OPENAI_BASE_URL",
        "OPENAI_BASE_URL",
        "SPEAKERFLOW_OPENAI_MODEL",
        "OPENAI_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(BackendConfigError, match="no model name"):
        make_backend("openai")
    with pytest.raises(BackendConfigError, match="needs a key"):
        make_backend("openai", model="gpt-4o-mini")
    monkeypatch.setenv("SPEAKERFLOW_OPENAI_API_KEY", "sk-test-secret")
    monkeypatch.setenv("SPEAKERFLOW_OPENAI_BASE_URL", "http://127.0.0.1:8000/v1/")
    monkeypatch.setenv("SPEAKERFLOW_OPENAI_MODEL", "qwen")
    backend = make_backend("openai")
    assert backend.base_url == "http://127.0.0.1:8000/v1" and backend.model == "qwen"
    assert "sk-test-secret" not in repr(backend)
    with pytest.raises(BackendConfigError, match="must start with http"):
        make_backend("openai", base_url="127.0.0.1:8000")


def test_head_list_is_bounded_keeping_present_people_and_group():
    heads = tuple(
        {
            "entry_id": f"r{i}",
            "layer": "per_speaker_core",
            "owner": owner,
            "source": owner,
            "utype": "fact",
            "content": f"fact {i}",
            "valid_at": f"2026-01-{1 + i:02d}T00:00:00Z",
        }
        for i, owner in enumerate(["Zoe", "Ana", "Zoe", "Zoe", "Ben", "Zoe"])
    ) + (
        {
            "entry_id": "g1",
            "layer": "group_insight",
            "owner": "GROUP",
            "source": "Ana",
            "utype": "norm",
            "content": "we always split the bill",
            "valid_at": "2025-12-01",
        },
    )
    seg = Segment("s1#0", "team", ("Ana", "Ben", "Dev", "Zoe"), _segment(2).messages, heads=heads)
    user = build_writer_messages(seg, max_heads=4)[1]["content"]
    shown = [line.split()[0] for line in user.split("CURRENT MEMORY")[1].splitlines()[1:5]]
    assert shown == ["r1", "r4", "r5", "g1"]  # Ana, Ben, GROUP, then the newest other head
    assert "(3 less related entries not shown" in user
    assert "not shown" not in build_writer_messages(seg)[1]["content"]  # default: all heads
    chat = ScriptedChat(['{"actions": []}'])
    ChatWriter(chat, max_heads=2).propose(seg)
    assert "(5 less related entries" in chat.calls[0][1]["content"]

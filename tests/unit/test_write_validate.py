"""Every Validate rule, driven through the real ChatWriter by a ScriptedChat backend."""

import json
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from speakerflow.graphs import GroupStore
from speakerflow.graphs.records import all_records, heads
from speakerflow.ops.backends.base import ScriptedChat
from speakerflow.ops.write.writer.chat import ChatWriter
from speakerflow.pipelines.write_path import write_group
from speakerflow.schemas import MESSAGE_SCHEMA

pytestmark = pytest.mark.timeout(60)
T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def _store(*texts):
    store = GroupStore("/unused", "team", in_memory=True)
    _append(store, "s1", texts)
    return store


def _append(store, session, texts):
    n = store.messages().num_rows
    rows = [
        {
            "msg_id": f"{session}-m{i}",
            "group_id": "team",
            "session_id": session,
            "turn": i,
            "ts": T0 + timedelta(days=n, minutes=i),
            "speaker": speaker,
            "text": text,
        }
        for i, (speaker, text) in enumerate(texts)
    ]
    store.append_messages(pa.Table.from_pylist(rows, schema=MESSAGE_SCHEMA))


def _reply(*actions):
    return json.dumps({"actions": list(actions)})


def _add(content, owner="Ana", source="Ana", layer="per_speaker_core", **kw):
    return {
        "action": "ADD",
        "owner": owner,
        "source": source,
        "layer": layer,
        "utype": "fact",
        "content": content,
        **kw,
    }


def _reasons(report):
    return [r["reason"] for r in report.rejects]


def test_each_validate_rule_on_one_batch():
    store = _store(
        ("Ana", "I live in Rome."),
        ("Ben", "Ana is a great cook."),
        ("Ana", "Let's meet on Friday."),
    )
    actions = [
        _add("Ana lives in Rome", from_ids=["s1-m0"]),  # 0 accepted
        _add("x", layer="per_speaker_mood"),  # 1 unknown layer
        _add("Zed cooks", owner="Zed"),  # 2 owner outside roster
        _add("Ana cooks", source="GROUP"),  # 3 source not a person
        {
            "action": "UPDATE",
            "entry_id": "no-such-id",
            "owner": "ana",
            "source": "@Ben",  # 4 -> ADD (names canonicalised)
            "layer": "per_speaker_profile",
            "content": "Ana is a great cook",
            "from_ids": ["s1-m1"],
        },
        {
            "action": "UPDATE",
            "entry_id": "missing-too",
            "content": "something new",
        },  # 5 missing id, cannot ADD
        _add("Ana lives in Rome", from_ids=["s1-m0"]),  # 6 duplicate of 0
        _add("Ana likes Paris", from_ids=["elsewhere-1"]),  # 7 cites another segment
        {"action": "NOOP"},  # 8 over the limit (8 max)
        _add(
            "The group meets on Friday", owner="GROUP", source="Ana", layer="group_interaction"
        ),  # 9 over the limit
    ]
    report = write_group(store, ChatWriter(ScriptedChat([_reply(*actions)])), progress=False)
    reasons = _reasons(report)
    assert report.proposed == 10 and report.accepted == 2 and report.rejected == 8
    assert any(r.startswith("layer:") for r in reasons)
    assert any(r.startswith("owner:") and "Zed" in r for r in reasons)
    assert any(r.startswith("source:") and "GROUP" in r for r in reasons)
    assert any("missing-too" in r and "not a current head" in r for r in reasons)
    assert any(r.startswith("duplicate") for r in reasons)
    assert any(r.startswith("from_ids:") and "elsewhere-1" in r for r in reasons)
    assert sum(r.startswith("over the limit") for r in reasons) == 2
    recs = {r["content"]: r for r in all_records(store)}
    assert set(recs) == {"Ana lives in Rome", "Ana is a great cook"}
    cook = recs["Ana is a great cook"]  # the UPDATE of a missing id became an ADD
    assert (cook["owner"], cook["source"], cook["layer"], cook["supersedes"]) == (
        "Ana",
        "Ben",
        "per_speaker_profile",
        None,
    )
    assert (
        report.stats["validate"]["update_to_add"] == 2
        and report.stats["validate"]["truncated"] == 2
    )
    # every reject keeps the proposal it refused
    assert all(json.loads(r["payload"]) in actions for r in report.rejects)


def test_update_chains_noop_update_and_layer_owner_rules():
    store = _store(("Ana", "I live in Rome."))
    write_group(
        store, ChatWriter(ScriptedChat([_reply(_add("Ana lives in Rome"))])), progress=False
    )
    [head] = heads(store)
    assert head["from_ids"] == ["s1-m0"]  # provenance filled by code when none is cited
    _append(store, "s2", [("Ana", "I moved to Milan."), ("Ben", "Ana moved, nice.")])
    reply = _reply(
        {
            "action": "UPDATE",
            "entry_id": head["entry_id"],
            "content": "ana lives in ROME",
        },  # no change -> NOOP
        {
            "action": "UPDATE",
            "entry_id": head["entry_id"],
            "content": "Ana lives in Milan",
            "from_ids": ["s2-m0"],
        },
        _add("Ana decides", owner="Ana", layer="group_interaction"),  # group layer, person owner
        _add(
            "The group moved", owner="GROUP", layer="per_speaker_core"
        ),  # person layer, GROUP owner
        _add("Ana lives in Milan", layer="per_speaker_core"),  # duplicates the UPDATE
        {"action": "MERGE", "entry_id": head["entry_id"]},  # unknown action
        ["not", "an", "object"],  # wrong shape
    )
    report = write_group(store, ChatWriter(ScriptedChat([reply])), progress=False)
    assert report.noops == 1 and report.updates == 1
    reasons = _reasons(report)
    assert sum(r.startswith("owner: layer") for r in reasons) == 2
    assert any(r.startswith("action:") for r in reasons) and any(
        r.startswith("shape:") for r in reasons
    )
    assert (
        any(r.startswith("duplicate of an earlier action") for r in reasons)
        and report.rejected == 5
    )
    old = next(r for r in all_records(store) if r["entry_id"] == head["entry_id"])
    [new] = [r for r in heads(store) if r["supersedes"] == head["entry_id"]]
    assert old["superseded_by"] == new["entry_id"] and old["invalid_at"] == new["valid_at"]
    assert old["content"] == "Ana lives in Rome"  # nothing overwritten
    assert (new["owner"], new["source"], new["layer"]) == ("Ana", "Ana", "per_speaker_core")
    assert new["write_order"] > old["write_order"] and new["from_ids"] == ["s2-m0"]


def test_validate_operator_alone_keeps_a_reject_table():
    from speakerflow.ops.core.base import Context
    from speakerflow.ops.write.interfaces import Segment
    from speakerflow.ops.write.validate import REJECT_SCHEMA, Validate
    from speakerflow.ops.write.writer.operator import PROPOSAL_SCHEMA

    seg = Segment(
        "s#0",
        "team",
        ("Ana",),
        (
            {
                "msg_id": "m1",
                "speaker": "Ana",
                "text": "I love tea",
                "ts": T0,
                "session_id": "s",
                "turn": 0,
            },
        ),
    )
    ctx = Context(state={"segments": {"s#0": seg}})
    proposals = pa.Table.from_pylist(
        [
            {
                "segment_id": "s#0",
                "position": 0,
                "payload": json.dumps(_add("loves tea")),
                "parse_error": None,
            },
            {"segment_id": "s#0", "position": 1, "payload": "{not json", "parse_error": None},
        ],
        schema=PROPOSAL_SCHEMA,
    )
    op = Validate()
    accepted = op(proposals, ctx)
    assert accepted["content"].to_pylist() == ["loves tea"] and accepted[
        "from_ids"
    ].to_pylist() == [["m1"]]
    table = ctx.state["reject_table"]
    assert table.schema == REJECT_SCHEMA and table["reason"][0].as_py().startswith("parse error")
    assert op.stats.rejects == 1 and op.stats.rows_out == 1


def test_bad_json_is_one_reject_and_writes_nothing():
    store = _store(("Ana", "hello"), ("Ben", "hi"))
    report = write_group(
        store,
        ChatWriter(ScriptedChat(["I think the memory should be {actions: ["])),
        progress=False,
    )
    assert report.rejected == 1 and report.accepted == 0
    assert report.rejects[0]["reason"].startswith("parse error")
    assert report.model_calls == 1 and report.tokens > 0
    assert store.records().num_rows == 0

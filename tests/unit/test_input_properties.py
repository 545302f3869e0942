"""Property-based tests (hypothesis): loaders and Validate never crash, never let bad input through.

* any bytes, any JSON value, any mutation of a valid row: the loaders either return a
  valid message table or raise ONE LoadError naming the file; nothing else escapes;
* valid messages round-trip through the JSONL loader unchanged;
* any Writer output (random actions, owners, layers, from_ids): Validate accepts only
  actions that follow its rules; everything else is a reject with a reason.
"""

from __future__ import annotations

import json
import string
from datetime import UTC, datetime, timedelta

import pyarrow as pa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from speakerflow.graphs import GroupStore
from speakerflow.graphs.records import all_records
from speakerflow.ops.backends.base import ScriptedChat
from speakerflow.ops.loaders import LoadError, load
from speakerflow.ops.write.writer.chat import ChatWriter
from speakerflow.pipelines.write_path import write_group
from speakerflow.schemas import GROUP_LAYERS, LAYERS, MESSAGE_SCHEMA, PERSON_LAYERS

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
FIELDS = [
    "msg_id",
    "session_id",
    "turn",
    "ts",
    "speaker",
    "text",
    "group_id",
    "reply_to",
    "trust_tier",
]


def _valid_row(i: int) -> dict:
    return {
        "msg_id": f"m{i}",
        "session_id": "s1",
        "turn": i,
        "ts": f"2026-03-02T09:{i:02d}:00Z",
        "speaker": "Ana",
        "text": f"message {i}",
    }


def _load_or_error(path, fmt, group=None):
    try:
        return load(path, fmt, group=group)
    except LoadError as exc:
        msg = str(exc)
        assert path.name in msg, msg
        assert "\n" not in msg.strip(), msg
        return None


@SETTINGS
@given(data=st.binary(max_size=400))
def test_any_bytes_load_or_fail_clearly(tmp_path, data):
    for fmt, suffix in (
        ("jsonl", "jsonl"),
        ("events", "jsonl"),
        ("locomo", "json"),
        ("socialmem", "json"),
    ):
        path = tmp_path / f"any.{suffix}"
        path.write_bytes(data)
        _load_or_error(path, fmt, group="g1" if fmt == "jsonl" else None)


@SETTINGS
@given(value=json_values)
def test_any_json_value_loads_or_fails_clearly(tmp_path, value):
    for fmt, suffix in (("locomo", "json"), ("socialmem", "json")):
        path = tmp_path / f"v.{suffix}"
        path.write_text(json.dumps(value))
        _load_or_error(path, fmt)
    path = tmp_path / "v.jsonl"
    path.write_text(json.dumps(value) + "\n")
    _load_or_error(path, "jsonl", group="g1")


@SETTINGS
@given(field=st.sampled_from(FIELDS), value=json_values, at=st.integers(0, 2))
@example(field="turn", value=2**63, at=0)  # beyond int64: once an OverflowError from Arrow
def test_one_mutated_field_loads_valid_rows_or_names_the_field(tmp_path, field, value, at):
    rows = [_valid_row(i) for i in range(3)]
    rows[at][field] = value
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = _load_or_error(path, "jsonl", group="g1")
    if out is not None:  # accepted: then it is a well-formed table of this group
        [(gid, table)] = out
        assert gid == "g1" and table.num_rows == 3
        assert all(isinstance(t, str) and "\x00" not in t for t in table["text"].to_pylist())


texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=60,
)


@SETTINGS
@given(
    msgs=st.lists(
        st.tuples(st.sampled_from(["Ana", "Ben", "Chloé", "李"]), texts, st.integers(0, 10**6)),
        min_size=1,
        max_size=8,
    )
)
def test_valid_messages_round_trip(tmp_path, msgs):
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [
        {
            "msg_id": f"m{i}",
            "session_id": "s1",
            "turn": i,
            "ts": (t0 + timedelta(seconds=s)).isoformat(),
            "speaker": sp,
            "text": tx,
        }
        for i, (sp, tx, s) in enumerate(msgs)
    ]
    path = tmp_path / "ok.jsonl"
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    [(gid, table)] = load(path, "jsonl", group="g1")
    got = {r["msg_id"]: (r["speaker"], r["text"]) for r in table.to_pylist()}
    assert got == {r["msg_id"]: (r["speaker"], r["text"]) for r in rows}


NAMES = ["Ana", "Ben", "GROUP", "Zed", "@ana", "", None, 7]
action = st.fixed_dictionaries(
    {
        "action": st.sampled_from(["ADD", "UPDATE", "NOOP", "DELETE", "", None]),
        "owner": st.sampled_from(NAMES),
        "source": st.sampled_from(NAMES),
        "layer": st.sampled_from([*LAYERS, "per_speaker_mood", None]),
        "utype": st.sampled_from(["fact", "preference", "weird", None]),
        "content": st.one_of(
            st.text(alphabet=string.ascii_letters + " ", max_size=30), st.none(), st.integers()
        ),
        "from_ids": st.one_of(
            st.none(),
            st.lists(st.sampled_from(["s1-m0", "s1-m1", "other-group-m0", "x"]), max_size=3),
        ),
        "entry_id": st.one_of(st.none(), st.text(max_size=6)),
    }
)


@SETTINGS
@given(actions=st.lists(st.one_of(action, json_values), max_size=30), raw=st.booleans())
def test_validate_lets_only_rule_following_actions_through(actions, raw):
    store = GroupStore("/unused", "team", in_memory=True)
    t0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
    rows = [
        {
            "msg_id": f"s1-m{i}",
            "group_id": "team",
            "session_id": "s1",
            "turn": i,
            "ts": t0 + timedelta(minutes=i),
            "speaker": sp,
            "text": tx,
        }
        for i, (sp, tx) in enumerate([("Ana", "I live in Rome."), ("Ben", "Ana cooks.")])
    ]
    store.append_messages(pa.Table.from_pylist(rows, schema=MESSAGE_SCHEMA))
    reply = json.dumps({"actions": actions}) if not raw else json.dumps(actions)[:50]
    report = write_group(store, ChatWriter(ScriptedChat([reply] * 4)), progress=False)
    roster = {"Ana", "Ben"}
    for r in all_records(store):
        assert r["source"] in roster
        assert r["owner"] in roster | {"GROUP"}
        assert r["layer"] in LAYERS
        assert (r["owner"] == "GROUP") == (r["layer"] in GROUP_LAYERS)
        assert r["owner"] == "GROUP" or r["layer"] in PERSON_LAYERS
        assert r["from_ids"] and set(r["from_ids"]) <= {"s1-m0", "s1-m1"}
        assert isinstance(r["content"], str) and r["content"].strip()
    assert report.accepted == len(all_records(store))
    assert all(rej["reason"] for rej in report.rejects)

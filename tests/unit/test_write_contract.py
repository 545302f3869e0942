"""One Writer contract: the store's Validate and the training reward's action report agree.

A corpus of Writer outputs (hand-written cases plus a generated grid: valid actions, aliased
owners, unknown types, stale UPDATEs, no-op UPDATEs, foreign from_ids, duplicates ...) goes
through both paths; every action must get the same verdict, reason and normalised action.
"""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from speakerflow.ops.core.base import Context
from speakerflow.ops.write.contract import Batch, check_action, store_ids
from speakerflow.ops.write.interfaces import Segment
from speakerflow.ops.write.validate import Validate
from speakerflow.ops.write.writer.operator import PROPOSAL_SCHEMA
from speakerflow.training.action_report import action_error, report_actions
from speakerflow.training.reward import step_reward
from speakerflow.training.state import WriterState

pytestmark = pytest.mark.timeout(120)
T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
ROSTER = ("Ana", "Ben", "Chloe Day")
ALIASES = {"Ben": ("Benny",), "Chloe Day": ("CD",)}


def _msg(i, speaker, text, prefix="m"):
    return {
        "msg_id": f"{prefix}{i}",
        "speaker": speaker,
        "text": text,
        "ts": T0 + timedelta(minutes=i),
        "session_id": "s2" if prefix == "m" else "s1",
        "turn": i,
    }


MESSAGES = tuple(
    _msg(i, s, t)
    for i, (s, t) in enumerate(
        [
            ("Ana", "I moved to Milan last week."),
            ("Ben", "Benny here: I started running on Sundays."),
            ("Chloe Day", "We should ship the release on Friday."),
            ("Ana", "Agreed, Friday works."),
            ("Ben", "I am allergic to peanuts."),
            ("Chloe Day", "I prefer tea over coffee."),
        ]
    )
)
HISTORY = tuple(
    _msg(i, s, t, prefix="h")
    for i, (s, t) in enumerate(
        [("Ana", "I live in Rome."), ("Ben", "The release was planned for March.")]
    )
)


def _state() -> WriterState:
    s = WriterState(roster=ROSTER)
    s.apply(
        [
            {
                "action": "ADD",
                "owner": "Ana",
                "source": "Ana",
                "layer": "per_speaker_core",
                "utype": "fact",
                "content": "Ana lives in Rome",
            },
            {
                "action": "ADD",
                "owner": "Ben",
                "source": "Ben",
                "layer": "per_speaker_profile",
                "utype": "preference",
                "content": "Ben likes chess",
            },
            {
                "action": "ADD",
                "owner": "GROUP",
                "source": "Ben",
                "layer": "group_interaction",
                "utype": "decision",
                "content": "The release is planned for March",
            },
        ],
        position=0,
        ids=["e1", "e2", "e3"],
    )
    s.apply(
        [{"action": "UPDATE", "entry_id": "e2", "content": "Ben likes chess and go"}],
        position=1,
        ids=["e4"],
    )
    return s


def _segment(state: WriterState, n: int) -> Segment:
    return Segment(
        f"seg-{n}",
        "team",
        ROSTER,
        MESSAGES,
        heads=tuple(state.heads()),
        aliases=dict(ALIASES),
        history=HISTORY,
    )


def add(content, owner="Ana", source="Ana", layer="per_speaker_core", utype="fact", **kw):
    return {
        "action": "ADD",
        "owner": owner,
        "source": source,
        "layer": layer,
        "utype": utype,
        "content": content,
        **kw,
    }


def upd(entry_id, content, **kw):
    return {"action": "UPDATE", "entry_id": entry_id, "content": content, **kw}


def _in_batch_add_id(content, owner="Ana", layer="per_speaker_core", n=0):
    return store_ids(
        Batch(roster=ROSTER, group_id="team", segment_id=f"seg-{n}"),
        {"action": "ADD", "owner": owner, "layer": layer, "content": content},
    )


HAND: list[list] = [
    [add("Ana moved to Milan", from_ids=["m0"])],  # valid
    [
        add("Ben runs on Sundays", owner="benny", source="@Ben", layer="per_speaker_profile")
    ],  # aliases
    [
        add("Chloe prefers tea", owner="CD", source="chloe day", utype="preference")
    ],  # alias + full name
    [
        add("Ben is allergic to peanuts", owner="Ben", source="Ben", utype="risk")
    ],  # store type, not prompt type
    [add("Ana moved", utype="gossip")],  # unknown type -> fact
    [add("Ana moved", utype=None)],  # missing type -> fact
    [upd("gone", "Ana lives in Milan")],  # stale, cannot ADD
    [
        upd("gone", "Ana lives in Milan", owner="ana", source="Ana", layer="per_speaker_core")
    ],  # stale -> ADD
    [upd("e2", "Ben likes chess")],  # superseded head, no owner
    [upd("e1", "ana lives in ROME.")],  # no-op UPDATE
    [upd("e1", "Ana lives in Milan", from_ids=["m0"])],  # valid UPDATE
    [upd("e1", "Ana lives in Milan", from_ids=["h0", "m0"])],  # history beside the segment
    [upd("e1", "Ana lives in Milan", from_ids=["h0"])],  # history alone
    [add("Ana moved", from_ids=["elsewhere-9"])],  # foreign from_ids
    [add("Ana moved", from_ids="m0")],  # from_ids not a list
    [add("Ana moved", from_ids=["m0", 7])],  # from_ids not strings
    [add("Ana moved", from_ids=["m0", "m0", "m3"])],  # repeated ids kept once
    [add("Ana lives in Rome")],  # duplicate of a head
    [add("ana lives in rome!", source="Ben")],  # same, other source
    [add("Ana moved"), add("Ana moved.")],  # in-batch duplicate
    [add("Ana moved"), add("ANA MOVED", source="Ben")],  # in-batch dup, other source
    [upd("e1", "Ana lives in Milan"), add("Ana lives in Milan")],  # UPDATE then same ADD
    [upd("e1", "Ana lives in Milan"), upd("e1", "Ana lives in Turin")],  # two UPDATEs chain
    [upd("e1", "Ana lives in Milan"), upd("e1", "Ana lives in Milan")],  # second is a no-op
    [
        add("Ana runs"),
        upd(_in_batch_add_id("Ana runs"), "Ana runs daily"),
    ],  # UPDATE of an in-batch ADD
    [{"action": "NOOP"}],
    [{"action": "noop", "content": "ignored"}],
    [{"action": "MERGE", "entry_id": "e1"}],
    [{"content": "no action at all"}],
    [["not", "an", "object"]],
    ["just a string"],
    [None],
    [{"_invalid": [1, 2]}],
    [add("")],
    [add("   ")],
    [add(42)],
    [add("x", layer="per_speaker_mood")],
    [add("x", layer=None)],
    [add("Zed cooks", owner="Zed")],
    [add("Ana cooks", source="GROUP")],
    [add("Ana cooks", source=None)],
    [add("Ana decides", layer="group_interaction")],  # person owner, group layer
    [add("We ship Friday", owner="GROUP", layer="per_speaker_core")],  # GROUP owner, person layer
    [
        add(
            "We ship Friday",
            owner="group",
            source="Chloe Day",
            layer="group_interaction",
            utype="decision",
        )
    ],
    [add("We ship Friday", owner="GROUP", source="cd", layer="group_insight", event="release")],
    [
        add(
            "The release is planned for March",
            owner="GROUP",
            source="Ana",
            layer="group_interaction",
        )
    ],
    [upd("e3", "The release moved to Friday", utype="decision", from_ids=["m2", "m3"])],
    [upd("e3", "The release moved to Friday", owner="Zed")],  # owner ignored on UPDATE
    [
        upd(
            None,
            "The release moved to Friday",
            owner="GROUP",
            source="Ana",
            layer="group_interaction",
        )
    ],
    [upd("e4", "Ben likes go", utype="weird")],
    [add(f"Fact number {i}") for i in range(14)],  # past the budget
    [{"action": "NOOP"}] * 13
    + [add("Ana moved"), "junk", upd("e1", "x"), add("")],  # past it, any shape
]


def _generated(seed: int = 7) -> list[list]:
    """A grid of single actions plus random multi-action outputs built from the same parts."""
    owners = [
        "Ana",
        "ana",
        "@Ana",
        "Benny",
        "Ben",
        "Chloe Day",
        "CD",
        "Zed",
        "GROUP",
        "group",
        "",
        None,
    ]
    layers = [
        "per_speaker_core",
        "per_speaker_profile",
        "group_interaction",
        "group_insight",
        "mood",
    ]
    utypes = ["fact", "risk", "procedure", "gossip", None]
    cites = [None, ["m1"], ["h1", "m4"], ["h1"], ["x9"], []]
    singles = []
    for owner, layer in itertools.product(owners, layers):
        singles.append([add(f"{owner} thing in {layer}", owner=owner, source="Ben", layer=layer)])
    for utype, cite in itertools.product(utypes, cites):
        singles.append(
            [
                add(
                    f"Ben fact {utype} {cite}",
                    owner="Ben",
                    source="benny",
                    utype=utype,
                    from_ids=cite,
                )
            ]
        )
    for target, content in itertools.product(
        ["e1", "e2", "e3", "e4", "nope"],
        ["Ana lives in Rome", "Ben likes chess and go", "something new"],
    ):
        singles.append([upd(target, content)])
        singles.append(
            [upd(target, content, owner="Ben", source="Ben", layer="per_speaker_profile")]
        )
    rng = random.Random(seed)
    pool = [a for out in singles for a in out] + [{"action": "NOOP"}, {"action": "DELETE"}, "junk"]
    mixed = []
    for _ in range(25):
        out = [rng.choice(pool) for _ in range(rng.randint(2, 6))]
        if rng.random() < 0.5:
            out.append(rng.choice(out))  # an exact repeat
        mixed.append(out)
    return singles + mixed


CORPUS = HAND + _generated()


def _via_validate(seg: Segment, actions: list) -> tuple[list[dict], pa.Table]:
    ctx = Context(state={"segments": {seg.segment_id: seg}})
    rows = [
        {"segment_id": seg.segment_id, "position": i, "payload": json.dumps(a), "parse_error": None}
        for i, a in enumerate(actions)
    ]
    accepted = Validate()(pa.Table.from_pylist(rows, schema=PROPOSAL_SCHEMA), ctx)
    return ctx.state["verdicts"], accepted


def test_validate_and_the_reward_give_identical_verdicts_on_the_corpus():
    n_actions = sum(len(out) for out in CORPUS)
    assert n_actions >= 200
    kinds: Counter = Counter()
    repairs: Counter = Counter()
    reasons: Counter = Counter()
    for n, actions in enumerate(CORPUS):
        state = _state()
        seg = _segment(state, n)
        store_verdicts, accepted = _via_validate(seg, actions)
        rep = report_actions(json.dumps({"actions": actions}), state, segment=seg, new_id=store_ids)
        assert len(rep.verdicts) == len(store_verdicts) == len(actions)
        for i, (mine, theirs) in enumerate(zip(rep.verdicts, store_verdicts, strict=True)):
            assert (mine.kind, mine.reason) == (theirs["verdict"], theirs["reason"]), (
                n,
                i,
                actions[i],
            )
            kinds[mine.kind] += 1
            repairs.update(mine.repairs)
            reasons[(mine.reason or "").split(":")[0]] += 1
        # what the store writes is what the reward applies
        writes = [v.action for v in rep.verdicts if v.kind == "write"]
        assert accepted.to_pylist() == writes, n
        assert rep.schema_valid == sum(v["verdict"] != "reject" for v in store_verdicts)
    # the corpus covers every kind of verdict and every repair
    assert all(kinds[k] >= 5 for k in ("write", "noop", "duplicate", "truncated", "reject")), kinds
    assert all(
        repairs[r] >= 5 for r in ("alias", "utype_coerced", "update_to_add", "provenance_filled")
    ), repairs
    for prefix in (
        "owner",
        "source",
        "layer",
        "from_ids",
        "entry_id",
        "shape",
        "action",
        "content",
    ):
        assert reasons[prefix] >= 1, (prefix, reasons)


def test_the_reward_applies_what_the_store_writes():
    state = _state()
    seg = _segment(state, 0)
    out = [
        add(
            "Ben runs on Sundays",
            owner="benny",
            source="Ben",
            layer="per_speaker_profile",
            utype="gossip",
        ),
        upd("gone", "Ana moved to Milan", owner="@ana", source="Ana", layer="per_speaker_core"),
        upd("e1", "Ana lives in Milan"),
        upd("e1", "Ana lives in Milan since last week"),
    ]
    ref = _state()
    sr, rep = step_reward(
        json.dumps({"actions": out}), state, ref, n_messages=len(MESSAGES), position=2, segment=seg
    )
    assert [v.kind for v in rep.verdicts] == ["write", "write", "write", "write"]
    contents = {h["content"]: h for h in state.heads()}
    assert (
        contents["Ben runs on Sundays"]["owner"] == "Ben"
        and contents["Ben runs on Sundays"]["utype"] == "fact"
    )
    assert contents["Ana moved to Milan"]["owner"] == "Ana"  # the stale UPDATE became an ADD
    assert "Ana lives in Milan since last week" in contents and "Ana lives in Rome" not in contents
    # the two UPDATEs of e1 form one chain: e1 -> Milan -> Milan since last week
    chain = [
        (state.entries[o]["content"], state.entries[n]["content"]) for o, n in state.edges[-2:]
    ]
    assert chain == [
        ("Ana lives in Rome", "Ana lives in Milan"),
        ("Ana lives in Milan", "Ana lives in Milan since last week"),
    ]
    assert rep.created_ids == [f"e2_{4 + i}" for i in range(4)]


def test_changed_verdicts_of_the_old_action_report():
    """What the report used to decide otherwise (docs/write-path.md, "The action contract")."""
    s = _state()
    roster = set(ROSTER)
    assert action_error(add("x", owner="ana"), s, roster) is None  # was: owner not in roster
    assert action_error(add("x", utype="gossip"), s, roster) is None  # was: utype rejected
    assert action_error(add("x", utype="risk"), s, roster) is None  # was: not a prompt utype
    assert (
        action_error(
            upd("gone", "x", owner="Ana", source="Ana", layer="per_speaker_core"), s, roster
        )
        is None
    )
    assert action_error(upd("gone", "x"), s, roster).startswith("entry_id:")  # still a reject
    seg = _segment(s, 0)
    rep = report_actions(
        json.dumps({"actions": [add("x", from_ids=["elsewhere"])]}), s, segment=seg
    )
    assert rep.schema_valid == 0 and "from_ids" in rep.errors[0]  # was: accepted
    rep = report_actions(json.dumps({"actions": [upd("e1", "Ana lives in Rome.")]}), s, segment=seg)
    assert (
        rep.schema_valid == 1 and rep.valid_actions == [] and rep.verdicts[0].kind == "noop"
    )  # unchanged


def test_check_action_is_stateful_per_batch_only():
    batch = Batch(roster=ROSTER, heads=tuple(_state().heads()), group_id="team", segment_id="s")
    assert check_action(add("Ana runs"), batch, 0).kind == "write"
    assert check_action(add("Ana runs"), batch, 1).kind == "duplicate"
    fresh = Batch(roster=ROSTER, heads=tuple(_state().heads()), group_id="team", segment_id="s")
    assert check_action(add("Ana runs"), fresh, 0).kind == "write"
    assert check_action(add("Ana runs"), fresh, 8).kind == "truncated"


def _segment_batch() -> Batch:
    state = _state()
    return Batch(
        roster=ROSTER,
        heads=tuple(state.heads()),
        group_id="team",
        segment_id="seg-9",
        messages=MESSAGES,
        aliases=dict(ALIASES),
    )


def test_an_update_by_another_person_names_its_source_when_they_say_it():
    # Ben announced the March release (e3); Chloe's message m2 moves it to Friday
    fix = upd("e3", "The release moved to Friday", source="CD", from_ids=["m2"])
    verdict = check_action(fix, _segment_batch(), 0)
    assert verdict.kind == "write"
    assert verdict.action["source"] == "Chloe Day"
    assert verdict.action["owner"] == "GROUP"
    assert verdict.proposal["source"] == "Chloe Day"  # kept: it is not the head's
    # a source that says none of the cited messages is not taken: the head's stays
    stray = check_action(
        upd("e3", "The release moved to Friday", source="Ana", from_ids=["m2"]), _segment_batch(), 0
    )
    assert stray.kind == "write"
    assert stray.action["source"] == "Ben"
    assert "source_inherited" in stray.repairs
    same = check_action(
        upd("e3", "The release moved to Friday", from_ids=["m2"]), _segment_batch(), 0
    )
    assert same.action["source"] == "Ben"
    assert "source" not in same.proposal

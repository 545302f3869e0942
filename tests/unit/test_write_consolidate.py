"""The consolidating rules Writer: records that span messages (and sessions), citing all of them.

A small pottery club written by hand for these tests: a decision with a proposal, an
objection, a counter-proposal and agreement; a member's thread on one matter over two
sessions; one member's repeated view of another; a habit that changes; a recurring
activity one member keeps missing.
"""

import json

import pyarrow as pa
import pytest

from speakerflow.graphs import GroupStore
from speakerflow.graphs.records import all_records, heads
from speakerflow.ops.core.base import Context
from speakerflow.ops.loaders.common import to_message_table
from speakerflow.ops.write.interfaces import Segment
from speakerflow.ops.write.validate import Validate
from speakerflow.pipelines.write_path import write_group

pytestmark = pytest.mark.timeout(60)

CLUB = [
    # session 1: the class day is argued out and settled
    ("a1", "s1", "2024-03-02T10:00:00Z", "Nora", "We should do the pottery class on Saturdays."),
    ("a2", "s1", "2024-03-02T10:02:00Z", "Omar", "I can't do Saturdays, I coach football then."),
    ("a3", "s1", "2024-03-02T10:03:00Z", "Pia", "How about Sunday mornings instead?"),
    ("a4", "s1", "2024-03-02T10:05:00Z", "Ravi", "Sunday works for me."),
    ("a5", "s1", "2024-03-02T10:07:00Z", "Nora", "Settled: pottery class on Sunday mornings."),
    (
        "a6",
        "s1",
        "2024-03-02T10:09:00Z",
        "Pia",
        "I love the glazing part, the kiln colours are magic.",
    ),
    ("a7", "s1", "2024-03-02T10:11:00Z", "Omar", "Ravi always forgets his apron."),
    (
        "a8",
        "s1",
        "2024-03-02T10:12:00Z",
        "Nora",
        "I drink strong coffee every morning before the class.",
    ),
    # session 2: the thread on glazing goes on; Ravi is missing
    (
        "b1",
        "s2",
        "2024-03-10T10:00:00Z",
        "Pia",
        "The kiln colours came out even better with the blue glazing this week.",
    ),
    ("b2", "s2", "2024-03-10T10:02:00Z", "Ravi", "Not coming to pottery today, sorry."),
    ("b3", "s2", "2024-03-10T10:04:00Z", "Omar", "Ravi forgot his apron again last time too."),
    ("b4", "s2", "2024-03-10T10:06:00Z", "Nora", "See you all next Sunday!"),
    # session 3: a habit changes; Ravi skips again and is called on it
    (
        "c1",
        "s3",
        "2024-03-17T10:00:00Z",
        "Nora",
        "I don't drink coffee anymore, switched to green tea.",
    ),
    ("c2", "s3", "2024-03-17T10:01:00Z", "Ravi", "Not coming to pottery again, my knee hurts."),
    (
        "c3",
        "s3",
        "2024-03-17T10:03:00Z",
        "Pia",
        "Ravi this is like the third time you skipped pottery.",
    ),
    ("c4", "s3", "2024-03-17T10:05:00Z", "Omar", "Pottery on Sunday mornings is our thing now."),
]


def club_table() -> pa.Table:
    rows = [
        {
            "msg_id": m,
            "group_id": "club",
            "session_id": s,
            "turn": i,
            "ts": ts,
            "speaker": who,
            "text": text,
        }
        for i, (m, s, ts, who, text) in enumerate(CLUB)
    ]
    return to_message_table(rows, "club")


@pytest.fixture(scope="module")
def club():
    store = GroupStore("/unused", "club", in_memory=True)
    store.append_messages(club_table())
    report = write_group(store, "rules", progress=False)
    return store, report


def _heads(store, **match):
    return [h for h in heads(store) if all(h[k] == v for k, v in match.items())]


def test_everything_written_went_through_validate(club):
    store, report = club
    assert report.rejected == 0 and report.accepted >= 1
    # every record cites messages of the group, and at least one of the segment that wrote it
    ids = {m for m, *_ in CLUB}
    assert all(set(r["from_ids"]) <= ids for r in all_records(store))


def test_group_decision_cites_proposal_objection_agreement_and_settling_message(club):
    store, _ = club
    decisions = [
        h
        for h in _heads(store, owner="GROUP", layer="group_interaction")
        if h["utype"] == "decision"
    ]
    settled = next(h for h in decisions if "a5" in h["from_ids"])
    assert settled["source"] == "Nora"  # the announcer
    assert {"a1", "a2", "a3", "a4", "a5"} <= set(settled["from_ids"])
    assert "Sunday" in settled["content"]


def test_person_thread_spans_sessions_as_an_update_chain(club):
    store, _ = club
    thread = next(h for h in _heads(store, owner="Pia", source="Pia") if "b1" in h["from_ids"])
    assert "a6" in thread["from_ids"] and thread["supersedes"] is not None
    assert "glazing" in thread["content"]
    old = next(r for r in all_records(store) if r["entry_id"] == thread["supersedes"])
    assert old["superseded_by"] == thread["entry_id"] and "a6" in old["from_ids"]


def test_cross_person_belief_owned_by_subject_with_speaker_as_source(club):
    store, _ = club
    view = next(
        h
        for h in _heads(store, owner="Ravi", source="Omar", layer="per_speaker_profile")
        if "b3" in h["from_ids"]
    )
    assert "a7" in view["from_ids"] and "apron" in view["content"]


def test_change_keeps_both_sides(club):
    store, _ = club
    now = next(h for h in _heads(store, owner="Nora", source="Nora") if "c1" in h["from_ids"])
    assert "a8" in now["from_ids"]  # the message before the change
    assert (
        "green tea" in now["content"] and "coffee" in now["content"] and "before" in now["content"]
    )


def test_norm_names_who_breaks_it(club):
    store, _ = club
    norms = [h for h in _heads(store, owner="GROUP", layer="group_insight") if h["utype"] == "norm"]
    pottery = next(h for h in norms if "c2" in h["from_ids"])
    assert (
        "b2" in pottery["from_ids"]
        and "pottery" in pottery["content"]
        and "Ravi" in pottery["content"]
    )


def test_validate_accepts_history_only_beside_a_segment_message():
    msgs = [
        {
            "msg_id": "c1",
            "speaker": "Nora",
            "text": "I don't drink coffee anymore.",
            "ts": "2024-03-17",
            "session_id": "s3",
            "turn": 0,
        }
    ]
    history = (
        {
            "msg_id": "a8",
            "speaker": "Nora",
            "text": "I drink coffee.",
            "ts": "2024-03-02",
            "session_id": "s1",
            "turn": 7,
        },
    )
    seg = Segment("s3#0", "club", ("Nora", "Omar"), tuple(msgs), history=history)
    base = {
        "action": "ADD",
        "owner": "Nora",
        "source": "Nora",
        "layer": "per_speaker_core",
        "content": "x",
    }
    rows = [
        {
            "segment_id": "s3#0",
            "position": i,
            "payload": json.dumps({**base, "content": c, "from_ids": ids}),
            "parse_error": None,
        }
        for i, (c, ids) in enumerate(
            [
                ("no coffee anymore", ["a8", "c1"]),
                ("drinks coffee", ["a8"]),
                ("coffee anymore", ["zz", "c1"]),
            ]
        )
    ]
    ctx = Context(state={"segments": {"s3#0": seg}})
    out = Validate()(pa.Table.from_pylist(rows), ctx)
    assert out["content"].to_pylist() == ["no coffee anymore"]
    reasons = [r["reason"] for r in ctx.state["rejects"]]
    assert len(reasons) == 2 and all("from_ids" in r for r in reasons)


def test_relative_dates_are_resolved_against_the_message_time():
    from datetime import UTC, datetime

    from speakerflow.ops.write.writer.rules import RulesWriter

    msgs = (
        {
            "msg_id": "d1",
            "speaker": "Pia",
            "text": "I finished my first big vase yesterday, glazing it next week.",
            "ts": datetime(2024, 3, 17, 10, tzinfo=UTC),
            "session_id": "s4",
            "turn": 0,
        },
    )
    [act] = RulesWriter().propose(Segment("s4#0", "club", ("Nora", "Pia"), msgs)).actions
    assert (
        "yesterday (16 March 2024)" in act["content"]
        and "next week (18-24 March 2024)" in act["content"]
    )

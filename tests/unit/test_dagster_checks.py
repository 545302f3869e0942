"""The memory invariants (assets/checks.py) on hand-made records: each finds exactly the
broken record and passes a clean chain."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from speakerflow.assets.checks import (
    CHECKS,
    evaluate,
    find_cross_group_references,
    find_foreign_owners,
    find_multiple_heads,
    find_unresolved_provenance,
    find_valid_after_invalid,
)

pytestmark = pytest.mark.timeout(60)
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def rec(
    entry_id,
    owner="Ana",
    supersedes=None,
    superseded_by=None,
    valid=0,
    invalid=None,
    from_ids=("m1",),
    group="team",
):
    return {
        "entry_id": entry_id,
        "group_id": group,
        "owner": owner,
        "layer": "per_speaker_core",
        "supersedes": supersedes,
        "superseded_by": superseded_by,
        "from_ids": list(from_ids),
        "valid_at": T0 + timedelta(days=valid),
        "invalid_at": None if invalid is None else T0 + timedelta(days=invalid),
    }


def clean_chain():
    """Ana lives in Munich (day 0), then Vienna (day 5): one chain, one head."""
    return [
        rec("a1", superseded_by="a2", invalid=5),
        rec("a2", supersedes="a1", valid=5, from_ids=("m2",)),
        rec("g1", owner="GROUP", from_ids=("m1", "m2")),
    ]


def test_clean_chain_passes_every_check():
    state = {"records": clean_chain(), "msg_ids": {"m1", "m2"}, "roster": {"Ana", "Ben"}}
    results = evaluate(state, "team")
    assert [r.check_name for r in results] == [name for name, _, _ in CHECKS]
    assert all(r.passed for r in results)


def test_valid_after_invalid():
    bad = rec("x", valid=3, invalid=1)
    open_superseded = rec("y", superseded_by="z")
    found = find_valid_after_invalid(clean_chain() + [bad, open_superseded])
    assert [v["entry_id"] for v in found] == ["x", "y"]


def test_provenance_must_resolve_in_own_group():
    found = find_unresolved_provenance(
        clean_chain() + [rec("p", from_ids=("other-group-m9",)), rec("q", from_ids=())],
        {"m1", "m2"},
    )
    assert [v["entry_id"] for v in found] == ["p", "q"]
    assert "other-group-m9" in found[0]["problem"]


def test_one_head_per_chain():
    assert find_multiple_heads(clean_chain()) == []
    forked = clean_chain() + [rec("a3", supersedes="a1", valid=6)]  # a1 superseded twice: two heads
    found = find_multiple_heads(forked)
    assert {v["entry_id"] for v in found} == {"a1"}
    assert any("several" in v["problem"] for v in found) and any(
        "2 heads" in v["problem"] for v in found
    )


def test_owner_in_roster_or_group():
    found = find_foreign_owners(clean_chain() + [rec("o", owner="Mallory")], {"Ana", "Ben"})
    assert [v["entry_id"] for v in found] == ["o"]


def test_no_cross_group_reference():
    foreign = rec("f", group="other")
    dangling = rec("d", supersedes="not-here")
    found = find_cross_group_references(clean_chain() + [foreign, dangling], "team")
    assert [v["entry_id"] for v in found] == ["f", "d"]


def test_evaluate_reports_violations_as_failed_checks():
    state = {
        "records": clean_chain() + [rec("o", owner="Mallory", from_ids=("m9",))],
        "msg_ids": {"m1", "m2"},
        "roster": {"Ana"},
    }
    by_name = {r.check_name: r for r in evaluate(state, "team")}
    assert not by_name["owner_in_roster"].passed and not by_name["provenance_resolves"].passed
    assert by_name["one_head_per_chain"].passed
    assert by_name["owner_in_roster"].metadata["violations"].value == 1

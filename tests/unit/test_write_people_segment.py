"""People Detect/Canonicalize and segmentation."""

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from speakerflow.ops.text.people import PersonResolver
from speakerflow.ops.write.segment import Segmenter, build_segments

pytestmark = pytest.mark.timeout(30)


def test_resolve_names_handles_possessives_first_names_and_case():
    r = PersonResolver(["Ana Ruiz", "Ben", "Chloe"])
    assert r.resolve("ana ruiz") == "Ana Ruiz"
    assert r.resolve("@ANA") == "Ana Ruiz"  # first name of a full name, handle, case
    assert r.resolve("Ben's") == "Ben" and r.resolve("Chloe\u2019s") == "Chloe"
    assert r.resolve("anaruiz") == "Ana Ruiz"
    assert r.resolve("Zoe") is None and r.resolve("") is None


def test_ambiguous_first_names_and_aliases_resolve_to_none():
    r = PersonResolver(["Sam Lee", "Sam Park", "Jo"], aliases={"Jo": ["Sam"]})
    assert r.resolve("Sam") is None  # three people could be meant
    assert r.resolve("Sam Park") == "Sam Park"


def test_alias_table_and_role_synonyms():
    r = PersonResolver(["Mum", "Dad", "Kofi"], aliases={"Kofi": ["K", "Kofs"]})
    assert r.resolve("Mom") == "Mum" and r.resolve("mother") == "Mum"
    assert r.resolve("father") == "Dad"
    assert r.resolve("Kofs") == "Kofi"
    # a synonym already naming another roster member is not redirected
    assert PersonResolver(["Mum", "Mother"]).resolve("Mother") == "Mother"


def test_mentions_give_spans_in_order_and_skip_common_words():
    r = PersonResolver(["Ana Ruiz", "Will", "Ben"])
    text = "I will tell Ana Ruiz and @ben that Will's idea is good"
    found = r.mentions(text)
    assert [f[0] for f in found] == ["Ana Ruiz", "Ben", "Will"]
    for name, start, end in found:
        assert r.resolve(text[start:end]) == name
    assert r.names_in("Mum said hi") == []


def _messages(n_by_session):
    rows, t0 = [], datetime(2026, 1, 1, tzinfo=UTC)
    for s, n in n_by_session.items():
        for i in range(n):
            rows.append(
                {
                    "msg_id": f"{s}-{i}",
                    "session_id": s,
                    "turn": i,
                    "ts": t0 + timedelta(minutes=len(rows)),
                    "speaker": "Ana",
                    "text": f"message {i}",
                    "reply_to": None,
                }
            )
    return pa.Table.from_pylist(rows)


def test_segments_are_per_session_windows_with_max_actions():
    table = Segmenter(window=25)(_messages({"s1": 30, "s2": 3}))
    ids = table["segment_id"].to_pylist()
    assert ids.count("s1#0") == 25 and ids.count("s1#1") == 5 and ids.count("s2#0") == 3
    segs = build_segments(table, "g", ["Ana"])
    assert [s.segment_id for s in segs] == ["s1#0", "s1#1", "s2#0"]
    assert [s.max_actions for s in segs] == [50, 10, 8]
    assert all(len({m["session_id"] for m in s.messages}) == 1 for s in segs)
    with pytest.raises(ValueError, match="window"):
        Segmenter(window=0)

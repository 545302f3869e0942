"""The inbox index (``assets/inbox.py``): a run reads only its own groups' files, an
unchanged file is never reopened, a rewritten one is, a broken one fails the lookup and is
not indexed; one file holding several groups is read once for all of them."""

from __future__ import annotations

import json
import os

import pytest

from speakerflow.assets import inbox as I
from speakerflow.ops.loaders import LoadError

pytestmark = pytest.mark.timeout(120)


def _write(path, group, n, start=0):
    lines = [
        {
            "msg_id": f"{group}-{i}",
            "group_id": group,
            "session_id": "s1",
            "ts": f"2026-05-01T10:{i:02d}:00Z",
            "speaker": "Ana" if i % 2 else "Bo",
            "text": f"message {i} of {group}",
        }
        for i in range(start, start + n)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.fixture
def inbox(tmp_path):
    box = tmp_path / "inbox"
    box.mkdir()
    for g, n in (("g1", 3), ("g2", 4), ("g3", 2)):
        _write(box / f"{g}.jsonl", g, n)
    return box


def test_index_is_built_once_and_only_the_groups_files_are_read(inbox, monkeypatch):
    index = inbox / I.INDEX_NAME
    sources = I.inbox_files(inbox)
    assert [s.path.name for s in sources] == ["g1.jsonl", "g2.jsonl", "g3.jsonl"]
    found = I.messages_for_groups(["g2"], sources, index)
    assert found["g2"][0].num_rows == 4 and found["g2"][1] == [str(inbox / "g2.jsonl")]
    assert index.exists() and I.inbox_files(inbox) == sources  # the index file is hidden
    stored = json.loads(index.read_text())
    assert {k.rsplit("/", 1)[-1]: v["groups"] for k, v in stored.items()} == {
        "g1.jsonl": ["g1"],
        "g2.jsonl": ["g2"],
        "g3.jsonl": ["g3"],
    }

    loaded = []
    real = I.load_file
    monkeypatch.setattr(I, "load_file", lambda item: loaded.append(item.path.name) or real(item))
    found = I.messages_for_groups(["g3", "g1"], I.inbox_files(inbox), index)
    assert sorted(loaded) == ["g1.jsonl", "g3.jsonl"]  # g2 not opened, no file opened twice
    assert (found["g1"][0].num_rows, found["g3"][0].num_rows) == (3, 2)

    # a rewritten file (new size and mtime) is read again and its entry updated
    loaded.clear()
    _write(inbox / "g2.jsonl", "g2", 6)
    st = (inbox / "g2.jsonl").stat()
    os.utime(inbox / "g2.jsonl", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    found = I.messages_for_groups(["g2"], I.inbox_files(inbox), index)
    assert loaded.count("g2.jsonl") == 2  # once to index it, once to read its messages
    assert found["g2"][0].num_rows == 6


def test_one_file_of_several_groups_is_read_once(inbox):
    lines = (inbox / "g1.jsonl").read_text() + (inbox / "g3.jsonl").read_text()
    (inbox / "mixed.jsonl").write_text(lines)
    found = I.messages_for_groups(["g1", "g3"], I.inbox_files(inbox), inbox / I.INDEX_NAME)
    assert found["g1"][0].num_rows == 6 and found["g3"][0].num_rows == 4
    assert found["g1"][1] == [str(inbox / "g1.jsonl"), str(inbox / "mixed.jsonl")]


def test_a_broken_file_fails_the_lookup_and_is_not_indexed(inbox):
    (inbox / "bad.jsonl").write_text('{"group_id": "g9", "text": \n')
    index = inbox / I.INDEX_NAME
    with pytest.raises(LoadError):
        I.messages_for_groups(["g1"], I.inbox_files(inbox), index)
    assert not index.exists() or "bad.jsonl" not in index.read_text()
    (inbox / "bad.jsonl").unlink()
    assert I.messages_for_groups(["g1"], I.inbox_files(inbox), index)["g1"][0].num_rows == 3


def test_no_index_path_reads_every_file_and_a_missing_group_is_empty(inbox):
    found = I.messages_for_groups(["g1", "nope"], I.inbox_files(inbox), None)
    assert found["g1"][0].num_rows == 3 and found["nope"][0].num_rows == 0
    assert not (inbox / I.INDEX_NAME).exists()

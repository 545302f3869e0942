"""The second dev split of the InKH paraphrase set (``*_dev2.jsonl``): unchanged and well-formed.

It is pinned by sha256 in ``tests/data/inkh_paraphrase/README_dev2.md`` (an edit fails CI) and
validated line by line with the same checks as the original frozen set.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "inkh_paraphrase"
FILES = ("statements_dev2.jsonl", "requests_dev2.jsonl")

_spec = importlib.util.spec_from_file_location(
    "_inkh_frozen", HERE / "test_inkh_paraphrase_frozen.py"
)
frozen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(frozen)


def pinned() -> dict[str, tuple[int, str]]:
    text = (DATA / "README_dev2.md").read_text(encoding="utf-8")
    return {
        n: (int(c), h)
        for n, c, h in re.findall(
            r"`([a-z_0-9]+\.jsonl)`\s*\|\s*(\d+)\s*\|\s*`([0-9a-f]{64})`", text
        )
    }


@pytest.mark.parametrize("name", FILES)
def test_dev2_file_matches_its_pinned_sha256_and_line_count(name):
    count, digest = pinned()[name]
    assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, (
        f"{name} changed after it was frozen"
    )
    assert len(frozen.load(name)) == count >= 60


def test_dev2_statements_are_well_formed():
    frozen.test_statement_lines_are_well_formed("statements_dev2.jsonl")
    rows = frozen.load("statements_dev2.jsonl")
    assert all(re.fullmatch(r"s-dev2-\d{3}", r["id"]) for r in rows)
    assert {r["voice"] for r in rows} == set(frozen.VOICES)


def test_dev2_requests_are_well_formed_and_cover_every_intent():
    frozen.test_request_lines_are_well_formed("requests_dev2.jsonl")
    rows = frozen.load("requests_dev2.jsonl")
    assert all(re.fullmatch(r"r-dev2-\d{3}", r["id"]) for r in rows)
    assert {r["intent"] for r in rows} == frozen.INTENTS


def test_dev2_shares_no_line_with_the_other_splits():
    for kind in ("statements", "requests"):
        mine = {" ".join(r["content"].lower().split()) for r in frozen.load(f"{kind}_dev2.jsonl")}
        for split in ("dev", "test"):
            other = {
                " ".join(r["content"].lower().split()) for r in frozen.load(f"{kind}_{split}.jsonl")
            }
            assert not mine & other, f"{kind}_dev2 shares a line with {kind}_{split}"

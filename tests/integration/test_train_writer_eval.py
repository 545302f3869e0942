"""writer_eval.run: the real write path (Validate, Upsert, in-memory store) scored against
teacher states."""

from __future__ import annotations

import json

import pytest

from speakerflow.ops.write.interfaces import WriterOutput
from speakerflow.training.writer_eval import run
from tests.conftest import shared
from tests.integration.test_train_cli import _network


class OracleWriter:
    """Writes exactly the teacher's records, using the store's own entry ids for the UPDATE."""

    name = "oracle"

    def __init__(self, owner="Ana"):
        self.owner = owner

    def propose(self, segment):
        head = next((h for h in segment.heads if h["content"] == "Lives in Vienna"), None)
        if head is None:
            return WriterOutput(
                actions=[
                    {
                        "action": "ADD",
                        "owner": self.owner,
                        "source": self.owner,
                        "layer": "per_speaker_core",
                        "utype": "fact",
                        "content": "Lives in Vienna",
                    }
                ]
            )
        return WriterOutput(
            actions=[{"action": "UPDATE", "entry_id": head["entry_id"], "content": "Lives in Graz"}]
        )


def test_oracle_scores_one_and_wrong_owner_zero(tmp_path):
    data = _network(tmp_path)
    good = run(data, OracleWriter(), out=tmp_path / "r.json")
    assert good["speaker_levenshtein_f"] == 1.0 and good["chain_f"] == 1.0
    assert good["by_bucket"]["person"]["f"] == 1.0 and good["records"] == {
        "pred": 1,
        "ref": 1,
        "matched_pairs": 1,
    }
    assert json.loads((tmp_path / "r.json").read_text())["speaker_levenshtein_f"] == 1.0
    bad = run(data, OracleWriter(owner="Ben"))
    assert bad["speaker_levenshtein_f"] == 0.0 and bad["chain_f"] == 0.0


@pytest.mark.data
def test_rules_writer_baseline_on_teacher_states():
    report = run(shared("socialmem", "training"), "rules", limit=3)
    assert report["networks"] == 3 and report["backend"] == "rules"
    assert 0.0 <= report["speaker_levenshtein_f"] < 1.0
    assert set(report["by_bucket"]) == {"person", "GROUP", "cross-person"}
    assert report["records"]["ref"] == sum(r["n_ref"] for r in report["per_network"]) > 0
    # the fixed halves: sorted ids taken alternately, together every network once
    ids = sorted(r["network_id"] for r in report["per_network"])
    a, b = report["halves"]["a"], report["halves"]["b"]
    assert (a["networks"], b["networks"]) == (ids[0::2], ids[1::2])
    assert a["n_ref"] + b["n_ref"] == report["records"]["ref"]
    assert min(a["f"], b["f"]) <= report["speaker_levenshtein_f"] <= max(a["f"], b["f"])

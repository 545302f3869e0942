"""A second domain through the CLI (issue 27): ``ingest --domain itops`` records the pack,
``maintain`` reads the group with it, and ``inject`` cites the events its lines rest on."""

import json
from pathlib import Path

from speakerflow.cli import main
from speakerflow.ops.knowledge.domain.load import bundled

SAMPLE = bundled()["itops"].parent / "sample_events.jsonl"


def test_ingest_maintain_inject_with_the_itops_pack(tmp_path: Path, capsys):
    home = ["--home", str(tmp_path)]
    assert (
        main(
            [
                "ingest",
                str(SAMPLE),
                "--format",
                "events",
                "--domain",
                "itops",
                "--writer",
                "none",
                "--embedder",
                "none",
                *home,
            ]
        )
        == 0
    )
    assert "domain pack 'itops' recorded" in capsys.readouterr().out
    recorded = json.loads((tmp_path / "groups" / "itops" / "domain.json").read_text())
    assert recorded["name"] == "itops"
    assert main(["maintain", "--group", "itops", "--now", "2026-09-01T12:00:00Z", *home]) == 0
    capsys.readouterr()
    event = {"content": "can I ship inventory-api now?", "ts": "2026-09-01T12:00:00Z"}
    assert (
        main(["inject", "itops", "--event", json.dumps(event), "--user", "kenji", "--json", *home])
        == 0
    )
    wc = json.loads(capsys.readouterr().out)
    ids = {json.loads(x)["event_id"] for x in SAMPLE.read_text().splitlines()}
    knowledge = [ln for ln in wc["lines"] if ln["kind"] == "knowledge"]
    assert wc["intent"] == "deploy_check" and "environment:prod" in wc["entities"]
    assert knowledge and all(
        ln["evidence_ids"] and set(ln["evidence_ids"]) <= ids for ln in knowledge
    )
    text = " ".join(ln["text"] for ln in knowledge)
    assert "frozen" in text and "fulfilment" in text.lower()  # the freeze and the owner
    # a pack passed to inject overrides the recorded one for that call only
    assert (
        main(
            [
                "inject",
                "itops",
                "--event",
                json.dumps(event),
                "--domain",
                "trading",
                "--json",
                *home,
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["intent"] != "deploy_check"


def test_ingest_refuses_a_malformed_pack_before_writing(tmp_path: Path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nentity_types: {}\nrelations: []\nintents: []\n")
    rc = main(
        [
            "ingest",
            str(SAMPLE),
            "--format",
            "events",
            "--domain",
            str(bad),
            "--writer",
            "none",
            "--embedder",
            "none",
            "--home",
            str(tmp_path / "home"),
        ]
    )
    assert rc == 2
    assert f"{bad}:" in capsys.readouterr().err
    assert not (tmp_path / "home" / "groups").exists()

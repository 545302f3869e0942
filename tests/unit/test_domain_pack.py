"""Domain packs (issue 27): the bundled packs validate, a malformed pack is refused with its
file, line, entry and field, a skeleton from ``domain new`` checks, and a pack written without
code drives Detect, extraction and injection."""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from speakerflow.cli import main
from speakerflow.graphs.facts import FactGraph
from speakerflow.ops.inject import PassiveInjector
from speakerflow.ops.knowledge.canonicalize import Canonicalizer
from speakerflow.ops.knowledge.detect import Detector
from speakerflow.ops.knowledge.domain.load import (
    PackError,
    bundled,
    bundled_dir,
    load_pack,
    parse_pack,
)
from speakerflow.ops.knowledge.domain.schema import DomainPack
from speakerflow.ops.knowledge.extract_knowledge import Event, KnowledgeExtractor
from speakerflow.ops.knowledge.invalidate import upsert_facts
from speakerflow.ops.knowledge.lexicon import lexicon_for
from speakerflow.ops.text.people import PersonResolver

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def skeleton(name: str = "shop") -> str:
    text = (bundled_dir() / "skeleton.yaml").read_text(encoding="utf-8")
    return text.format(name=name, title=name.capitalize())


def test_bundled_packs_validate_and_the_shipped_schema_is_current():
    packs = bundled()
    assert "trading" in packs
    for path in packs.values():
        pack = load_pack(path)
        assert pack.relations and pack.intents
        if pack.sample_events:
            assert (path.parent / pack.sample_events).is_file(), path
    shipped = json.loads((bundled_dir() / "domain-pack.schema.json").read_text())
    assert shipped == DomainPack.model_json_schema()  # regenerate: `speakerflow domain schema`


@pytest.mark.parametrize(
    ("old", "new", "entry", "field", "says"),
    [
        ("    value: money ", "    value: monee ", "relations[0] (price)", "value", "'percent'"),
        (
            "    subject: widget\n    value: category",
            "    subject: gadget\n    value: category",
            "relations[1] (stock)",
            "subject",
            "no entity type",
        ),
        (
            "sold_out: [sold out,",
            "sold_out: [in stock,",
            "relations[1] (stock)",
            "values.sold_out",
            "says both",
        ),
        (
            "needs: [commercial,",
            "needs: [nonsense,",
            "intents[0] (sales_question)",
            "needs[0]",
            "neither a relation kind",
        ),
        (
            "risk_escalation: [refund*]",
            "risk_escalation: ['re:(unclosed']",
            "risk_escalation[0]",
            "",
            "not a valid pattern",
        ),
        (
            '      - {id: "beta-widget", aliases: ["beta"]}',
            '      - {id: "beta-widget", aliases: ["beta"], colour: blue}',
            "entity_types.widget.entities[1] (beta-widget)",
            "colour",
            "Extra inputs",
        ),
        ("  relation: stock\n", "  relation: price\n", "state", "relation", "not a category"),
    ],
)
def test_a_malformed_pack_names_its_file_line_entry_and_field(old, new, entry, field, says):
    text = skeleton()
    assert old in text
    bad = text.replace(old, new, 1)
    with pytest.raises(PackError) as err:
        parse_pack(bad, "my/pack.yaml")
    e = err.value
    assert e.file == "my/pack.yaml" and e.entry == entry and e.field == field, str(e)
    assert says in e.reason
    lines = text.splitlines()
    changed = next(i for i, ln in enumerate(bad.splitlines(), 1) if ln != lines[i - 1])
    assert e.line == changed  # the line the mistake is on


def test_domain_check_cli_on_a_malformed_pack(tmp_path: Path, capsys):
    path = tmp_path / "pack.yaml"
    path.write_text(skeleton().replace("    value: money ", "    value: monee ", 1))
    assert main(["domain", "check", str(path)]) == 2
    err = capsys.readouterr().err
    line = next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if "monee" in ln)
    assert f"{path}:{line}: relations[0] (price): field 'value':" in err


def test_domain_new_writes_a_skeleton_that_checks(tmp_path: Path, capsys):
    assert main(["domain", "new", "bakery", "--out", str(tmp_path)]) == 0
    folder = tmp_path / "bakery"
    assert (folder / "pack.yaml").is_file() and (folder / "sample_events.jsonl").is_file()
    capsys.readouterr()
    assert main(["domain", "check", str(folder), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["name"] == "bakery" and {r["name"] for r in info["relations"]} == {
        "price",
        "stock",
        "preferred_contact",
    }
    assert main(["domain", "new", "bakery", "--out", str(tmp_path)]) == 2  # exists: refused
    assert main(["domain", "new", "Bad-Name", "--out", str(tmp_path)]) == 2


def test_detect_reads_the_trading_pack():
    d = Detector(lexicon_for(load_pack("trading"))).detect(
        "Should I long XBT? What are the fees, and is @alpha_whale still active?"
    )
    found = [(m.surface, m.etype) for m in d.mentions if not m.fuzzy]
    assert found == [("XBT", "asset"), ("@alpha_whale", "trader")]
    assert (d.intent, d.risk, sorted(d.aspects)) == ("trade_preparation", "high", ["fee"])


def test_a_pack_of_ones_own_drives_extraction_and_injection_without_code():
    lex = lexicon_for(parse_pack(skeleton()))
    canon = Canonicalizer(lex, group_id="g")
    det = Detector(lex, canon.alias_table, people=PersonResolver(["ana", "ops"]))
    x = KnowledgeExtractor(canon, det, classifier=None)
    fg = FactGraph(None, "g")
    said = [
        ("ops", "tool_observation", "Catalogue sync: alpha-widget price $1,200, in stock."),
        ("ana", "user_turn", "beta is sold out until next week."),
        ("ana", "user_turn", "for my own updates, email me please."),
        ("ops", "tool_observation", "alpha now costs $1.3k."),
    ]
    cands = []
    for i, (who, stype, text) in enumerate(said):
        ev = Event(f"e{i}", text, who, T0 + timedelta(minutes=i), stype)
        got = x.extract(ev)
        cands += got
        upsert_facts(fg, got, ev.ts, lex=lex)
    facts = {(c.subject_id, c.relation, c.value, c.scope) for c in cands}
    assert ("widget:alphawidget", "price", "1200 USD", "shared") in facts
    assert ("widget:alphawidget", "stock", "in_stock", "shared") in facts
    assert ("widget:betawidget", "stock", "sold_out", "shared") in facts
    assert ("person:ana", "preferred_contact", "email", "user:ana") in facts
    current = {(k.subject_id, k.relation, k.value) for k in fg.items.values() if not k.invalid_at}
    assert ("widget:alphawidget", "price", "1300 USD") in current  # the later price won
    assert ("widget:alphawidget", "price", "1200 USD") not in current
    inj = PassiveInjector(fg, canon, det, intents=None)
    wc = inj.inject("how much does alpha cost, can I order one?", T0 + timedelta(hours=1), "ana")
    text = wc.text()
    assert wc.detection.intent == "sales_question"
    assert "1300 USD" in text and "email" in text  # the asker's own preference applies
    assert "1200 USD" not in text
    other = inj.inject("how much does alpha cost?", T0 + timedelta(hours=1), "bo").text()
    assert "email" not in other  # private to ana


def test_the_dagster_store_resource_takes_a_pack(tmp_path: Path):
    from speakerflow.ops.knowledge.domain.load import record_pack
    from speakerflow.pipelines.resources import HomeStore

    res = HomeStore(home=str(tmp_path), domain="itops")
    with res.open("ops", write=True) as store:
        assert res.domain_pack(store).name == "itops"  # the deployment's pack
        record_pack(store, load_pack("trading"))
        assert res.domain_pack(store).name == "trading"  # a group's own pack wins
    with HomeStore(home=str(tmp_path)).open("other", write=True) as store:
        assert HomeStore(home=str(tmp_path)).domain_pack(store) is None  # the default pack

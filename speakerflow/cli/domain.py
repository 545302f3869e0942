"""``speakerflow domain check|new|schema|list|bench``: domain packs (docs/custom-domains.md).

* ``check PATH`` validates a pack (a file, a folder with ``pack.yaml`` or a bundled name) and
  prints what it defines; on a malformed pack it names the file, line, entry and field.
* ``new NAME`` writes a commented skeleton ``NAME/pack.yaml`` (and a small event stream) that
  passes ``check`` as written.
* ``schema`` prints the JSON Schema of a pack; ``list`` the bundled packs.
* ``strip PACK OUT`` writes the pack without its examples (descriptions only);
* ``bench PACK --events F --probes F`` scores a pack on an event stream with probes
  (:mod:`speakerflow.benchmarks.domain_probes`: hit rate, stale rate, rumour leakage,
  traceability of the injected contexts).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from . import CliError
from .common import add_json, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("domain", help="domain packs: check, new, schema, list")
    dsub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    c = dsub.add_parser("check", help="validate a pack and print what it defines")
    c.add_argument("path", help="pack file, folder with pack.yaml, or bundled name (trading)")
    add_json(c, "what the pack defines")
    c.set_defaults(func=run_check)
    n = dsub.add_parser("new", help="write a commented skeleton pack NAME/pack.yaml")
    n.add_argument("name", help="pack name: lower-case letters, digits, underscores")
    n.add_argument("--out", default=".", help="folder to create NAME/ in (default: here)")
    add_json(n, "the files written")
    n.set_defaults(func=run_new)
    s = dsub.add_parser("schema", help="print the JSON Schema of a domain pack")
    add_json(s, "the schema (it is JSON either way)")
    s.set_defaults(func=run_schema)
    b = dsub.add_parser("list", help="the bundled packs")
    add_json(b, "the packs")
    b.set_defaults(func=run_list)
    x = dsub.add_parser(
        "strip", help="write a pack without its examples: descriptions only (an experiment)"
    )
    x.add_argument("pack", help="pack file, folder or bundled name")
    x.add_argument("out", help="the file to write (YAML)")
    add_json(x, "the file written")
    x.set_defaults(func=run_strip)
    e = dsub.add_parser("bench", help="score a pack on an event stream with probes")
    e.add_argument("pack", help="pack file, folder or bundled name")
    e.add_argument("--events", required=True, help="the event stream (JSONL, --format events)")
    e.add_argument("--probes", required=True, help="probes (JSONL: request, expect, stale ...)")
    e.add_argument("--budget", type=int, default=600, help="token budget of a context")
    e.add_argument("--out", default=None, help="write the report JSON here")
    add_json(e, "the report")
    e.set_defaults(func=run_bench)


def summary(pack) -> dict:
    """What a pack defines, as plain data (what ``check`` prints)."""
    return {
        "name": pack.name,
        "title": pack.title,
        "entity_types": {
            t: {
                "entities": len(et.entities),
                "aliases": sum(len(e.aliases) for e in et.entities),
                "named_by": "codes"
                if et.codes
                else "handles"
                if et.handles
                else "patterns"
                if et.patterns
                else "names",
            }
            for t, et in pack.entity_types.items()
        },
        "relations": [
            {
                "name": r.name,
                "subject": r.subject,
                "value": r.object if r.value == "entity" else r.value,
                "values": list(r.values),
                "scope": r.scope,
                "half_life_days": r.half_life_days,
                "kinds": r.kinds,
                "examples": len(r.examples),
            }
            for r in pack.relations
        ],
        "intents": [
            {
                "name": i.name,
                "needs": i.needs,
                "risk": i.risk,
                "examples": len(i.examples),
                "cues": len(i.cues),
            }
            for i in pack.intents
        ],
        "state": pack.state.relation if pack.state else None,
        "sample_events": pack.sample_events,
    }


def run_check(args: argparse.Namespace) -> int:
    from speakerflow.ops.knowledge.domain.load import load_pack, pack_path

    path = pack_path(args.path)
    pack = load_pack(path)  # a PackError (ValueError) names file, line, entry and field
    info = {"file": str(path), **summary(pack)}
    if pack.sample_events and not (path.parent / pack.sample_events).is_file():
        raise CliError(
            f"{path}: field 'sample_events': {pack.sample_events!r} is not a file next to it"
        )
    if args.json:
        print_json(info)
        return 0
    print(f"{path}: pack {pack.name!r} ({pack.title or 'no title'}) is valid")
    print("entity types:")
    for t, e in info["entity_types"].items():
        print(
            f"  {t}: {e['entities']} reference entities, {e['aliases']} aliases ({e['named_by']})"
        )
    print("relations:")
    for r in info["relations"]:
        vals = f" [{', '.join(r['values'])}]" if r["values"] else ""
        print(
            f"  {r['name']}: {r['subject']} -> {r['value']}{vals}, {r['scope']}, "
            f"half-life {r['half_life_days']:g} d, kinds {', '.join(r['kinds']) or '-'}"
        )
    print("intents:")
    for i in info["intents"]:
        print(
            f"  {i['name']} ({i['risk']} risk): needs {', '.join(i['needs']) or '-'}; "
            f"{i['examples']} example requests, {i['cues']} cue words"
        )
    print(f"state relation: {info['state'] or '-'}; sample events: {pack.sample_events or '-'}")
    return 0


#: a few events of the skeleton's example domain (``domain new``)
_SAMPLE = [
    ("ops", "tool_observation", "Catalogue sync: alpha-widget price $1,200, in stock."),
    ("ana", "user_turn", "beta is sold out until next week."),
    ("ana", "user_turn", "for my own updates, email me please."),
]


def run_new(args: argparse.Namespace) -> int:
    from speakerflow.ops.knowledge.domain.load import bundled_dir, parse_pack

    if not re.fullmatch(r"[a-z][a-z0-9_]*", args.name):
        raise CliError(f"pack name {args.name!r}: use lower-case letters, digits and underscores")
    folder = Path(args.out) / args.name
    if folder.exists():
        raise CliError(f"{folder} exists; pick another name or --out")
    title = args.name.replace("_", " ").capitalize()
    text = (bundled_dir() / "skeleton.yaml").read_text(encoding="utf-8")
    text = text.format(name=args.name, title=title)
    parse_pack(text, str(folder / "pack.yaml"))  # the skeleton is valid as written
    folder.mkdir(parents=True)
    (folder / "pack.yaml").write_text(text, encoding="utf-8")
    events = [
        {
            "event_id": f"{args.name}-{i + 1}",
            "group_id": args.name,
            "ts": f"2026-01-0{i + 1}T09:00:00Z",
            "source_type": stype,
            "source": who,
            "content": content,
        }
        for i, (who, stype, content) in enumerate(_SAMPLE)
    ]
    (folder / "sample_events.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in events), encoding="utf-8"
    )
    if args.json:
        print_json(
            {
                "pack": str(folder / "pack.yaml"),
                "sample_events": str(folder / "sample_events.jsonl"),
            }
        )
        return 0
    print(f"wrote {folder}/pack.yaml and {folder}/sample_events.jsonl")
    print(f"next: edit it, then `speakerflow domain check {folder}` (docs/custom-domains.md)")
    return 0


def run_schema(args: argparse.Namespace) -> int:
    from speakerflow.ops.knowledge.domain.schema import DomainPack

    print_json(DomainPack.model_json_schema())
    return 0


def run_list(args: argparse.Namespace) -> int:
    from speakerflow.ops.knowledge.domain.load import bundled, load_pack

    packs = [
        {"name": name, "title": load_pack(path).title, "path": str(path)}
        for name, path in bundled().items()
    ]
    if args.json:
        print_json(packs)
        return 0
    for p in packs:
        print(f"{p['name']}: {p['title']} ({p['path']})")
    return 0


def run_bench(args: argparse.Namespace) -> int:
    from speakerflow.benchmarks.domain_probes import run

    rep = run(args.pack, args.events, args.probes, budget=args.budget, out=args.out)
    if args.json:
        print_json(rep)
        return 0
    keys = ("hit_rate", "stale_rate", "rumour_leakage", "traceability", "evidence")
    print(f"pack {rep['pack']}: {rep['events']} events, {rep['probes']} probes")
    print("  " + ", ".join(f"{k} {rep[k]}" for k in (*keys, "intent_accuracy", "tokens_mean")))
    for intent, t in rep["by_intent"].items():
        print(f"  {intent} ({t['probes']}): " + ", ".join(f"{k} {t[k]}" for k in keys[:3]))
    return 0


def run_strip(args: argparse.Namespace) -> int:
    """The pack without example requests, example statements, value examples and chatter:
    what a pack of descriptions only gives the prototype classifiers."""
    import yaml

    from speakerflow.ops.knowledge.domain.load import load_pack

    data = load_pack(args.pack).model_dump(exclude_defaults=True)
    for intent in data["intents"]:
        intent.pop("examples", None)
    for rel in data["relations"]:
        rel.pop("examples", None)
        rel.pop("value_examples", None)
    data.pop("chatter", None)
    data.pop("sample_events", None)
    Path(args.out).write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    if args.json:
        print_json({"out": args.out, "name": data["name"]})
        return 0
    print(f"wrote {args.out} ({data['name']}, descriptions only)")
    return 0

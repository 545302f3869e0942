"""The ``speakerflow`` command line. Each sub-command lives in its own module with a
``register(subparsers)`` function; add a module name to ``COMMANDS`` to add a command."""
from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = ("ingest", "search", "stats", "demo", "bench")


class CliError(Exception):
    """A user-facing error: printed without a traceback, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="speakerflow", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"speakerflow.cli.{name}").register(sub)
    return parser


def _version() -> str:
    from speakerflow import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CliError as exc:
        print(f"speakerflow: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, PermissionError, RuntimeError) as exc:
        # loaders and stores raise these with messages meant for people
        print(f"speakerflow: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The ``speakerflow`` command line. Each sub-command lives in its own module of this
package with a ``register(subparsers)`` function; modules are discovered automatically."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys


class CliError(Exception):
    """A user-facing error: printed without a traceback, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="speakerflow", description="speakerflow: speaker-centred long-term memory"
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"speakerflow.cli.{info.name}")
        if hasattr(module, "register"):
            module.register(sub)
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
    except BrokenPipeError:
        # the reader went away (``speakerflow stats | head``): stop quietly, as cat does; point
        # stdout at /dev/null so the interpreter's final flush does not raise again
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The ``speakerflow`` command line. Each sub-command lives in its own module of this
package with a ``register(subparsers)`` function; modules are discovered automatically.
:func:`main` registers only the module named like the command it runs (``maintain`` imports
``maintain.py`` and what it needs, not every command's imports); help, ``--version`` and a
command no module is named after (``mcp``, in ``serve.py``) get every module."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys


class CliError(Exception):
    """A user-facing error: printed without a traceback, exit status 2."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every sub-command; ``command``: only that module's, where a module of
    this package has that name (else every module's)."""
    parser = argparse.ArgumentParser(
        prog="speakerflow", description="speakerflow: speaker-centred long-term memory"
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    names = sorted(m.name for m in pkgutil.iter_modules(__path__))
    if command in names:
        module = importlib.import_module(f"{__name__}.{command}")
        if hasattr(module, "register"):
            module.register(sub)
            return parser
    for name in names:
        module = importlib.import_module(f"{__name__}.{name}")
        if hasattr(module, "register"):
            module.register(sub)
    return parser


def _version() -> str:
    from speakerflow import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv and not argv[0].startswith("-") else None)
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

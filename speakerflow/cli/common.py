"""Flags and helpers shared by sub-commands."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from speakerflow.graphs import Home
from speakerflow.settings import home_root


def add_home(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--home", default=None, help="store home (default: $SPEAKERFLOW_HOME or ./.speakerflow)"
    )


def home_of(args: argparse.Namespace) -> Home:
    return Home(home_root(args.home))


class _HidePandas:
    """A meta-path finder under which ``import pandas`` fails (see :func:`skip_pandas_probe`)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas":
            raise ModuleNotFoundError("pandas hidden from pyarrow's probe", name=name)


def skip_pandas_probe() -> None:
    """Keep pyarrow from importing pandas in a command that never uses pandas (the store
    commands: ``maintain``, ``ask``, ``search``, ``stats``, ``memory``, ``wiki``, ``inject``).

    pyarrow imports pandas (about 0.6 s of CPU here) the first time it converts Python
    objects (``pa.array`` or ``pa.table`` of lists), only to ask whether they are pandas
    objects. This makes that first probe with pandas hidden: pyarrow notes "no pandas" and
    converts lists as lists. Its pandas functions (``to_pandas``, ``from_pandas``) still
    import pandas when called, and from then on it knows pandas again; until then a pandas
    object given to ``pa.array`` converts as a plain sequence, so commands that hand pyarrow
    pandas objects (none of speakerflow's own code does) must not call this. Nothing happens
    once pandas is imported."""
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    hide = _HidePandas()
    sys.meta_path.insert(0, hide)
    try:
        pa.array(["probe"])
    finally:
        sys.meta_path.remove(hide)


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, default=str, ensure_ascii=False)
    sys.stdout.write("\n")


@contextmanager
def loading(what: str) -> Iterator[None]:
    """Say on stderr that ``what`` is loading, then how long it took (a cold command's
    model loads are seconds: the user sees what the wait is)."""
    print(f"loading {what} ...", file=sys.stderr, flush=True)
    start = time.perf_counter()
    yield
    print(f"loaded {what} in {time.perf_counter() - start:.1f}s", file=sys.stderr, flush=True)


def add_json(parser: argparse.ArgumentParser, what: str = "the report") -> None:
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON instead of text")


def table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """A plain-text table (left-aligned columns, a header line) of ``rows``."""
    if not rows:
        return "(no rows)"
    columns = columns or list(rows[0])

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        return "-" if v is None else str(v)

    body = [[str(c) for c in columns]] + [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(line[i]) for line in body) for i in range(len(columns))]
    return "\n".join(
        "  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() for line in body
    )


def print_text(report: Any, prefix: str = "", depth: int = 0, max_items: int = 12) -> None:
    """A nested report as indented ``key: value`` lines: the human-readable default of the
    commands whose ``--json`` prints the report itself (long lists are cut to ``max_items``)."""
    if isinstance(report, dict):
        for k, v in report.items():
            if isinstance(v, dict | list) and v and depth < 4:
                flat = isinstance(v, dict) and all(
                    isinstance(b, int | float | str | bool) or b is None for b in v.values()
                )
                if isinstance(v, dict) and flat and len(v) <= 16:
                    print(f"{prefix}{k}: " + ", ".join(f"{a} {b}" for a, b in v.items()))
                else:
                    print(f"{prefix}{k}:")
                    print_text(v, prefix + "  ", depth + 1, max_items)
            else:
                print(f"{prefix}{k}: {v}")
    elif isinstance(report, list):
        for item in report[:max_items]:
            if isinstance(item, dict | list):
                print(f"{prefix}-")
                print_text(item, prefix + "  ", depth + 1, max_items)
            else:
                print(f"{prefix}- {item}")
        if len(report) > max_items:
            print(f"{prefix}... {len(report) - max_items} more")
    else:
        print(f"{prefix}{report}")


def emit(report: Any, as_json: bool) -> None:
    """``--json``: the report as JSON; else :func:`print_text`."""
    if as_json:
        print_json(report)
    else:
        print_text(report)

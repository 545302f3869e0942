"""Flags and helpers shared by sub-commands."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from speakerflow.graphs import Home
from speakerflow.settings import home_root


def add_home(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--home", default=None, help="store home (default: $SPEAKERFLOW_HOME or ./.speakerflow)")


def home_of(args: argparse.Namespace) -> Home:
    return Home(home_root(args.home))


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, default=str, ensure_ascii=False)
    sys.stdout.write("\n")

"""Defaults in one place. Override through CLI flags or the environment (never secrets here)."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_HOME = ".speakerflow"
HOME_ENV = "SPEAKERFLOW_HOME"
BUNDLED_SAMPLE = Path(__file__).parent / "data" / "sample_team.jsonl"


def home_root(explicit: str | os.PathLike | None = None) -> Path:
    """The store home: ``explicit``, else ``$SPEAKERFLOW_HOME``, else ``./.speakerflow``."""
    return Path(explicit or os.environ.get(HOME_ENV) or DEFAULT_HOME).resolve()

"""Operators: typed, metered steps over Arrow tables, and their composition.

The operators live in family folders (docs/design.md, "The family map"): ``core`` (the
framework), ``loaders``, ``write`` (SpeakerMem write path), ``query`` (query path),
``knowledge`` (InKH), ``inject``, ``text`` (text tools) and ``backends`` (chat models).
"""

from speakerflow.ops import core
from speakerflow.ops.core import *  # noqa: F403  (the framework's names, listed once in core)

__all__ = list(core.__all__)

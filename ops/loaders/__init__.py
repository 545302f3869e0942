"""Loaders: files -> validated message tables, one per group.

Every loader reads the whole file and validates every row before anything is written,
so a malformed file raises :class:`LoadError` (file, line or record, field) and leaves the
store exactly as it was.
"""

from speakerflow.ops.loaders.common import FORMATS, LoadError, WrongFormatError
from speakerflow.ops.loaders.load import detect_format, load

__all__ = ["FORMATS", "LoadError", "detect_format", "load", "WrongFormatError"]

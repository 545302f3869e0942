"""The SpeakerMem Writer: segments -> ADD / UPDATE / NOOP actions (see :mod:`.base`)."""

from .base import Segment, WriterBackend, WriterOutput

__all__ = ["Segment", "WriterBackend", "WriterOutput"]

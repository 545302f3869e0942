"""The SpeakerMem Writer: segments -> ADD / UPDATE / NOOP actions (see :mod:`.base`)."""

from speakerflow.ops.write.writer.base import Segment, WriterBackend, WriterOutput

__all__ = ["Segment", "WriterBackend", "WriterOutput"]

"""The SpeakerMem Writer: segments -> ADD / UPDATE / NOOP actions (its interfaces are in
:mod:`speakerflow.ops.write.interfaces`)."""

from speakerflow.ops.write.interfaces import Segment, WriterBackend, WriterOutput

__all__ = ["Segment", "WriterBackend", "WriterOutput"]

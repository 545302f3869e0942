"""The SpeakerMem write path: Segment, Writer, Validate (the action contract), Upsert."""

from speakerflow.ops.write.segment import Segmenter
from speakerflow.ops.write.upsert import Upsert
from speakerflow.ops.write.validate import Validate
from speakerflow.ops.write.writer.operator import Writer

__all__ = ["Segmenter", "Upsert", "Validate", "Writer"]

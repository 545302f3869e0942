"""The InKH knowledge path: Detect, Canonicalize, ExtractKnowledge, Invalidate, Decay, Govern,
Maintain, Wiki."""

from speakerflow.ops.knowledge.canonicalize import Canonicalize
from speakerflow.ops.knowledge.decay import Decay
from speakerflow.ops.knowledge.detect import Detect
from speakerflow.ops.knowledge.extract_knowledge import ExtractKnowledge
from speakerflow.ops.knowledge.governance import Govern
from speakerflow.ops.knowledge.invalidate import Invalidate
from speakerflow.ops.knowledge.maintenance import Maintain
from speakerflow.ops.knowledge.wiki import Wiki

__all__ = [
    "Canonicalize",
    "Decay",
    "Detect",
    "ExtractKnowledge",
    "Govern",
    "Invalidate",
    "Maintain",
    "Wiki",
]

"""The SpeakerMem query path: Project, Recall, Select, Resolve, Compose, Answer, Judge."""

from speakerflow.ops.query.answer import Answer
from speakerflow.ops.query.compose import Compose
from speakerflow.ops.query.judge import Judge
from speakerflow.ops.query.project import Project
from speakerflow.ops.query.recall import Recall
from speakerflow.ops.query.resolve import Resolve
from speakerflow.ops.query.select import Select

__all__ = ["Answer", "Compose", "Judge", "Project", "Recall", "Resolve", "Select"]

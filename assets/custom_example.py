"""An example custom pipeline in the UI (walked through in ``docs/custom-pipelines.md``).

A user's own message source (JSONL files in ``<home>/my-source/<group>.jsonl``) >>
``Detect`` >> ``Canonicalize`` (InKH entity mentions) >> ``Segmenter`` >>
``ForEach("segment_id", Writer >> Validate >> Upsert)`` (the SpeakerMem write path, one
segment at a time), as four assets ``my_memory/detect`` -> ``my_memory/canonicalize`` ->
``my_memory/segment`` -> ``my_memory/for_each_segment_id``, partitioned by group, each with
its operator's stats as metadata (the last one with the Writer's, Validate's and Upsert's).

Detect, Canonicalize and Segmenter are passthrough operators: each hands the message
columns on and adds its own, so the Writer finds ``speaker``, ``text`` ... and
``segment_id`` in the table it gets.
"""

from pathlib import Path
from typing import Any

import pyarrow as pa

from speakerflow.ops.core import ForEach, Pipeline
from speakerflow.ops.knowledge.canonicalize import Canonicalize
from speakerflow.ops.knowledge.detect import Detect
from speakerflow.ops.loaders import load
from speakerflow.ops.write.segment import Segmenter
from speakerflow.ops.write.upsert import Upsert
from speakerflow.ops.write.validate import Validate
from speakerflow.ops.write.writer.operator import Writer
from speakerflow.settings import home_root

from .factory import pipeline_assets

#: Where the example source reads: ``<home>/my-source/<group>.jsonl``.
SOURCE_DIRNAME = "my-source"


def my_source(store: Any) -> pa.Table:
    """The user's own source: append ``<home>/my-source/<group>.jsonl`` to the group's
    verbatim track (idempotent), then hand the group's messages to the pipeline."""
    path = Path(home_root()) / SOURCE_DIRNAME / f"{store.group_id}.jsonl"
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: put the group's messages there (speakerflow JSONL, docs/formats.md)"
        )
    for _, table in load(path, "jsonl", group=store.group_id):
        store.append_messages(table)
    return store.messages()


def build_my_pipeline() -> Pipeline:
    """Detect >> Canonicalize >> Segmenter >> ForEach(segment: Writer >> Validate >> Upsert).

    A fresh pipeline per run (stats start at zero). The Writer takes its backend from
    ``ctx.backends["writer"]`` (the ``chat_model`` resource; ``"rules"`` offline).
    """
    return (
        Detect()
        >> Canonicalize()
        >> Segmenter(window=25)
        >> ForEach("segment_id", Writer() >> Validate() >> Upsert())
    )


my_memory = pipeline_assets(
    "my_memory", build_my_pipeline, source=my_source, deps=(), writes_store=True
)

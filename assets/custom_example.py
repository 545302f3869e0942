"""An example custom pipeline in the UI (walked through in ``docs/custom-pipelines.md``).

A user's own message source (JSONL files in ``<home>/my-source/<group>.jsonl``) >>
``Detect`` >> ``Canonicalize`` (InKH entity mentions) >> ``write`` (the SpeakerMem write
path: Writer -> Validate -> Upsert per segment), as three assets
``my_memory/detect`` -> ``my_memory/canonicalize`` -> ``my_memory/write``, partitioned by
group, each with its operator's stats as metadata.
"""
from pathlib import Path
from typing import Any

import pyarrow as pa

from speakerflow.ops import Lambda
from speakerflow.ops.base import Context
from speakerflow.ops.loaders import load
from speakerflow.ops.pipeline import Pipeline
from speakerflow.schemas import RECORD_SCHEMA
from speakerflow.settings import home_root

from .factory import pipeline_assets

#: Where the example source reads: ``<home>/my-source/<group>.jsonl``.
SOURCE_DIRNAME = "my-source"


def my_source(store: Any) -> pa.Table:
    """The user's own source: append ``<home>/my-source/<group>.jsonl`` to the group's
    verbatim track (idempotent), then hand the group's messages to the pipeline."""
    path = Path(home_root()) / SOURCE_DIRNAME / f"{store.group_id}.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path}: put the group's messages there (speakerflow JSONL, docs/formats.md)")
    for _, table in load(path, "jsonl", group=store.group_id):
        store.append_messages(table)
    return store.messages()


def write_memory(table: pa.Table, ctx: Context) -> pa.Table:
    """Writer -> Validate -> Upsert over the group's unwritten messages; returns its records."""
    from speakerflow.pipelines.write_path import write_group

    report = write_group(ctx.store, ctx.backends.get("writer", "rules"), progress=False)
    ctx.state["rejects"] = pa.Table.from_pylist([{"reason": str(r.get("reason"))} for r in report.rejects],
                                                schema=pa.schema([("reason", pa.string())]))
    return ctx.store.records()


def build_my_pipeline() -> Pipeline:
    """Detect >> Canonicalize >> write (a fresh pipeline per run: stats start at zero)."""
    from speakerflow.ops.canonicalize import Canonicalize
    from speakerflow.ops.detect import Detect

    write = Lambda(write_memory, name="write", consumes=("msg_id",), produces=RECORD_SCHEMA)
    return Detect() >> Canonicalize() >> write


my_memory = pipeline_assets("my_memory", build_my_pipeline, source=my_source, deps=(), writes_store=True)

"""An example InKH pipeline built from the registered operators (``docs/custom-pipelines.md``).

A user's own agent event stream (``<home>/my-events/<group>.jsonl``, the ``events`` format of
``docs/formats.md``) >> ``Detect`` >> ``Canonicalize`` >> ``ExtractKnowledge`` >> ``Invalidate``
>> ``Decay`` >> ``Govern``, as six assets ``my_knowledge/detect`` -> ... -> ``my_knowledge/govern``,
partitioned by group, each with its operator's stats as metadata. ``Invalidate`` writes the
facts (with write-time invalidations) into the group's graph, exactly as
``build_entity_graph`` does; ``Decay`` and ``Govern`` then say which of the written facts an
action of high risk may use now.
"""

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from speakerflow.ops.core import Pipeline
from speakerflow.ops.knowledge.canonicalize import Canonicalize
from speakerflow.ops.knowledge.decay import Decay
from speakerflow.ops.knowledge.detect import Detect
from speakerflow.ops.knowledge.extract_knowledge import ExtractKnowledge
from speakerflow.ops.knowledge.governance import Govern
from speakerflow.ops.knowledge.invalidate import Invalidate
from speakerflow.ops.loaders import load
from speakerflow.settings import home_root

from .factory import pipeline_assets

#: Where the example source reads: ``<home>/my-events/<group>.jsonl``.
EVENTS_DIRNAME = "my-events"


def my_events(store: Any) -> pa.Table:
    """Append ``<home>/my-events/<group>.jsonl`` to the group's verbatim track (idempotent by
    id), then hand on the group's rows in time order (the reader keeps discourse state)."""
    path = Path(home_root()) / EVENTS_DIRNAME / f"{store.group_id}.jsonl"
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: put the group's events there (events JSONL, docs/formats.md)"
        )
    for _, table in load(path, "events", group=store.group_id):
        store.append_messages(table)
    msgs = store.messages()
    return msgs.take(pc.sort_indices(msgs, [("ts", "ascending")]))


def build_knowledge_pipeline() -> Pipeline:
    """Detect >> Canonicalize >> ExtractKnowledge >> Invalidate >> Decay >> Govern(high risk)."""
    return (
        Detect()
        >> Canonicalize()
        >> ExtractKnowledge()
        >> Invalidate()
        >> Decay()
        >> Govern(risk="high")
    )


my_knowledge = pipeline_assets(
    "my_knowledge", build_knowledge_pipeline, source=my_events, deps=(), writes_store=True
)

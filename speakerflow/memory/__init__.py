"""``from speakerflow import Memory``: the store, the query path and the harness as one
Python object, with the embedder and every group's store opened once.

>>> import tempfile
>>> from speakerflow import Memory
>>> with Memory(home=tempfile.mkdtemp(), embedder="hashing") as mem:
...     added = mem.add("team", [{"msg_id": "m1", "ts": "2026-03-06T14:15:00Z", "speaker": "Ana",
...                              "text": "The offsite will be in Porto, 12 to 14 May."}])
...     result = mem.ask("team", "Where will the offsite be?")
>>> added.ingested, "m1" in result.cited_ids()
(1, True)

Every group is opened on first use and kept open (writable: the group's single-writer
lock is held until :meth:`Memory.close`), so the message table, the BM25 index, the
Kuzu graph, the embedding caches and the model stay warm between calls. Writes to one
group are serialised by a per-group lock; different groups may be used from different
threads at once. ``ask`` and ``search`` read a :class:`ReadSnapshot` (the group as of its
last complete write, with every cache the query path needs built) without taking the
group's lock, so they never wait for a write. The functions below the class work on one open
:class:`~speakerflow.graphs.GroupStore` and are what the CLI calls too.
"""

from speakerflow.memory.batching import BatchingEmbedder
from speakerflow.memory.core import Memory
from speakerflow.memory.functions import (
    AddResult,
    GroupNotFoundError,
    SearchHit,
    UnknownSpeakerError,
    check_speaker,
    inject_context,
    memory_chains,
    message_objects,
    message_rows,
    messages_table,
    parse_event,
    search_messages,
)
from speakerflow.memory.snapshot import ReadSnapshot
from speakerflow.memory.warm import Warmth, warm_up

__all__ = [
    "AddResult",
    "BatchingEmbedder",
    "GroupNotFoundError",
    "Memory",
    "ReadSnapshot",
    "SearchHit",
    "UnknownSpeakerError",
    "Warmth",
    "check_speaker",
    "inject_context",
    "memory_chains",
    "message_objects",
    "message_rows",
    "messages_table",
    "parse_event",
    "search_messages",
    "warm_up",
]

"""The Inject operator against PassiveInjector.inject on the same events (CPU ms per event).

A group built by ``build_entity_graph`` from a harness stream (seed 5, 4 rounds x 80
episodes); its user questions, two days later, go through ``PassiveInjector.inject`` one by
one and through the ``Inject`` operator as one table; the contexts must be identical, and the
best of three runs of each is reported (CPU time, so other load on the machine counts less).

    python -m speakerflow.benchmarks.inject_operator
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from speakerflow.graphs import Home
from speakerflow.ops.core.base import Context
from speakerflow.ops.inject import InjectConfig, PassiveInjector
from speakerflow.ops.inject.operators import Inject
from speakerflow.ops.knowledge.group_state import KNOWLEDGE_RECORDS
from speakerflow.ops.knowledge.load import load_knowledge
from speakerflow.pipelines.entity_path import build_entity_graph
from speakerflow.schemas import MESSAGE_SCHEMA

from .harness.generator import Generator


def run(seed: int = 5, rounds: int = 4, episodes: int = 80, repeats: int = 3) -> dict[str, float]:
    gen = Generator(seed, rounds, episodes)
    eps = [ep for _, batch in gen.stream() for ep in batch]
    evs = [e for ep in eps for e in ep.events]
    with tempfile.TemporaryDirectory(prefix="inject-op-") as tmp:
        store = Home(tmp).open("desk", writable=True)
        try:
            store.append_messages(
                pa.Table.from_pylist(
                    [{**e, "group_id": "desk", "reply_to": None} for e in evs],
                    schema=MESSAGE_SCHEMA,
                )
            )
            build_entity_graph(store, now=datetime(2026, 6, 1, tzinfo=UTC))
            qs = [next(e for e in ep.events if e["msg_id"] == ep.qid) for ep in eps if ep.qid]
            events = pa.table(
                {
                    "text": [q["text"] for q in qs],
                    "ts": pa.array(
                        [q["ts"] + timedelta(days=2) for q in qs], pa.timestamp("us", tz="UTC")
                    ),
                    "user": [q["speaker"] for q in qs],
                }
            )
            knowledge = load_knowledge(store)
            inj = PassiveInjector(*knowledge, config=InjectConfig(record_use=False))
            rows = list(
                zip(
                    events["text"].to_pylist(),
                    events["ts"].to_pylist(),
                    events["user"].to_pylist(),
                    strict=True,
                )
            )
            for text, ts, user in rows:  # warm the intent memo, as a running service has it
                inj.inject(text, ts, user)
            ref, op_ms = [], []
            for _ in range(repeats):
                t0 = time.process_time()
                contexts = [inj.inject(text, ts, user) for text, ts, user in rows]
                ref.append((time.process_time() - t0) * 1000 / len(rows))
                t0 = time.process_time()
                out = Inject()(events, Context(store=store, state={KNOWLEDGE_RECORDS: knowledge}))
                op_ms.append((time.process_time() - t0) * 1000 / len(rows))
                if out["context"].to_pylist() != [c.text() for c in contexts]:
                    raise AssertionError("the Inject operator and PassiveInjector.inject disagree")
        finally:
            store.close()
    return {
        "events": len(rows),
        "facts": len(knowledge[0].items),
        "inject_cpu_ms": round(min(ref), 3),
        "operator_cpu_ms": round(min(op_ms), 3),
    }


if __name__ == "__main__":
    print(run())

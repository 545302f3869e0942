"""The six Stage A baselines as real configurations of the speakerflow operators.

Every baseline builds a context for the user query of an episode and returns
``(lines, tokens_read, model_steps)``; ``lines`` are :class:`ContextLine` objects citing event
ids. They read only System 1 events and what the operators derived from them.

* ModelOnly: no tools, no memory (header only).
* ToolAgent: this workflow's tool observations (Fuse state), no memory.
* SimpleMemory: + BM25 (Tantivy) over past raw events, 1,200 token budget, no graph, no
  invalidation.
* WikiWalk: + iterative walk over wiki pages compiled from the un-invalidated graph: start at the
  detected entities' pages, follow links, one modelled model step per page, 4,200 token budget.
* KH-NoInv: passive injection from the temporal graph built without write-time invalidation.
* InKH: passive injection from the graph with write-time invalidation (the full system).
"""

from __future__ import annotations

from datetime import timedelta

from speakerflow.graphs.text_index import SearchFilter
from speakerflow.ops.inject import ContextLine, InjectConfig, PassiveInjector, count_tokens
from speakerflow.ops.inject.fuse import fuse, header, state_line
from speakerflow.ops.knowledge.wiki import entity_page_lines, fact_line

NAMES = ("InKH", "KH-NoInv", "WikiWalk", "SimpleMemory", "ToolAgent", "ModelOnly")
BUDGET = {
    "InKH": 600,
    "KH-NoInv": 600,
    "WikiWalk": 4200,
    "SimpleMemory": 1200,
    "ToolAgent": 600,
    "ModelOnly": 600,
}


class Baseline:
    name = ""
    tools = True

    def context(self, query: dict, tool_events: list[dict]) -> tuple[list[ContextLine], int, int]:
        raise NotImplementedError

    def state(self, tool_events):
        return [state_line(e["text"], e["msg_id"]) for e in tool_events] if self.tools else []


class ModelOnly(Baseline):
    name, tools = "ModelOnly", False

    def __init__(self, detector):
        self.detector = detector

    def context(self, query, tool_events):
        d = self.detector.detect(query["text"])
        lines = [header(query["speaker"], d.intent, d.risk, [])]
        return lines, sum(x.tokens for x in lines), 1


class ToolAgent(ModelOnly):
    name, tools = "ToolAgent", True

    def context(self, query, tool_events):
        d = self.detector.detect(query["text"])
        lines = fuse(
            header(query["speaker"], d.intent, d.risk, []),
            self.state(tool_events),
            [],
            BUDGET[self.name],
        )
        return lines, sum(x.tokens for x in lines), 1 + len(tool_events)


class SimpleMemory(ToolAgent):
    name = "SimpleMemory"

    def __init__(self, detector, store, texts: dict[str, dict]):
        super().__init__(detector)
        self.store, self.texts = store, texts

    def context(self, query, tool_events):
        d = self.detector.detect(query["text"])
        flt = SearchFilter(until=query["ts"] - timedelta(microseconds=1))
        hits = self.store.search(query["text"], k=40, flt=flt)
        mem = []
        for rank, h in enumerate(hits):
            ev = self.texts[h.doc_id]
            line = state_line(ev["text"], h.doc_id)
            line.kind, line.utility = "memory", 1.0 / (rank + 1)
            mem.append(line)
        lines = fuse(
            header(query["speaker"], d.intent, d.risk, []),
            self.state(tool_events),
            mem,
            BUDGET[self.name],
            40,
        )
        return lines, sum(x.tokens for x in lines), 2 + len(tool_events)


class WikiWalk(ToolAgent):
    name = "WikiWalk"

    def __init__(self, detector, canon, facts):
        super().__init__(detector)
        self.canon, self.facts = canon, facts

    def context(self, query, tool_events):
        d = self.detector.detect(query["text"])
        start = [e for e in (self.canon.resolve(m) for m in d.mentions) if e] + [
            f"person:{query['speaker']}"
        ]
        lines = fuse(
            header(query["speaker"], d.intent, d.risk, start),
            self.state(tool_events),
            [],
            BUDGET[self.name],
        )
        used = sum(x.tokens for x in lines)
        queue, seen, steps = list(dict.fromkeys(start)), set(), 1 + len(tool_events)
        while queue and used < BUDGET[self.name]:
            eid = queue.pop(0)
            if eid in seen:
                continue
            seen.add(eid)
            steps += 1  # one model step reads one page and picks the next links
            cur, old = entity_page_lines(self.facts, eid)
            for k in cur + old:  # no invalidation: the page lists every value ever recorded
                if k.scope.startswith("user:") and k.scope != f"user:{query['speaker']}":
                    continue
                text = fact_line(self.facts, k)
                ln = ContextLine(
                    text,
                    list(k.evidence_ids),
                    "knowledge",
                    [k.edge_id],
                    k.maturity,
                    k.valid_at,
                    None,
                    0.0,
                    count_tokens(text),
                )
                if used + ln.tokens > BUDGET[self.name]:
                    break
                lines.append(ln)
                used += ln.tokens
                if not k.object_id.startswith("value:"):
                    queue.append(k.object_id)
                if k.subject_id != eid:
                    queue.append(k.subject_id)
        return lines, used, steps


class Injected(ToolAgent):
    """KH-NoInv and InKH: the passive injector on their own graph."""

    def __init__(self, name, canon, facts, detector, invalidation: bool):
        self.name = name
        self.inj = PassiveInjector(
            facts, canon, detector, config=InjectConfig(remove_invalidated=invalidation)
        )

    def context(self, query, tool_events):
        wc = self.inj.inject(query["text"], query["ts"], query["speaker"], self.state(tool_events))
        return wc.lines, wc.tokens, 1 + len(tool_events)

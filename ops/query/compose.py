"""Compose: order the evidence of both tracks and build the answerer's context.

Order (what evidence recall@B reads): every item carries a score on the System 1 fused
scale (System 1 excerpts their selection score; System 2 records the best recalled message
they rest on, lifted by issue matches). When the projection spans two or more person rows
(``ALL`` or several names), the best item of every row comes first (rows ordered by that
item's score), so a per-person roll-up covers every member within a small budget; all
other items follow by score. Items citing only messages already cited are kept in the
context but add nothing new to the cited-id list.

The cited ids (what evidence recall@B reads) are fused at the id level by default
(``merge="ids"``): System 1's ids in order and the ids System 2's items cite (each record
all its ``from_ids``, best-recalled first) are two reciprocal-rank lists, System 2 at a low
weight. A record's messages that System 1 also found rise a little; the others come in at
a bounded rate, so a record spanning many messages cannot push System 1's hits out of a
small budget. Evidence items follow the place of the first id each brings in.

The context text has two parts, as the answerer expects::

    [RAW EXCERPTS]
    [D3:12] Caroline @ 2023-05-08 13:56: I went to the support group yesterday.
    [MEMORY SLICE]
    Caroline
      * current: goes to an LGBTQ support group  (D3:12)
      - history: ...
    Melanie (none)

``tokens`` counts word and punctuation tokens of the context (a model-free estimate).
:class:`Compose` is the operator (``selected`` + ``memory`` -> ``evidence``, ``context``,
``tokens``, ``cited_ids``).
"""

from __future__ import annotations

import pyarrow as pa

from speakerflow.ops.core.base import Batch, Context, Operator, OperatorConfig
from speakerflow.ops.core.registry import register
from speakerflow.ops.query.group_view import GroupView
from speakerflow.ops.query.project import is_rollup
from speakerflow.ops.query.query_tables import (
    COMPOSED,
    EVIDENCE_ITEM,
    MEMORY,
    PROJECTION,
    PROJECTION_COLUMNS,
    SELECTED,
    Composed,
    schema_of,
)
from speakerflow.ops.query.select import Selected, selections
from speakerflow.schemas import EvidenceItem, Projection
from speakerflow.words import count_tokens


class ComposeConfig(OperatorConfig):
    """How the two tracks are ordered.

    ``merge``: ``score`` sorts every item by its score on the System 1 scale; ``rrf``
    treats System 1 and System 2 as two ranked lists of items and interleaves them by
    reciprocal rank (``s2_weight`` scales System 2's share, ``rrf_k`` its constant);
    ``ids`` (default) fuses at the level of cited message ids: System 1's ids in their
    order and the ids System 2's items cite (items by score, each record's ids
    best-recalled first) are two reciprocal-rank lists (``id_rrf_k``, ``id_s2_weight``),
    so a record spanning many messages lifts the ones System 1 also found and adds the
    others at a bounded rate instead of pushing System 1's hits out of the budget.
    ``row_first``: each row's best item first for roll-up projections.
    """

    merge: str = "ids"
    rrf_k: float = 1.0
    s2_weight: float = 1.0
    id_rrf_k: float = 5.0
    id_s2_weight: float = 0.1
    row_first: bool = True


def _fmt_ts(ts) -> str:
    return ts.strftime("%Y-%m-%d %H:%M") if ts is not None else "?"


def compose(
    view: GroupView,
    selected: list[Selected],
    s2_items: list[dict],
    projection: Projection,
    config: ComposeConfig | None = None,
) -> Composed:
    """Merge System 1 selections and System 2 row items into ordered evidence and context."""
    config = config or ComposeConfig()
    s1 = [
        {
            "kind": "excerpt",
            "row": None,
            "text": view.texts[s.row],
            "msg_ids": [view.ids[s.row]],
            "score": s.score,
            "speaker": view.speakers[s.row],
            "ts": view.ts[s.row],
            "entry_id": None,
            "history": False,
        }
        for s in selected
    ]
    s2 = [it for it in s2_items if it["kind"] != "empty_row"]
    pool = s1 + s2
    if config.merge == "rrf":
        # each track is a ranked list; an item's place is w / (rrf_k + its rank in its track)
        s2_rank = sorted(range(len(s2)), key=lambda j: (-s2[j]["score"], j))
        key = [1.0 / (config.rrf_k + i) for i in range(len(s1))] + [0.0] * len(s2)
        for r, j in enumerate(s2_rank):
            key[len(s1) + j] = config.s2_weight / (config.rrf_k + r)
    else:
        key = [it["score"] for it in pool]
    order = sorted(range(len(pool)), key=lambda i: (-key[i], i))
    person_rows = [
        r for r in dict.fromkeys(it["row"] for it in s2_items) if r not in (None, "GROUP")
    ]
    first: list[int] = []
    if config.row_first and len(person_rows) >= 2 and is_rollup(projection):
        best = {}
        for i in order:
            row = pool[i]["row"]
            if row in person_rows and row not in best:
                best[row] = i
        first = sorted(best.values(), key=lambda i: (-key[i], i))
    ranked = first + [i for i in order if i not in set(first)]
    cited = None
    if config.merge == "ids":
        cited, ranked = _fuse_ids(pool, len(s1), ranked, first, config)
    empty = [it for it in s2_items if it["kind"] == "empty_row"]
    ranked += [len(pool) + j for j in range(len(empty))]
    items = pool + empty
    evidence = [
        EvidenceItem(
            rank=r,
            kind=items[i]["kind"],
            row=items[i]["row"],
            text=items[i]["text"],
            msg_ids=items[i]["msg_ids"],
            speaker=items[i]["speaker"],
            ts=items[i]["ts"],
            entry_id=items[i]["entry_id"],
            score=float(items[i]["score"]),
        )
        for r, i in enumerate(ranked)
    ]
    context = render_context(s1, s2_items)
    return Composed(evidence, context, count_tokens(context), cited)


def _fuse_ids(
    pool: list[dict], n_s1: int, ranked: list[int], first: list[int], config: ComposeConfig
) -> tuple[list[str], list[int]]:
    """Id-level fusion (``merge="ids"``): returns the cited ids in composed order and the
    items reordered by the place of the first id each one brings in (ties keep ``ranked``)."""
    s1_ids = list(dict.fromkeys(m for i in ranked if i < n_s1 for m in pool[i]["msg_ids"]))
    s2_ids = list(dict.fromkeys(m for i in ranked if i >= n_s1 for m in pool[i]["msg_ids"]))
    score: dict[str, float] = {}
    for r, m in enumerate(s1_ids):
        score[m] = 1.0 / (config.id_rrf_k + r + 1)
    for r, m in enumerate(s2_ids):
        score[m] = score.get(m, 0.0) + config.id_s2_weight / (config.id_rrf_k + r + 1)
    front = list(dict.fromkeys(pool[i]["msg_ids"][0] for i in first if pool[i]["msg_ids"]))
    rest = sorted((m for m in score if m not in set(front)), key=lambda m: -score[m])
    cited = front + rest
    place = {m: j for j, m in enumerate(cited)}
    where = {
        i: min((place[m] for m in pool[i]["msg_ids"] if m in place), default=len(cited))
        for i in ranked
    }
    lead = set(first)
    return cited, first + sorted(
        (i for i in ranked if i not in lead), key=lambda i: (where[i], ranked.index(i))
    )


def render_context(s1: list[dict], s2_items: list[dict]) -> str:
    """The answerer's context: raw excerpts (time order) and the memory slice by row."""
    lines = ["[RAW EXCERPTS]"]
    for it in sorted(s1, key=lambda it: (it["ts"] is None, it["ts"] or 0)):
        lines.append(f"[{it['msg_ids'][0]}] {it['speaker']} @ {_fmt_ts(it['ts'])}: {it['text']}")
    lines.append("[MEMORY SLICE]")
    rows: dict[str, list[dict]] = {}
    for it in s2_items:
        rows.setdefault(it["row"], []).append(it)
    for row, row_items in rows.items():
        if all(it["kind"] == "empty_row" for it in row_items):
            lines.append(f"{row} (none)")
            continue
        lines.append(row)
        for it in row_items:
            cites = ", ".join(it["msg_ids"])
            if it["kind"] == "excerpt":
                lines.append(f"  > said @ {_fmt_ts(it['ts'])}: {it['text']}  ({cites})")
            elif it.get("history"):
                lines.append(f"  - history @ {_fmt_ts(it['ts'])}: {it['text']}  ({cites})")
            else:
                by = f" (by {it['source']})" if it.get("source") and it["source"] != row else ""
                by = f" (about {it['owner']})" if it.get("owner") and it["owner"] != row else by
                lines.append(f"  * current{by} @ {_fmt_ts(it['ts'])}: {it['text']}  ({cites})")
    return "\n".join(lines)


@register
class Compose(Operator):
    """Select's ``selected`` + Resolve's ``memory`` + the projection -> ``evidence`` (EvidenceItem
    fields, composed order), ``context`` (the answerer's text), ``tokens`` (its size) and
    ``cited_ids`` (distinct cited message ids in composed order: what recall@B reads).

    Needs ``ctx.store`` (message texts). ``stats.extra["context_tokens"]`` sums ``tokens``.
    """

    name = "compose"
    consumes = ("question_id", *PROJECTION_COLUMNS, "selected", "memory")
    produces = schema_of(
        ("evidence", pa.list_(EVIDENCE_ITEM)),
        ("context", pa.string()),
        ("tokens", pa.int64()),
        ("cited_ids", pa.list_(pa.string())),
    )
    passthrough = True
    Config = ComposeConfig
    config: ComposeConfig

    def run_batch(self, batch: Batch, ctx: Context) -> Batch:
        view = GroupView.of(ctx.store)
        composed: list[Composed] = [
            compose(view, selections(view, chosen), memory, projection, self.config)
            for projection, chosen, memory in zip(
                batch.get(PROJECTION), batch.get(SELECTED), batch.get(MEMORY), strict=True
            )
        ]
        self.stats.bump("context_tokens", sum(c.tokens for c in composed))
        return batch.put(COMPOSED, composed)

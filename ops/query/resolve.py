"""System 2 row-wise retrieval and Resolve: the memory slice by person / GROUP.

For each row of the projection (``ALL`` expands to the roster; ``GROUP`` is the group row):

1. candidates: records whose ``owner`` is the row, valid at the as-of time when the
   question pins one (``valid_at <= as_of`` and not invalid by then), else current heads;
2. match: a record matches the issue when it covers at least ``min_lexical`` of the issue
   words (weighted by their rarity among the group's records), or its embedding is at least
   ``min_dense`` similar to the question's, or it rests on a message in the System 1 pool;
3. the ``k`` best matches (default 2), plus ``source_k`` (default 1) records the row's
   person *said* about someone else (source = row, owner != row), which do not use the
   row's budget;
   A record cites all its ``from_ids``, best-recalled first (:func:`cite_order`).
4. tense ``full``: each chosen head brings its older versions (the update chain), oldest
   last, marked as history;
5. an empty row falls back to the person's own best-matching messages (``fallback_k``);
   when there is nothing at all, an explicit ``empty_row`` item is kept: the answerer
   needs it for "who never ..." questions.

Items are plain dicts with the :class:`~speakerflow.schemas.EvidenceItem` fields (plus
``history``), scored on the System 1 fused scale so Compose can merge both tracks.
:class:`Resolve` is the operator (projection + Recall's ``pool``/``fused`` -> ``memory``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from speakerflow.graphs import query_terms
from speakerflow.ops.core.base import Batch, Context, Operator, OperatorConfig
from speakerflow.ops.core.registry import register
from speakerflow.ops.query.group_view import GroupView
from speakerflow.ops.query.query_tables import (
    MEMORY,
    MEMORY_ITEM,
    RECALLED_COLUMNS,
    recalled_rows,
    schema_of,
)
from speakerflow.ops.query.recall_bounded import fallback_rows, is_large
from speakerflow.ops.query.record_view import RecordView, _dense_sims
from speakerflow.ops.text.embed import Embedder
from speakerflow.schemas import Projection
from speakerflow.schemas.records import GROUP_OWNER


class ResolveConfig(OperatorConfig):
    """System 2 budgets (paper: k = 2 per row, source-k = 1) and matching thresholds."""

    k: int = 2
    source_k: int = 1
    fallback_k: int = 2
    min_dense: float = 0.35
    min_lexical: float = 0.3
    own_words_k: int = 0
    layers: tuple[str, ...] = (
        "per_speaker_core",
        "per_speaker_profile",
        "group_interaction",
        "group_insight",
    )
    #: ``False`` switches System 2 off (the ``s2`` ablation): ``memory`` stays empty
    enabled: bool = True


def valid_at(record: dict, as_of) -> bool:
    """True when ``record`` is the state to read: the head now, or valid at ``as_of``."""
    if as_of is None:
        return record.get("superseded_by") is None and record.get("invalid_at") is None
    if record["valid_at"] > as_of:
        return False
    return record.get("invalid_at") is None or record["invalid_at"] > as_of


def chain(records: RecordView, head: dict, limit: int = 10) -> list[dict]:
    """Older versions of ``head`` (newest first), following ``supersedes``."""
    out: list[dict] = []
    seen = {head["entry_id"]}
    prev = head.get("supersedes")
    while prev and prev in records.by_id and prev not in seen and len(out) < limit:
        seen.add(prev)
        out.append(records.by_id[prev])
        prev = records.by_id[prev].get("supersedes")
    return out


def expand_rows(rows: list[str], roster: list[str]) -> list[str]:
    """``ALL`` -> every roster member (in roster order); names and ``GROUP`` kept; no repeats."""
    out: list[str] = []
    for row in rows:
        for name in roster if row == "ALL" else [row]:
            if name not in out:
                out.append(name)
    return out


def _item(kind: str, row: str, text: str, msg_ids: list[str], score: float, **extra) -> dict:
    return {
        "kind": kind,
        "row": row,
        "text": text,
        "msg_ids": msg_ids,
        "score": score,
        "speaker": extra.get("speaker"),
        "ts": extra.get("ts"),
        "entry_id": extra.get("entry_id"),
        "history": extra.get("history", False),
        "source": extra.get("source"),
        "owner": extra.get("owner"),
    }


def resolve_rows(
    view: GroupView,
    fused: np.ndarray,
    projection: Projection,
    roster: list[str],
    config: ResolveConfig,
    embedder: Embedder | None = None,
    pool=None,
) -> list[dict]:
    """The memory slice for ``projection`` (see the module doc): items in row order.

    ``fused`` are System 1 scores over all messages and ``pool`` the recalled rows: a record
    resting on a recalled message matches the issue.
    """
    records = RecordView.of(view.store)
    issue_words = set(query_terms(projection.issue))
    top = float(fused.max()) if len(fused) else 0.0
    # the question's own vector (already computed by recall): no extra encoding per query
    dense = _dense_sims(view.store, records, config.layers, projection.question, embedder)

    # a word no record uses weighs like the rarest word; coverage is rarity-weighted
    default_idf = max(records.idf.values(), default=1.0)
    issue_weight = sum(records.idf.get(w, default_idf) for w in issue_words) or 1.0
    score = _relevance(
        view, records, fused, issue_words, issue_weight, dense, top, config, pool or ()
    )
    found = _Slice(view, records, fused, projection, config, score)
    items: list[dict] = []
    for row in expand_rows(projection.rows, roster):
        items.extend(found.row_items(row))
    return items


class _Slice:
    """One question's memory slice over a group's records: the records of a row valid at the
    projection's time, scored by their relevance (``score``, one per record)."""

    def __init__(
        self,
        view: GroupView,
        records: RecordView,
        fused: np.ndarray,
        projection: Projection,
        config: ResolveConfig,
        score: np.ndarray,
    ) -> None:
        self.view, self.records, self.fused = view, records, fused
        self.projection, self.config, self.score = projection, config, score
        self.usable = records.in_layers(config.layers)
        self.heads = records.heads & self.usable

    def current(self, candidates: list[int]) -> np.ndarray:
        """The usable ``candidates`` valid at the projection's time, in their order."""
        ix = np.asarray(candidates, dtype=np.int64)
        if self.projection.as_of is None:
            return ix[self.heads[ix]]
        return np.asarray(
            [
                i
                for i in ix[self.usable[ix]]
                if valid_at(self.records.rows[i], self.projection.as_of)
            ],
            dtype=np.int64,
        )

    def best(self, candidates: np.ndarray, k: int) -> list[tuple[float, int]]:
        """The ``k`` best-scoring candidates with a score above 0 (ties keep their order)."""
        found = self.score[candidates]
        order = np.argsort(-found, kind="stable")
        return [(float(found[j]), int(candidates[j])) for j in order[:k] if found[j] > 0]

    def record_item(self, r: dict, score: float, row: str, history: bool = False) -> dict:
        return _item(
            "record",
            row,
            r["content"],
            cite_order(self.view, self.fused, r["from_ids"]),
            score,
            speaker=r["source"],
            ts=r["valid_at"],
            entry_id=r["entry_id"],
            history=history,
            source=r["source"],
            owner=r["owner"],
        )

    def row_items(self, row: str) -> list[dict]:
        """One row's items: its best records (with their update chains for ``full``), what
        the person said about others, else their own best messages, else an empty row."""
        records, config = self.records, self.config
        picked = self.best(self.current(records.by_owner.get(row, [])), config.k)
        row_items: list[dict] = []
        for s, i in picked:
            head = records.rows[i]
            row_items.append(self.record_item(head, s, row))
            if self.projection.tense == "full":
                row_items.extend(
                    self.record_item(old, s * 0.9, row, history=True)
                    for old in chain(records, head)
                )
        said = self.current(
            [i for i in records.by_source.get(row, []) if records.rows[i]["owner"] != row]
        )
        row_items.extend(
            self.record_item(records.rows[i], s, row) for s, i in self.best(said, config.source_k)
        )
        if not picked:
            row_items.extend(_fallback(self.view, self.fused, row, config.fallback_k))
        elif config.own_words_k:
            # the person's own best-recalled words beside their records (a derived record may
            # paraphrase; the verbatim message is what a roll-up has to cite)
            row_items.extend(_fallback(self.view, self.fused, row, config.own_words_k))
        if not row_items:
            row_items.append(_item("empty_row", row, "(none)", [], 0.0))
        return row_items


def _relevance(
    view: GroupView,
    records: RecordView,
    fused: np.ndarray,
    issue_words: set[str],
    issue_weight: float,
    dense: np.ndarray,
    top: float,
    config: ResolveConfig,
    pool,
) -> np.ndarray:
    """How well each record matches the question, on the System 1 scale (0: no match).

    A record matches when it covers at least ``min_lexical`` of the issue words (weighted by
    rarity), its embedding is at least ``min_dense`` similar to the question, or it rests on
    a recalled message (in ``pool``). A match scores the best fused score of the messages it
    rests on, lifted by the issue matches: ``s1 + top * (0.5 * lexical + 0.5 * max(dense -
    min_dense, 0))``. One pass over all records in numpy; the lexical coverage is summed per
    record that holds an issue word, as the per-record rule always did."""
    n = len(records.rows)
    lexical = np.zeros(n, dtype=np.float64)
    hit = [records.postings[w] for w in issue_words if w in records.postings]
    if hit:
        for i in np.unique(np.concatenate(hit)).tolist():
            lexical[i] = sum(records.idf[w] for w in issue_words & records.terms[i]) / issue_weight
    flat, starts = records.rests_on(view)
    counts = np.diff(starts)
    has = counts > 0
    s1 = np.zeros(n, dtype=np.float64)
    recalled = np.zeros(n, dtype=bool)
    if len(flat):
        at = starts[:-1][has]  # reduceat over the records that rest on a message of the view
        s1[has] = np.maximum.reduceat(fused[flat], at) if len(fused) else 0.0
        in_pool = np.zeros(len(view), dtype=bool)
        in_pool[np.asarray(list(pool), dtype=np.int64)] = True
        recalled[has] = np.logical_or.reduceat(in_pool[flat], at)
    score = s1 + top * (0.5 * lexical + 0.5 * np.maximum(dense - config.min_dense, 0.0))
    # no match: the row may stay empty and fall back to verbatim messages
    score[(lexical < config.min_lexical) & (dense < config.min_dense) & ~recalled] = 0.0
    return score


def cite_order(view: GroupView, fused: np.ndarray, from_ids) -> list[str]:
    """A record's ``from_ids`` in the order it cites them: best System 1 fused score first
    (ties and unknown ids keep the record's order), so a record spanning many messages
    leads with the one the question is most about."""
    ids = list(dict.fromkeys(from_ids))
    rank = {m: -float(fused[view.pos[m]]) if m in view.pos and len(fused) else 0.0 for m in ids}
    return sorted(ids, key=lambda m: rank[m])


@register
class Resolve(Operator):
    """Projection + Recall's ``pool`` and ``fused`` -> ``memory``: the System 2 items of every
    row of the projection (records, verbatim fallbacks, explicit empty rows), in row order.

    Needs ``ctx.store`` (records and roster); ``ctx.backends["embedder"]`` (optional) adds the
    dense record match. ``stats.extra["items"]`` counts the items handed on.
    """

    name = "resolve"
    consumes = RECALLED_COLUMNS
    produces = schema_of(("memory", pa.list_(MEMORY_ITEM)))
    passthrough = True
    Config = ResolveConfig
    config: ResolveConfig

    def run_batch(self, batch: Batch, ctx: Context) -> Batch:
        view = GroupView.of(ctx.store)
        roster = ctx.store.roster()
        out = []
        for projection, pool, fused in recalled_rows(batch):
            items = (
                resolve_rows(
                    view,
                    fused,
                    projection,
                    roster,
                    self.config,
                    ctx.backends.get("embedder"),
                    [view.pos[c["msg_id"]] for c in pool],
                )
                if self.config.enabled
                else []
            )
            self.stats.bump("items", len(items))
            out.append(items)
        return batch.put(MEMORY, out)


def _fallback(view: GroupView, fused: np.ndarray, row: str, k: int) -> list[dict]:
    """The person's own best-recalled messages (verbatim fallback for an empty row)."""
    if row == GROUP_OWNER or k <= 0 or not len(fused):
        return []
    if is_large(view):  # the same rows, without a pass over every message per person
        scores, rows = fused, list(fallback_rows(view, fused, row, k))
    else:
        scores = np.where(np.array([s == row for s in view.speakers]), fused, 0.0)
        rows = [r for r in np.argsort(-scores, kind="stable")[:k] if scores[r] > 0]
    return [
        _item(
            "excerpt",
            row,
            view.texts[r],
            [view.ids[r]],
            float(scores[r]),
            speaker=row,
            ts=view.ts[r],
        )
        for r in rows
    ]

"""System 1 Select, Expand and Sufficiency/ASK over a recall pool.

- **Select** ranks the pool by necessity. Rules: the fused recall score, raised by
  ``speaker_boost`` for messages spoken by a person the projection names (attribution).
  A chat backend may return its own ranking instead (validated: unknown numbers dropped,
  missing candidates appended in score order).
- **Expand** adds neighbouring turns of at most ``max_anchors`` (2) selected messages. Rules:
  an anchor is a top message that is itself a question (its answer is the next turn) or,
  when the question asks for an exact value (when / how many / how much ...), a top message;
  a neighbour scores ``expand_factor`` times its anchor, so it lands near it.
- **Sufficiency/ASK** checks whether the top-k material covers the issue; if not, one
  terse extra query (the uncovered issue words) recalls ``ask_pool`` (20) more candidates
  through the lexical channels, merged and re-ranked once. Rules: coverage = share of issue words
  found in the top-k.

- **Per row**: a question about several people (two or more named, or a roll-up over
  ``ALL``) retrieves per person row as well: each person's own best-recalled messages
  (``per_row``, from the fused scores of all the group's messages, not only the pool) are
  merged into the list so that every row has its best message in front; the list keeps
  its scores in order (the merged order takes over the sorted scores), so Compose sees the
  same order.

The final list is cut to ``top_k`` (10) only after all of this. :class:`Select` is the
operator (Recall's ``pool`` and ``fused`` -> ``selected``); the functions do the work.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from speakerflow.graphs import query_terms
from speakerflow.ops.core.base import Batch, Context, Operator, OperatorConfig
from speakerflow.ops.core.registry import register
from speakerflow.ops.query.channels import RecallConfig, RecallResult
from speakerflow.ops.query.group_view import GroupView
from speakerflow.ops.query.query_tables import (
    CANDIDATE,
    RECALLED_COLUMNS,
    SELECTED,
    recalled_rows,
    schema_of,
)
from speakerflow.ops.query.recall import recall
from speakerflow.schemas import Projection

_EXACT = re.compile(
    r"\b(when|how (many|much|long|often|old|far)|what (time|date|day|year|month)|which (day|year|"
    r"month))\b",
    re.I,
)


class SelectConfig(OperatorConfig):
    """Budgets of Select/Expand/ASK (paper defaults: top-k 10, 2 anchors, one ASK of 20)."""

    top_k: int = 10
    speaker_boost: float = 0.25
    expand: bool = True
    max_anchors: int = 2
    anchor_window: int = 3
    expand_factor: float = 0.6
    ask: bool = True
    ask_pool: int = 20
    ask_min_coverage: float = 0.5
    ask_weight: float = 0.8
    #: per-row retrieval for multi-person questions: each person row's best ``per_row``
    #: messages go in front (0 switches it off); rosters above ``per_row_max_rows`` are skipped
    per_row: int = 0
    per_row_max_rows: int = 8
    #: recall settings of the ASK query (``None``: the default :class:`RecallConfig`)
    ask_recall: RecallConfig | None = None
    #: ``False`` switches System 1 off (the ``s1`` ablation): ``selected`` stays empty
    enabled: bool = True


@dataclass
class Selected:
    """One selected System 1 message: its row in the group view, score and how it got in
    (``recall``, ``expand`` from an anchor row, or ``ask``)."""

    row: int
    score: float
    via: str = "recall"
    anchor: int | None = None


def rank_pool(
    view: GroupView, result: RecallResult, projection: Projection, config: SelectConfig
) -> list[Selected]:
    """Rules Select: pool rows by fused score, with the speaker boost for named rows."""
    people = {r for r in projection.rows if r not in ("ALL", "GROUP")}
    out = []
    for row in result.pool:
        score = float(result.fused[row])
        if view.speakers[row] in people:
            score *= 1.0 + config.speaker_boost
        out.append(Selected(row, score))
    out.sort(key=lambda s: (-s.score, s.row))
    return out


def expand(
    view: GroupView, selected: list[Selected], question: str, config: SelectConfig
) -> list[Selected]:
    """Rules Expand: neighbours of at most ``max_anchors`` anchors (see the module doc)."""
    if not config.expand or not selected:
        return selected
    have = {s.row for s in selected}
    exact = bool(_EXACT.search(question))
    added: list[Selected] = []
    anchors = 0
    for s in selected[: config.anchor_window]:
        if anchors >= config.max_anchors:
            break
        is_question = view.texts[s.row].rstrip().endswith("?")
        if not (is_question or exact):
            continue
        nbrs = [int(view.next[s.row])] if is_question else view.neighbours(s.row, 1)
        new = [r for r in nbrs if r >= 0 and r not in have]
        if not new:
            continue
        anchors += 1
        for r in new:
            have.add(r)
            added.append(Selected(r, s.score * config.expand_factor, "expand", s.row))
    merged = selected + added
    merged.sort(key=lambda s: (-s.score, s.row))
    return merged


def person_rows(projection: Projection, roster: list[str]) -> list[str]:
    """The person rows a multi-person question reads per row: two or more named people, or
    the roster for a roll-up over ``ALL``; ``[]`` for anything else."""
    from speakerflow.ops.query.project import is_rollup

    people = [r for r in projection.rows if r not in ("ALL", "GROUP")]
    if "ALL" in projection.rows and is_rollup(projection):
        people += [p for p in roster if p not in people]
    return people if len(people) >= 2 else []


def merge_rows(
    view: GroupView, selected: list[Selected], fused, people: list[str], per_row: int
) -> list[Selected]:
    """Per-row retrieval merged into ``selected``: each person's ``per_row`` best messages by
    fused score (their own words) come first, rows ordered by their best score; the rest
    follow in order. Scores are reassigned from the sorted scores so order and scale agree."""
    if not people or per_row <= 0 or not selected:
        return selected
    import numpy as np

    speakers = np.asarray(view.speakers, dtype=object)
    by_row = {s.row: s for s in selected}
    front: list[Selected] = []
    for person in people:
        mine = np.flatnonzero(speakers == person)
        if not len(mine):
            continue
        best = mine[np.argsort(-fused[mine], kind="stable")[:per_row]]
        for r in (int(x) for x in best if fused[x] > 0):
            front.append(by_row.get(r) or Selected(r, float(fused[r]), "recall"))
    if not front:
        return selected
    front.sort(key=lambda s: (-s.score, s.row))
    seen = {s.row for s in front}
    order = front + [s for s in selected if s.row not in seen]
    scores = sorted((s.score for s in order), reverse=True)
    return [Selected(s.row, sc, s.via, s.anchor) for s, sc in zip(order, scores, strict=True)]


def row_terms(view: GroupView, row: int) -> frozenset[str]:
    """The query terms of one message's text, memoised on the view (a view's texts never
    change; the coverage check reads the same messages ask after ask)."""
    memo = view.__dict__.setdefault("_row_terms", {})
    found = memo.get(row)
    if found is None:
        found = memo[row] = frozenset(query_terms(view.texts[row].lower()))
    return found


def coverage(view: GroupView, selected: list[Selected], issue: str) -> tuple[float, list[str]]:
    """Share of issue words that occur in the selected texts, and the words missing."""
    words = list(dict.fromkeys(query_terms(issue)))
    if not words:
        return 1.0, []
    present = set().union(*(row_terms(view, s.row) for s in selected))
    missing = [
        w
        for w in words
        if w not in present and not any(p.startswith(w[:5]) for p in present if len(w) > 5)
    ]
    return 1.0 - len(missing) / len(words), missing


def ask_more(
    view: GroupView,
    selected: list[Selected],
    ask: str,
    recall_cfg: RecallConfig,
    config: SelectConfig,
    embedder=None,
) -> list[Selected]:
    """One supplementary recall for ``ask``; its candidates join at ``ask_weight`` of their
    score."""
    # ASK terms are bare keywords: lexical channels only (no second embedding per question)
    lexical = {k: w for k, w in recall_cfg.weights.items() if k in ("bm25", "window", "session")}
    if not any(w > 0 for w in lexical.values()):
        lexical = {"bm25": 1.0}
    extra = recall(
        view, ask, recall_cfg.model_copy(update={"pool": config.ask_pool, "weights": lexical}), None
    )
    best = {s.row: s for s in selected}
    top = max((s.score for s in selected), default=1.0) or 1.0
    top_extra = float(extra.fused[extra.pool[0]]) if extra.pool else 1.0
    for row in extra.pool:
        score = config.ask_weight * top * float(extra.fused[row]) / top_extra
        if row not in best or best[row].score < score:
            best[row] = Selected(row, score, "ask")
    return sorted(best.values(), key=lambda s: (-s.score, s.row))


def parse_ranking(text: str, n: int) -> tuple[list[int], list[int]]:
    """Validate a chat model's ``{"ranked": [...], "expand": [...]}`` (1-based candidate
    numbers)."""
    match = re.search(r"\{.*\}", text, re.S)
    if not match:
        raise ValueError("no JSON object in the model's selection")
    data = json.loads(match.group(0))
    ranked = [int(i) - 1 for i in data.get("ranked", []) if str(i).isdigit() and 1 <= int(i) <= n]
    expand_ = [int(i) - 1 for i in data.get("expand", []) if str(i).isdigit() and 1 <= int(i) <= n][
        :2
    ]
    return list(dict.fromkeys(ranked)), expand_


def parse_sufficiency(text: str) -> tuple[bool, str]:
    """Validate ``{"enough": bool, "ask": "terse query"}``; unusable output counts as enough."""
    match = re.search(r"\{.*\}", text, re.S)
    if not match:
        return True, ""
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return True, ""
    enough = data.get("enough") not in (False, "false", "False")
    return enough, "" if enough else str(data.get("ask") or "").strip()[:200]


SELECT_PROMPT = """You rank verbatim messages from a group chat by how necessary each is to answer the question
(most necessary first; the first few should suffice). Optionally name at most 2 candidates whose
neighbouring messages should be fetched, only when an exact value or event detail is clearly
missing; usually none. Answer with JSON only: {"ranked": [numbers], "expand": [numbers]}"""  # noqa: E501

SUFFICIENCY_PROMPT = """This material is all that will be used to answer the question. Does it already contain the
answer? If yes: {"enough": true, "ask": ""}. If something is missing: {"enough": false, "ask": "<terse
keywords>"}. Missing per-person coverage does not count. Answer with JSON only."""  # noqa: E501


def select_with_chat(
    view: GroupView, selected: list[Selected], question: str, chat, config: SelectConfig, stats=None
) -> list[Selected]:
    """Let a chat model rank the pool and pick expansion anchors (validated; falls back to
    ``selected``)."""
    cands = "\n".join(
        f"{i + 1}. [{view.speakers[s.row]} | {view.sessions[s.row]} | {view.ts[s.row]}] "
        f"{view.texts[s.row]}"
        for i, s in enumerate(selected)
    )
    result = chat.chat(
        [
            {"role": "system", "content": SELECT_PROMPT},
            {"role": "user", "content": f"Question: {question}\nCandidates:\n{cands}"},
        ],
        max_tokens=300,
        temperature=0.0,
    )
    if stats is not None:
        stats.count_model_call(result.tokens)
    try:
        ranked, anchors = parse_ranking(result.text, len(selected))
    except (ValueError, json.JSONDecodeError):
        if stats is not None:
            stats.rejects += 1
        return selected
    order = ranked + [i for i in range(len(selected)) if i not in ranked]
    top = max((s.score for s in selected), default=1.0)
    out = [
        Selected(selected[i].row, top * (1.0 - j / (len(order) + 1)), selected[i].via)
        for j, i in enumerate(order)
    ]
    have = {s.row for s in out}
    for i in anchors:
        anchor = out[order.index(i)]
        for r in view.neighbours(anchor.row, 1):
            if r not in have:
                have.add(r)
                out.append(Selected(r, anchor.score * config.expand_factor, "expand", anchor.row))
    return sorted(out, key=lambda s: (-s.score, s.row))


def select_s1(
    view: GroupView,
    result: RecallResult,
    projection: Projection,
    recall_cfg: RecallConfig,
    config: SelectConfig,
    embedder=None,
    chat=None,
    stats=None,
    roster: list[str] | None = None,
) -> list[Selected]:
    """Select >> Expand >> Sufficiency/ASK >> per-row merge >> top-k for one question."""
    if chat is not None:
        selected = select_with_chat(
            view,
            rank_pool(view, result, projection, config),
            projection.question,
            chat,
            config,
            stats,
        )
    else:
        selected = expand(
            view, rank_pool(view, result, projection, config), projection.question, config
        )
    if config.ask and selected:
        ask = ""
        if chat is not None:
            material = "\n".join(
                f"[{view.speakers[s.row]}] {view.texts[s.row]}" for s in selected[: config.top_k]
            )
            reply = chat.chat(
                [
                    {"role": "system", "content": SUFFICIENCY_PROMPT},
                    {
                        "role": "user",
                        "content": f"Question: {projection.question}\nMaterial:\n{material}",
                    },
                ],
                max_tokens=60,
                temperature=0.0,
            )
            if stats is not None:
                stats.count_model_call(reply.tokens)
            _, ask = parse_sufficiency(reply.text)
        else:
            cov, missing = coverage(view, selected[: config.top_k], projection.issue)
            if cov < config.ask_min_coverage and missing:
                ask = " ".join(missing)
        if ask:
            if stats is not None:
                stats.bump("asks")
            selected = ask_more(view, selected, ask, recall_cfg, config, embedder)
    if config.per_row and chat is None and len(result.fused):
        people = person_rows(
            projection, roster if roster is not None else list(dict.fromkeys(view.speakers))
        )
        if len(people) <= config.per_row_max_rows:
            selected = merge_rows(view, selected, result.fused, people, config.per_row)
    return selected[: config.top_k]


def candidates(view: GroupView, selected: list[Selected]) -> list[dict]:
    """Selections as :data:`~speakerflow.ops.query.query_tables.CANDIDATE` rows."""
    return [
        {
            "msg_id": view.ids[s.row],
            "score": float(s.score),
            "via": s.via,
            "anchor": view.ids[s.anchor] if s.anchor is not None else None,
        }
        for s in selected
    ]


def selections(view: GroupView, rows: list[dict]) -> list[Selected]:
    """CANDIDATE rows back to :class:`Selected` (unknown message ids name the row to fix)."""
    try:
        return [
            Selected(
                view.pos[c["msg_id"]],
                c["score"],
                c["via"] or "recall",
                view.pos[c["anchor"]] if c["anchor"] is not None else None,
            )
            for c in rows
        ]
    except KeyError as err:
        raise KeyError(
            f"candidate msg_id {err.args[0]!r} is not a message of this group's store; "
            "candidates must come from Recall over the same ctx.store"
        ) from None


@register
class Select(Operator):
    """Recall's ``pool`` and ``fused`` + the projection -> ``selected``: the System 1 top-k
    after Select, Expand and Sufficiency/ASK (see the module doc), best first.

    ``ctx.backends["select"]`` (optional) is a chat backend for ranking and sufficiency
    (model calls and tokens are metered); ``stats.extra["asks"]`` counts ASK queries.
    """

    name = "select"
    consumes = RECALLED_COLUMNS
    produces = schema_of(("selected", pa.list_(CANDIDATE)))
    passthrough = True
    Config = SelectConfig
    config: SelectConfig

    def run_batch(self, batch: Batch, ctx: Context) -> Batch:
        view = GroupView.of(ctx.store)
        chat = ctx.backends.get("select")
        recall_cfg = self.config.ask_recall or RecallConfig()
        roster = ctx.store.roster()
        out: list[Any] = []
        for projection, pool, fused in recalled_rows(batch):
            if not self.config.enabled:
                out.append([])
                continue
            result = RecallResult(fused, [s.row for s in selections(view, pool)], {})
            chosen = select_s1(
                view,
                result,
                projection,
                recall_cfg,
                self.config,
                ctx.backends.get("embedder"),
                chat,
                self.stats,
                roster,
            )
            out.append(candidates(view, chosen))
        return batch.put(SELECTED, out)

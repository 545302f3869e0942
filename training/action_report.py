"""The execution report of one Writer output: what the validity reward and penalties read.

Given the model's raw text, the state before the segment and the segment's size, it
parses ``{"actions": [...]}``, checks each action with
:func:`speakerflow.ops.write.contract.check_action` (the very check the store's ``Validate``
operator runs: one contract, see docs/write-path.md), computes the duplicate keys and
novelty of SpeakerMem-R1 appendix E, and returns an :class:`ActionReport` together with
the actions the store would write, normalised as it writes them (those, and only those,
may be applied to the state).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from speakerflow.ops.write.contract import (
    MIN_BUDGET,
    Batch,
    IdScheme,
    Verdict,
    check_action,
    norm_text,
)

from .state import WriterState

#: Contents compare as the contract compares them (lower-cased words).
norm_content = norm_text


def action_key(action: dict[str, Any]) -> tuple:
    """The duplicate key: ADD (owner, source, layer, content), UPDATE (entry_id, content),
    NOOP its type."""
    kind = str(action.get("action", "")).upper()
    if kind == "ADD":
        return (
            "ADD",
            action.get("owner"),
            action.get("source"),
            action.get("layer"),
            norm_content(action.get("content")),
        )
    if kind == "UPDATE":
        return ("UPDATE", action.get("entry_id"), norm_content(action.get("content")))
    return (kind,)


def parse_actions(text: str) -> tuple[list[Any] | None, str | None, bool]:
    """Parse a Writer reply.

    Returns ``(actions, error, clean_stop)``: ``actions`` is the ``actions`` list (None
    when the text is not a JSON object with an ``actions`` list), ``error`` says why, and
    ``clean_stop`` is True when nothing but whitespace follows the JSON object.
    """
    body = (text or "").strip()
    if body.startswith("```"):  # tolerate a fenced reply; the fence is not content
        body = body.strip("`").removeprefix("json").strip()
    start = body.find("{")
    if start < 0:
        return None, "no JSON object in the reply", False
    try:
        obj, end = json.JSONDecoder().raw_decode(body, start)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg} at char {exc.pos}", False
    clean = body[end:].strip() == ""
    if not isinstance(obj, dict) or not isinstance(obj.get("actions"), list):
        return None, 'the JSON object has no "actions" list', clean
    return obj["actions"], None, clean


def action_error(action: Any, state: WriterState, roster: set[str] | None = None) -> str | None:
    """Why ``action``, alone in an output written against ``state``, breaks the Writer
    contract (None when the store would accept it). A thin wrapper of
    :func:`speakerflow.ops.write.contract.check_action`."""
    batch = Batch(
        roster=tuple(sorted(roster if roster is not None else state.roster)),
        heads=tuple(state.heads()),
    )
    verdict = check_action(action, batch, 0)
    return verdict.reason if verdict.kind == "reject" else None


def state_ids(position: int, state: WriterState) -> IdScheme:
    """The ids :meth:`WriterState.apply` gives by default (``e<position>_<n>``), as an id
    scheme for :class:`~speakerflow.ops.write.contract.Batch`."""
    base = len(state.entries)

    def new_id(batch: Batch, action: dict[str, Any]) -> str:
        return f"e{position}_{base + len(batch.created)}"

    return new_id


@dataclass
class ActionReport:
    """What one Writer output did.

    ``json_valid``: the reply parsed as ``{"actions": [...]}``. ``attempted``: number of
    actions in the list. ``schema_valid``: how many the contract did not reject (writes,
    NOOPs, no-op UPDATEs, duplicates, and actions past the budget, which ``too_many``
    penalises instead). ``unique_keys``: distinct :func:`action_key` values among attempts.
    ``stop_ok``: the output ends right after its last novel action (and the generation was
    not cut off). ``too_many``: attempted > the budget max(8, 2 n). ``length_cut``:
    generation hit its token limit. ``errors``: one line per rejected action.
    ``verdicts``: the :class:`~speakerflow.ops.write.contract.Verdict` of each action (what the
    store's ``Validate`` decides for it). ``valid_actions``: the writes, normalised as the
    store writes them (Writer fields only); ``created_ids``: the ids they get in the state.
    """

    json_valid: bool
    attempted: int = 0
    schema_valid: int = 0
    unique_keys: int = 0
    stop_ok: bool = False
    too_many: bool = False
    length_cut: bool = False
    errors: list[str] = field(default_factory=list)
    valid_actions: list[dict[str, Any]] = field(default_factory=list)
    created_ids: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)


def report_actions(
    text: str,
    state: WriterState,
    *,
    n_messages: int | None = None,
    roster: set[str] | None = None,
    length_cut: bool = False,
    segment: Any = None,
    position: int = 0,
    new_id: IdScheme | None = None,
) -> ActionReport:
    """Build the :class:`ActionReport` of the reply ``text`` written against ``state``.

    Every action goes through :func:`speakerflow.ops.write.contract.check_action`, the check the
    store's ``Validate`` runs. ``segment`` (a :class:`~speakerflow.ops.write.interfaces.Segment`)
    supplies the aliases and the message ids that ``from_ids`` must cite; without it cited
    ids are only shape-checked. ``n_messages`` sets the budget max(8, 2 n) (default: the
    segment's); ``roster`` defaults to the segment's, else ``state.roster``; ``position`` and
    ``new_id`` say which ids written records get (default: those
    :meth:`WriterState.apply` gives at ``position``); ``length_cut`` is True when the
    generation stopped at its token limit rather than at end-of-sequence.
    """
    scheme = new_id or state_ids(position, state)
    heads = tuple(state.heads())
    if segment is not None:
        batch = Batch.from_segment(segment, heads=heads, new_id=scheme)
        if roster is not None:
            batch = replace(batch, roster=tuple(sorted(roster)))
    else:
        batch = Batch(
            roster=tuple(sorted(roster if roster is not None else state.roster)),
            heads=heads,
            new_id=scheme,
        )
    if n_messages is not None:
        batch.max_actions = max(MIN_BUDGET, 2 * n_messages)
    actions, error, clean = parse_actions(text)
    if actions is None:
        return ActionReport(json_valid=False, length_cut=length_cut, errors=[error or "unparsable"])
    rep = ActionReport(json_valid=True, attempted=len(actions), length_cut=length_cut)
    rep.too_many = rep.attempted > batch.max_actions
    novel_flags: list[bool] = []
    for i, action in enumerate(actions):
        verdict = check_action(action, batch, i)
        rep.verdicts.append(verdict)
        if verdict.kind == "reject":
            rep.errors.append(f"actions[{i}]: {verdict.reason}")
            novel_flags.append(False)
            continue
        rep.schema_valid += 1
        if verdict.kind == "write":
            rep.valid_actions.append(verdict.proposal or {})
            rep.created_ids.append(verdict.entry_id or "")
        is_noop = verdict.kind == "noop" and (verdict.proposal or {}).get("action") == "NOOP"
        novel_flags.append(verdict.kind == "write" or (is_noop and len(actions) == 1))
    rep.unique_keys = len(
        {action_key(a) if isinstance(a, dict) else ("?", i) for i, a in enumerate(actions)}
    )
    rep.stop_ok = bool(novel_flags) and novel_flags[-1] and clean and not length_cut
    return rep

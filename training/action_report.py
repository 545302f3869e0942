"""The execution report of one Writer output: what the validity reward and penalties read.

Given the model's raw text, the state before the segment and the segment's size, it
parses ``{"actions": [...]}``, checks each action against the Writer contract, computes
the duplicate keys and novelty of SpeakerMem-R1 appendix E, and returns an
:class:`ActionReport` together with the schema-valid actions (those, and only those, may
be applied to the state). The checks are the same that gate writes to the store: the
contract is small enough to restate here without a store.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from speakerflow.ops.writer.prompt import WRITER_UTYPES
from speakerflow.schemas.records import GROUP_LAYERS, GROUP_OWNER, LAYERS

from .state import WriterState

_SPACE = re.compile(r"\s+")


def norm_content(text: Any) -> str:
    """Content as compared for duplicates and novelty: lower-case, single spaces, no
    trailing full stop."""
    return _SPACE.sub(" ", str(text or "")).strip().lower().rstrip(".").strip()


def action_key(action: dict[str, Any]) -> tuple:
    """The duplicate key: ADD (owner, source, layer, content), UPDATE (entry_id, content),
    NOOP its type."""
    kind = str(action.get("action", "")).upper()
    if kind == "ADD":
        return ("ADD", action.get("owner"), action.get("source"), action.get("layer"),
                norm_content(action.get("content")))
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


def action_error(action: Any, state: WriterState, roster: set[str]) -> str | None:
    """Why ``action`` breaks the Writer contract against ``state`` (None when valid)."""
    if not isinstance(action, dict):
        return "an action must be a JSON object"
    kind = str(action.get("action", "")).upper()
    content = action.get("content")
    if kind == "NOOP":
        return None
    if kind == "UPDATE":
        if action.get("entry_id") not in state.head_ids():
            return f"UPDATE entry_id {action.get('entry_id')!r} is not a current entry"
        return None if isinstance(content, str) and content.strip() else "UPDATE needs a non-empty content"
    if kind != "ADD":
        return f"unknown action {action.get('action')!r} (use ADD, UPDATE or NOOP)"
    owner, source, layer = action.get("owner"), action.get("source"), action.get("layer")
    if layer not in LAYERS:
        return f"layer {layer!r} is not one of {', '.join(LAYERS)}"
    if (owner == GROUP_OWNER) != (layer in GROUP_LAYERS):
        return f"owner {owner!r} does not fit layer {layer!r} (GROUP owns exactly the group layers)"
    if owner != GROUP_OWNER and owner not in roster:
        return f"owner {owner!r} is not in the roster"
    if source not in roster:
        return f"source {source!r} is not in the roster"
    if action.get("utype") not in WRITER_UTYPES:
        return f"utype {action.get('utype')!r} is not one of {', '.join(WRITER_UTYPES)}"
    if not (isinstance(content, str) and content.strip()):
        return "ADD needs a non-empty content"
    return None


@dataclass
class ActionReport:
    """What one Writer output did.

    ``json_valid``: the reply parsed as ``{"actions": [...]}``. ``attempted``: number of
    actions in the list. ``schema_valid``: how many passed :func:`action_error`.
    ``unique_keys``: distinct :func:`action_key` values among attempts. ``stop_ok``: the
    output ends right after its last novel action (and the generation was not cut off).
    ``too_many``: attempted > ``max_actions``. ``length_cut``: generation hit its token
    limit. ``errors``: one line per rejected action.
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


def report_actions(
    text: str,
    state: WriterState,
    *,
    n_messages: int,
    roster: set[str] | None = None,
    length_cut: bool = False,
) -> ActionReport:
    """Build the :class:`ActionReport` of the reply ``text`` written against ``state``.

    ``n_messages`` is the segment's message count (the budget is max(8, 2 n)); ``roster``
    defaults to ``state.roster``; ``length_cut`` is True when the generation stopped at its
    token limit rather than at end-of-sequence.
    """
    roster = set(roster if roster is not None else state.roster)
    actions, error, clean = parse_actions(text)
    if actions is None:
        return ActionReport(json_valid=False, length_cut=length_cut, errors=[error or "unparsable"])
    rep = ActionReport(json_valid=True, attempted=len(actions), length_cut=length_cut)
    rep.too_many = rep.attempted > max(8, 2 * n_messages)
    pre_keys = {action_key({"action": "ADD", **h}) for h in state.heads()}
    heads = {h["entry_id"]: h for h in state.heads()}
    seen: set[tuple] = set()
    updated: set[Any] = set()
    novel_flags: list[bool] = []
    for i, action in enumerate(actions):
        err = action_error(action, state, roster)
        if err:
            rep.errors.append(f"actions[{i}]: {err}")
            novel_flags.append(False)
            continue
        rep.schema_valid += 1
        key = action_key(action)
        kind = key[0]
        if kind == "NOOP":
            novel = len(actions) == 1
        elif kind == "ADD":
            novel = key not in seen and key not in pre_keys
        else:  # a second UPDATE of one entry in one output cannot be applied either
            old = heads.get(action.get("entry_id"))
            novel = (old is not None and old["entry_id"] not in updated
                     and norm_content(old["content"]) != key[2])
            updated.add(action.get("entry_id"))
        if novel and kind != "NOOP":
            rep.valid_actions.append(action)  # only novel writes reach the state
        seen.add(key)
        novel_flags.append(novel)
    rep.unique_keys = len({action_key(a) if isinstance(a, dict) else ("?", i)
                           for i, a in enumerate(actions)})
    rep.stop_ok = bool(novel_flags) and novel_flags[-1] and clean and not length_cut
    return rep

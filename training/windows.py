"""Short windowed training examples for small local Writers (the compact prompt).

The teacher writes one transition per session (10-25 messages, prompts of ~2,000 tokens with
our full prompt): too long to train a small model on a CPU. Here each session is cut into
windows of ``window`` messages, as :class:`speakerflow.ops.write.writer.local.LocalWriter`
cuts a segment at inference, and each teacher action of the session goes to the window
whose messages support it best (:func:`align`: the share of the action's content words, on
the contract's stems, found in the window's messages by the action's source, then in any of
its messages). Every prompt shows the teacher's heads from *before the session* (what
the batched windows of one segment see at inference), through
:func:`~speakerflow.ops.write.writer.prompt.build_compact_messages`.

Every target action passes :func:`~speakerflow.ops.write.contract.check_action` (the check
``Validate`` runs) against its window, heads and roster; an action the contract refuses
with code-filled provenance is tried once more citing the window messages that best
support it, and dropped (counted by reason) if it still fails. Windows left without an
action get the NOOP target. Targets are rendered with the prompt's short ids.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from speakerflow.ops.write.contract import Batch, check_action
from speakerflow.ops.write.grounding import stem
from speakerflow.ops.write.interfaces import Segment
from speakerflow.ops.write.writer.prompt import (
    COMPACT_PROMPT_VERSION,
    alias_actions,
    build_compact_messages,
    render_actions,
)

from .data import Network, _first_ts
from .speaker_levenshtein import tokens
from .state import WriterState

#: Messages per window (the LocalWriter's default).
DEFAULT_WINDOW = 4


def windows(segment: Segment, size: int) -> list[Segment]:
    """``segment`` cut into consecutive windows of at most ``size`` messages (same heads)."""
    if size < 1:
        raise ValueError(f"window must be >= 1 message, got {size}")
    msgs, sid = segment.messages, segment.segment_id
    return [
        replace(segment, segment_id=f"{sid}/w{i // size}", messages=msgs[i : i + size])
        for i in range(0, len(msgs), size)
    ]


def _stems(text: str) -> set[str]:
    return {stem(t) for t in tokens(text) if len(t) >= 3}


def support(content: str, messages: list[dict[str, Any]]) -> float:
    """Share of ``content``'s words (stems, 3+ letters) found in ``messages``' texts."""
    words = _stems(content)
    if not words:
        return 0.0
    seen: set[str] = set()
    for m in messages:
        seen |= _stems(str(m.get("text", "")))
    return len(words & seen) / len(words)


def align(action: dict[str, Any], wins: list[Segment]) -> int:
    """Index of the window that best supports ``action`` (its source's messages first)."""
    content, source = str(action.get("content") or ""), action.get("source")

    def score(i: int) -> tuple[float, float, int]:
        msgs = list(wins[i].messages)
        own = [m for m in msgs if m.get("speaker") == source]
        return (support(content, own), support(content, msgs), -i)

    return max(range(len(wins)), key=score)


def best_citations(action: dict[str, Any], segment: Segment, k: int = 3) -> list[str]:
    """The ``k`` messages of ``segment`` sharing the most words with the action's content."""
    words = _stems(str(action.get("content") or ""))
    ranked = sorted(
        segment.messages,
        key=lambda m: len(words & _stems(str(m.get("text", "")))),
        reverse=True,
    )
    return [m["msg_id"] for m in ranked[:k] if words & _stems(str(m.get("text", "")))]


@dataclass
class WindowReport:
    """Counts of one build: windows, targets kept, actions dropped by the contract."""

    windows: int = 0
    noop_windows: int = 0
    actions_in: int = 0
    actions_kept: int = 0
    cited: int = 0
    dropped: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "windows": self.windows,
            "noop_windows": self.noop_windows,
            "teacher_actions": self.actions_in,
            "kept": self.actions_kept,
            "kept_with_citations": self.cited,
            "dropped": dict(self.dropped.most_common()),
        }


def _reason(verdict: Any) -> str:
    return (verdict.reason or verdict.kind).split(":")[0]


def contract_targets(
    actions: list[dict[str, Any]], win: Segment, report: WindowReport
) -> list[dict[str, Any]]:
    """The teacher's ``actions`` for ``win`` that the contract writes, in Writer form."""
    batch = Batch.from_segment(win)
    kept: list[dict[str, Any]] = []
    for action in actions:
        report.actions_in += 1
        verdict = check_action(dict(action), batch, len(kept))
        if verdict.kind == "reject" and "content" in (verdict.reason or ""):
            cited = best_citations(action, win)
            if cited:
                retry = check_action({**action, "from_ids": cited}, batch, len(kept))
                if retry.kind == "write":
                    report.cited += 1
                verdict = retry if retry.kind != "reject" else verdict
        if verdict.kind == "write" and verdict.proposal:
            kept.append(verdict.proposal)
        else:
            report.dropped[_reason(verdict)] += 1
    report.actions_kept += len(kept)
    return kept


def window_examples(
    net: Network, size: int = DEFAULT_WINDOW, report: WindowReport | None = None
) -> list[dict[str, Any]]:
    """The windowed SFT examples of one teacher network (TRL prompt-completion records,
    plus ``network_id``, ``position``, ``window``, ``prompt_version`` and, for GRPO, the
    serialised teacher state before the session and its actions kept for the window)."""
    report = report if report is not None else WindowReport()
    if not net.has_teacher:
        return []
    out: list[dict[str, Any]] = []
    state = WriterState(roster=net.roster)
    for t, seg in enumerate(net.segments):
        seg_t = replace(seg, heads=tuple(state.heads()))
        wins = windows(seg_t, size)
        assigned: list[list[dict[str, Any]]] = [[] for _ in wins]
        for action in net.actions[t]:
            if str(action.get("action", "")).upper() == "NOOP":
                continue
            assigned[align(action, wins)].append(action)
        for w, win in enumerate(wins):
            kept = contract_targets(assigned[w], win, report)
            prompt = build_compact_messages(win)
            target = render_actions(alias_actions(kept, prompt) if kept else [{"action": "NOOP"}])
            report.windows += 1
            report.noop_windows += not kept
            out.append(
                {
                    "network_id": net.network_id,
                    "position": t,
                    "window": w,
                    "segment_id": win.segment_id,
                    "prompt_version": COMPACT_PROMPT_VERSION,
                    "prompt": prompt.chat,
                    "completion": [{"role": "assistant", "content": target}],
                    "state": json.dumps(state.to_json(), ensure_ascii=False),
                    "window_messages": json.dumps(
                        [_plain(m) for m in win.messages], ensure_ascii=False
                    ),
                    "target_actions": json.dumps(kept, ensure_ascii=False),
                }
            )
        state.apply(net.actions[t], position=t, ids=net.created_ids[t] or None, ts=_first_ts(seg))
    return out


def _plain(message: dict[str, Any]) -> dict[str, Any]:
    """A message dict with JSON-safe values (timestamps as ISO text)."""
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in message.items()}


def is_noop(example: dict[str, Any]) -> bool:
    """Whether a windowed example's target is NOOP (no teacher action kept for the window)."""
    return not json.loads(example["target_actions"])


def thin_noop(
    examples: list[dict[str, Any]], keep: float, seed: int = 0
) -> tuple[list[dict[str, Any]], int]:
    """``examples`` with a seeded ``keep`` share of the NOOP-target windows (rounded, at least
    one when any exists and ``keep`` > 0) and every window with actions, in their order;
    returns them and how many NOOP windows were dropped.

    NOOP windows are about a third of the teacher windows and their target is six tokens, so
    their loss falls first and greedy decoding learns NOOP before it learns any action; fewer
    of them balance what SFT sees (``keep`` 1 keeps all, 0 none)."""
    if not 0.0 <= keep <= 1.0:
        raise ValueError(f"noop keep share must be in [0, 1], got {keep}")
    noop = [i for i, ex in enumerate(examples) if is_noop(ex)]
    n_keep = 0 if keep == 0 or not noop else max(1, round(keep * len(noop)))
    dropped = set(noop) - set(random.Random(seed).sample(noop, n_keep))
    out = [ex for i, ex in enumerate(examples) if i not in dropped]
    return out, len(noop) - n_keep


def build_window_dataset(
    nets: list[Network], size: int = DEFAULT_WINDOW
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Windowed examples of every network and the build report."""
    report = WindowReport()
    out: list[dict[str, Any]] = []
    for net in nets:
        out += window_examples(net, size, report)
    return out, report.as_dict()

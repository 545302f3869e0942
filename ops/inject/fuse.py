"""Fuse: user, domain state, risk and workflow state + injected knowledge -> the context C_t.

The header line (user, intent, risk class) and the workflow-state lines (this workflow's
own observations, each citing its event id) come first; knowledge fills the rest of the
budget. State lines that would overflow the budget are dropped newest-last, so
``|C_t| <= B`` always holds.
"""

from __future__ import annotations

from speakerflow.ops.inject.compress import ContextLine, count_tokens
from speakerflow.ops.inject.topb import top_b


def header(
    user: str | None,
    intent: str,
    risk: str,
    entities: list[str],
    market: dict[str, str] | None = None,
    label: str = "state",
) -> ContextLine:
    """User state U, intent, risk class R, active entities and their state M (the domain pack's
    state relation, named ``label``: a coin's market regime, a service's status)."""
    text = (
        f"user: {user or 'anonymous'} | intent: {intent} | risk: {risk} | entities: "
        f"{', '.join(entities) or '-'}"
    )
    if market:
        text += f" | {label}: " + ", ".join(f"{e.split(':', 1)[-1]} {v}" for e, v in market.items())
    return ContextLine(text, [], "header", tokens=count_tokens(text))


def state_line(text: str, evidence_id: str) -> ContextLine:
    line = f"{text} {{ev: {evidence_id}}}"
    return ContextLine(line, [evidence_id], "state", tokens=count_tokens(line))


def fuse(
    head: ContextLine,
    state: list[ContextLine],
    knowledge: list[ContextLine],
    budget: int,
    max_items: int = 16,
) -> list[ContextLine]:
    """Header + state + TopB(knowledge) within ``budget`` tokens."""
    out, used = [], 0
    for line in (head, *state):
        if used + line.tokens <= budget:
            out.append(line)
            used += line.tokens
    return out + top_b(knowledge, budget - used, max_items)

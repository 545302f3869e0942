"""TopB: the highest-utility lines that fit a token budget (greedy by utility, then skip-fit)."""

from __future__ import annotations

from speakerflow.ops.inject.compress import ContextLine


def top_b(lines: list[ContextLine], budget: int, max_items: int = 16) -> list[ContextLine]:
    """Lines in descending utility whose token sum stays <= ``budget`` (at most ``max_items``).

    A line that does not fit is skipped and smaller ones after it may still fit.

    >>> ls = [ContextLine("a", [], utility=0.9, tokens=5), ContextLine("b", [], utility=0.8, tokens=9),
    ...       ContextLine("c", [], utility=0.1, tokens=3)]
    >>> [x.text for x in top_b(ls, budget=9)]
    ['a', 'c']
    """  # noqa: E501
    out: list[ContextLine] = []
    used = 0
    for line in sorted(lines, key=lambda x: -x.utility):
        if len(out) >= max_items:
            break
        if used + line.tokens <= budget:
            out.append(line)
            used += line.tokens
    return out

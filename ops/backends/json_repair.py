"""Recover JSON from the text of a (small) chat model, or say exactly why it cannot.

Small models wrap JSON in prose, code fences or ``<think>`` blocks, leave trailing commas
or out missing ones, use Python-style single quotes or literals, and get cut off by the
token limit. The syntax repairs are the ``json-repair`` library's; this module adds what
a memory Writer needs around it:

- the wrappers go first (``<think>`` blocks, also unclosed or closed without an opening
  tag, and code fences), and prose before or after the JSON is skipped: up to
  :data:`MAX_STARTS` bracket positions are tried and the longest value wins;
- a reply cut off by the token limit keeps only its complete elements
  (:func:`close_truncated`): ``json-repair`` would close a half-written string or object,
  turning ``{"content": "the offsite is in Por`` into a record that was never said;
- the value must be an object or an array, and every repair is named in the result
  (``code_fence``, ``think_block``, ``leading_prose``, ``trailing_prose``, ``truncated``,
  ``syntax`` for the library's) so that callers can count them.

>>> repair_json('Sure! ```json\\n{"actions": [{"action": "NOOP"},]}\\n```').value
{'actions': [{'action': 'NOOP'}]}
>>> repair_json("no json here").error
'no JSON object or array found in the model output'
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import json_repair

_THINK_CLOSED = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_THINK_END = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think(?:ing)?>.*\Z", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_OPENERS = {"{": "}", "[": "]"}

#: At most this many ``{`` / ``[`` positions are tried as the start of the JSON value.
MAX_STARTS = 8


@dataclass(frozen=True)
class RepairResult:
    """Outcome of :func:`repair_json`.

    ``value`` is the decoded JSON (``None`` when ``error`` is set; note that a literal
    ``null`` is never accepted as a top-level value). ``repairs`` names the fixes that
    were needed, in order (empty for clean JSON).
    """

    value: Any = None
    error: str | None = None
    repairs: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.error is None


def strip_wrappers(text: str) -> tuple[str, list[str]]:
    """Remove ``<think>`` blocks (also a bare ``...</think>`` prefix, as templates that open
    the block in the prompt produce) and code fences."""
    repairs: list[str] = []
    if _THINK_CLOSED.search(text):
        text = _THINK_CLOSED.sub("", text)
        repairs.append("think_block")
    if _THINK_END.search(text):  # the opening tag was in the prompt: drop the reasoning
        text = _THINK_END.split(text)[-1]
        repairs.append("think_block")
    if _THINK_OPEN.search(text):  # an unclosed <think> runs to the end: nothing after it
        text = _THINK_OPEN.sub("", text)
        repairs.append("unclosed_think_block")
    fence = _FENCE.search(text)
    if fence and fence.group(1).strip():
        text = fence.group(1)
        repairs.append("code_fence")
    return text.strip(), repairs


def _structure(text: str) -> tuple[int | None, list[str], tuple[int, tuple[str, ...]] | None]:
    """One pass over ``text`` (which starts at a bracket), outside double-quoted strings:
    the end of the first balanced value (``None`` if it never closes), the closers still
    open at the end, and the last cut point where an element was complete (with the
    closers open there)."""
    stack: list[str] = []
    last_good: tuple[int, tuple[str, ...]] | None = None
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                if stack and stack[-1] == "]":
                    last_good = (i + 1, tuple(stack))  # a complete string inside a list
            continue
        if ch == '"':
            in_string = True
        elif ch in _OPENERS:
            stack.append(_OPENERS[ch])
        elif ch in "}]" and stack:
            stack.pop()
            if not stack:
                return i + 1, [], last_good
            last_good = (i + 1, tuple(stack))
    return None, stack, last_good


def close_truncated(text: str) -> str | None:
    """Cut a truncated JSON text back to its last complete element and close it.

    Returns ``None`` when nothing complete precedes the cut (or the text is balanced).
    """
    end, open_at_end, last_good = _structure(text)
    if end is not None or not open_at_end or last_good is None or not last_good[1]:
        return None
    cut, open_after = last_good
    return re.sub(r",\s*\Z", "", text[:cut]) + "".join(reversed(open_after))


def _decode(candidate: str) -> tuple[Any, int] | None:
    """Strict JSON first (the value and its span); ``None`` when that fails."""
    try:
        return json.JSONDecoder().raw_decode(candidate)
    except json.JSONDecodeError:
        return None


def _repair_at(body: str, repairs: list[str]) -> tuple[RepairResult, int]:
    """Decode the value ``body`` starts with (it starts at a bracket); also returns its span."""
    applied = list(repairs)
    decoded = _decode(body)
    if decoded is None:
        end, _, _ = _structure(body)
        if end is None:  # cut off: keep the complete elements only
            closed = close_truncated(body)
            if closed is None:
                return RepairResult(
                    error="unrepairable JSON: cut off before any complete element",
                    repairs=tuple(applied),
                ), 0
            applied.append("truncated")
            segment, span = closed, len(body)
        else:
            segment, span = body[:end], end
        decoded = _decode(segment)
        if decoded is not None:
            value = decoded[0]
        else:  # trailing or missing commas, single quotes, Python literals ...: the library
            value = json_repair.loads(segment)
            applied.append("syntax")
            if (
                not isinstance(value, dict | list)
                or value in ({}, [])
                and not re.fullmatch(r"[\[{]\s*[\]}]", segment.strip())
            ):
                return RepairResult(
                    error=f"unrepairable JSON: {segment[:60]!r}", repairs=tuple(applied)
                ), 0
    else:
        value, span = decoded
    if body[span:].strip():
        applied.append("trailing_prose")
    if not isinstance(value, dict | list):
        return RepairResult(
            error=f"top-level JSON value is a {type(value).__name__}, expected an object or array",
            repairs=tuple(applied),
        ), 0
    return RepairResult(value=value, repairs=tuple(applied)), span


def repair_json(text: str | None) -> RepairResult:
    """Decode a JSON object or array from model output, repairing common defects.

    Parameters
    ----------
    text : the model's raw completion (``None`` is treated as empty).

    Returns
    -------
    RepairResult
        ``value`` on success with the list of ``repairs`` applied; otherwise ``error``
        names what was wrong. When prose precedes the JSON, up to :data:`MAX_STARTS`
        bracket positions are tried and the longest decodable value wins (so
        ``see [1]: {...}`` yields the object).
    """
    if not text or not text.strip():
        return RepairResult(error="empty model output")
    body, repairs = strip_wrappers(text)
    starts = [i for i, ch in enumerate(body) if ch in "{["][:MAX_STARTS]
    if not starts:
        return RepairResult(
            error="no JSON object or array found in the model output", repairs=tuple(repairs)
        )
    best: tuple[RepairResult, int] | None = None
    first_failure: RepairResult | None = None
    for start in starts:
        prose = ["leading_prose"] if body[:start].strip() else []
        result, span = _repair_at(body[start:], repairs + prose)
        if result.ok and (best is None or span > best[1]):
            best = (result, span)
        elif not result.ok and first_failure is None:
            first_failure = result
    if best is not None:
        return best[0]
    assert first_failure is not None
    return first_failure

"""Recover JSON from the text of a (small) chat model, or say exactly why it cannot.

Small models wrap JSON in prose, code fences or ``<think>`` blocks, leave trailing commas,
use Python-style single quotes or literals, and get cut off by the token limit. The
repairs below are each safe on their own (none invents content) and are tried in order;
every repair applied is reported so that callers can count them.

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

_THINK_CLOSED = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_THINK_END = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think(?:ing)?>.*\Z", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_OPENERS = {"{": "}", "[": "]"}


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


def _scan(text: str, on_char) -> None:
    """Walk ``text`` outside/inside JSON strings, calling ``on_char(i, ch, in_string)``."""
    in_string = False
    escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                on_char(i, ch, False)
                continue
            on_char(i, ch, True)
        else:
            if ch == '"':
                in_string = True
            on_char(i, ch, False)


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


def single_to_double_quotes(text: str) -> str:
    """Turn ``'...'`` strings outside double-quoted strings into ``"..."`` strings.

    A single quote counts as a string delimiter only where a JSON string could start
    (after ``{ [ , :`` or at the start) or end (before ``} ] , :``); apostrophes inside
    words (``it's``) are left alone.
    """
    out: list[str] = []
    i, n = 0, len(text)
    in_double = False
    prev = "{"  # last non-space character emitted outside strings
    while i < n:
        ch = text[i]
        if in_double:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == '"':
                in_double = False
                prev = '"'
            i += 1
            continue
        if ch == '"':
            in_double = True
            out.append(ch)
            i += 1
            continue
        if ch == "'" and prev in "{[,:":
            j = i + 1
            while j < n:  # the closing quote is the next ' followed by a structural char
                if text[j] == "'" and (text[j + 1 :].lstrip()[:1] or "}") in "}],:":
                    break
                j += 1
            if j < n:
                body = text[i + 1 : j].replace('"', '\\"')
                out.append('"' + body + '"')
                prev = '"'
                i = j + 1
                continue
        out.append(ch)
        if not ch.isspace():
            prev = ch
        i += 1
    return "".join(out)


def drop_trailing_commas(text: str) -> str:
    """Remove commas that directly precede ``}`` or ``]`` (outside strings)."""
    keep = [True] * len(text)
    last_comma: list[int | None] = [None]

    def visit(i: int, ch: str, in_string: bool) -> None:
        if in_string or ch.isspace():
            return
        if ch in "}]" and last_comma[0] is not None:
            keep[last_comma[0]] = False
        last_comma[0] = i if ch == "," else None

    _scan(text, visit)
    return "".join(c for c, k in zip(text, keep, strict=True) if k)


def replace_python_literals(text: str) -> str:
    """Map bare ``True``/``False``/``None`` (outside strings) to JSON literals."""
    pieces: list[str] = []
    word: list[str] = []

    def flush() -> None:
        if word:
            w = "".join(word)
            pieces.append(_PY_LITERALS.get(w, w))
            word.clear()

    def visit(i: int, ch: str, in_string: bool) -> None:
        if ch.isalpha() and not in_string:
            word.append(ch)
            return
        flush()
        pieces.append(ch)

    _scan(text, visit)
    flush()
    return "".join(pieces)


def close_truncated(text: str) -> str | None:
    """Cut a truncated JSON text back to its last complete element and close it.

    Returns ``None`` when nothing complete precedes the cut (or the text is balanced).
    """
    stack: list[str] = []
    last_good: tuple[int, tuple[str, ...]] | None = None

    def visit(i: int, ch: str, in_string: bool) -> None:
        nonlocal last_good
        if in_string:
            return
        if ch in _OPENERS:
            stack.append(_OPENERS[ch])
        elif ch in "}]" and stack:
            stack.pop()
            last_good = (i + 1, tuple(stack))
        elif ch == '"' and stack and stack[-1] == "]":
            last_good = (i + 1, tuple(stack))  # a complete string inside a list

    _scan(text, visit)
    if not stack or last_good is None or not last_good[1]:
        return None
    cut, open_after = last_good
    return text[:cut] + "".join(reversed(open_after))


def _loads(text: str) -> tuple[Any, int]:
    """Decode the first JSON value; returns it and the number of characters it spans."""
    return json.JSONDecoder().raw_decode(text)


#: At most this many ``{`` / ``[`` positions are tried as the start of the JSON value.
MAX_STARTS = 8


def _repair_at(body: str, repairs: list[str]) -> tuple[RepairResult, int]:
    """Run the repair steps on ``body`` (which starts at a bracket); also returns the span."""
    steps = (
        ("as_is", lambda s: s),
        ("trailing_commas", drop_trailing_commas),
        ("single_quotes", single_to_double_quotes),
        ("python_literals", replace_python_literals),
        ("truncated", close_truncated),
    )
    candidate, last_error = body, ""
    for name, fix in steps:
        fixed = fix(candidate)
        if fixed is None or (name != "as_is" and fixed == candidate):
            continue
        if name == "truncated":  # closing may expose a trailing comma before the closer
            fixed = drop_trailing_commas(fixed)
        candidate = fixed
        applied = repairs + ([name] if name != "as_is" else [])
        try:
            value, end = _loads(candidate)
        except json.JSONDecodeError as exc:
            last_error = f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
            repairs = applied
            continue
        if candidate[end:].strip():
            applied.append("trailing_prose")
        if not isinstance(value, dict | list):
            return RepairResult(error=f"top-level JSON value is a {type(value).__name__}, "
                                      "expected an object or array", repairs=tuple(applied)), 0
        return RepairResult(value=value, repairs=tuple(applied)), end
    return RepairResult(error=f"unrepairable JSON: {last_error}", repairs=tuple(repairs)), 0


def repair_json(text: str | None) -> RepairResult:
    """Decode a JSON object or array from model output, repairing common defects.

    Parameters
    ----------
    text : the model's raw completion (``None`` is treated as empty).

    Returns
    -------
    RepairResult
        ``value`` on success with the list of ``repairs`` applied; otherwise ``error``
        names what was wrong (and the JSON decoder's position when it got that far).
        When prose precedes the JSON, up to :data:`MAX_STARTS` bracket positions are tried
        and the longest decodable value wins (so ``see [1]: {...}`` yields the object).
    """
    if not text or not text.strip():
        return RepairResult(error="empty model output")
    body, repairs = strip_wrappers(text)
    starts = [i for i, ch in enumerate(body) if ch in "{["][:MAX_STARTS]
    if not starts:
        return RepairResult(error="no JSON object or array found in the model output",
                            repairs=tuple(repairs))
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

"""Structured decoding of the local Writer's reply: the model chooses only where the
contract leaves a choice; code writes the JSON syntax.

The reply is walked in the canonical form of the SFT targets
(:func:`~speakerflow.ops.write.writer.prompt.render_actions`, key order ``_ACTION_KEYS``,
opening :data:`~speakerflow.ops.write.writer.prompt.REPLY_OPENING`), so the tokens fed are
the ones training saw. Every choice is the option of highest log-probability
(:meth:`~speakerflow.ops.backends.structured.CachedDecoder.choose`):

* ``action``: ADD, UPDATE (only when the prompt shows E ids) or NOOP (first action only,
  and only where the model gives NOOP's first token at least ``noop_min_p``: the calibrated
  gate of free decoding); NOOP closes the reply.
* ADD: ``owner`` among the roster and GROUP, ``source`` among the roster, ``layer`` among
  the layers the contract allows that owner (GROUP_LAYERS for GROUP, else PERSON_LAYERS),
  ``utype`` among WRITER_UTYPES; UPDATE: ``entry_id`` among the E ids, ``utype``
  (the targets' UPDATE keys); then ``content`` generated greedily until the closing quote
  (at least ``min_content_tokens`` tokens: a bare name is not a statement; at most
  ``content_tokens``, cut before a repeated 4-gram).
* after ``content``: close the action and the reply, close it and open another, or write
  ``"from_ids": [`` and choose message numbers among the unused ``1..n``, each followed by
  a choice between another number and the two closings.

At most ``max_actions`` actions; an action with empty content or the content of an earlier
one in the reply is dropped and the reply closed. The result always parses and has the
contract's shape; what it says is left to Validate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from speakerflow.ops.backends.structured import CachedDecoder
from speakerflow.ops.write.writer.prompt import REPLY_OPENING, WRITER_UTYPES, CompactPrompt
from speakerflow.schemas.records import GROUP_LAYERS, GROUP_OWNER, PERSON_LAYERS

_NEXT = '}, {"action": "'
_CLOSE = "}]}"


@dataclass(frozen=True)
class StructuredSettings:
    """Limits of the walk: actions per reply, tokens per content (most, least), NOOP gate."""

    max_actions: int = 6
    content_tokens: int = 48
    noop_min_p: float = 0.0
    min_content_tokens: int = 4


@dataclass
class StructuredReply:
    """The reply text (canonical JSON), its actions (compact ids) and how contents ended."""

    text: str
    actions: list[dict[str, Any]]
    endings: dict[str, int] = field(default_factory=dict)


def _clean(text: str) -> str:
    """Generated content as one JSON-safe line (no quotes, backslashes or control chars)."""
    text = "".join(" " if ord(c) < 32 else c for c in text.replace("\\", " "))
    return " ".join(text.split())


def _q(text: str) -> str:
    """``text`` as the inside of a JSON string."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


class _Walk:
    def __init__(self, dec: CachedDecoder, prompt: CompactPrompt, roster: list[str], s: Any):
        self.dec, self.prompt, self.roster, self.s = dec, prompt, roster, s
        self.reply = StructuredReply(REPLY_OPENING, [])

    def pick(self, values: list[str], after: str) -> str:
        return values[self.dec.choose([_q(v) + after for v in values]).index]

    def content(self) -> str:
        text, why = self.dec.generate(
            '"', self.s.content_tokens, min_tokens=self.s.min_content_tokens
        )
        self.reply.endings[why] = self.reply.endings.get(why, 0) + 1
        return _clean(text)

    def citations(self, action: dict[str, Any], closers: list[str]) -> str:
        """Message numbers after ``"from_ids": [``; returns the closing chosen."""
        left = list(range(1, len(self.prompt.messages) + 1))
        cited: list[int] = []
        while True:
            k = left[self.dec.choose([str(n) for n in left]).index]
            cited.append(k)
            left.remove(k)
            more = [", "] if left else []
            pick = self.dec.choose(more + ["]" + c for c in closers]).index
            if pick >= len(more):
                action["from_ids"] = cited
                return closers[pick - len(more)]

    def action(self, first: bool) -> tuple[dict[str, Any] | None, str]:
        """One action after ``{"action": "``; returns it (None: dropped) and the closing."""
        dec, mark = self.dec, self.dec.text
        kinds = ["ADD"] + (["UPDATE"] if self.prompt.entries else [])
        if first and (self.s.noop_min_p <= 0 or dec.next_token_prob("NOOP") >= self.s.noop_min_p):
            kinds.append("NOOP")
        heads = {"ADD": '", "owner": "', "UPDATE": '", "entry_id": "', "NOOP": '"' + _CLOSE}
        kind = kinds[dec.choose([k + heads[k] for k in kinds]).index]
        if kind == "NOOP":
            return {"action": "NOOP"}, _CLOSE
        act: dict[str, Any] = {"action": kind}
        if kind == "ADD":
            act["owner"] = self.pick([*self.roster, GROUP_OWNER], '", "source": "')
            act["source"] = self.pick(self.roster, '", "layer": "')
            layers = GROUP_LAYERS if act["owner"] == GROUP_OWNER else PERSON_LAYERS
            act["layer"] = self.pick(list(layers), '", "utype": "')
        else:
            act["entry_id"] = self.pick(list(self.prompt.entries), '", "utype": "')
        act["utype"] = self.pick(list(WRITER_UTYPES), '", "content": "')
        content = self.content()
        earlier = {a.get("content") for a in self.reply.actions}
        if not content or content in earlier:
            dec.set_text(mark)
            return None, _CLOSE
        act["content"] = content
        dec.set_text(dec.text + _q(content))
        closers = [_CLOSE] + ([_NEXT] if len(self.reply.actions) + 1 < self.s.max_actions else [])
        options = ['"' + c for c in closers] + (
            ['", "from_ids": ['] if self.prompt.messages else []
        )
        pick = dec.choose(options).index
        closing = closers[pick] if pick < len(closers) else self.citations(act, closers)
        return act, closing

    def run(self) -> StructuredReply:
        first = True
        while True:
            act, closing = self.action(first)
            if act is None:
                if first:  # nothing usable: an empty reply, not an invented NOOP
                    self.dec.set_text('{"actions": []}')
                    break
                # the previous action's "}, {"action": " is rewritten as the reply's end
                self.dec.set_text(self.dec.text.removesuffix(_NEXT[1:]) + "]}")
                break
            self.reply.actions.append(act)
            first = False
            if closing == _CLOSE:
                break
        self.reply.text = self.dec.text
        return self.reply


def structured_reply(
    dec: CachedDecoder,
    prompt: CompactPrompt,
    roster: list[str],
    settings: StructuredSettings | None = None,
) -> StructuredReply:
    """Walk the reply for ``prompt`` over ``dec`` (which holds the prompt and
    :data:`REPLY_OPENING`); see the module docstring. ``roster`` are the names offered for
    owner and source."""
    if not roster:
        raise ValueError("structured decoding needs a roster to choose owner and source from")
    if dec.text != REPLY_OPENING:
        raise ValueError(f"the decoder must hold exactly the reply opening {REPLY_OPENING!r}")
    return _Walk(dec, prompt, roster, settings or StructuredSettings()).run()

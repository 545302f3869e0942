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

With ``content="extract"`` the model does not write the content but chooses it (by its
log-probability per token) among the window's statements (:func:`statements`: each sentence
of the source's messages that is not a question, in the third person, without the fields'
names), and the message it comes from is cited; so every content is grounded by
construction and the model ranks what is worth recording. A 135M model trained on 70
windows writes contents Validate refuses (docs/training.md); choosing among the messages'
own sentences is what it can do.

At most ``max_actions`` actions; an action with empty content or the content of an earlier
one in the reply is dropped and the reply closed. The result always parses and has the
contract's shape; what it says is left to Validate.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from speakerflow.ops.backends.structured import CachedDecoder
from speakerflow.ops.write.writer.prompt import REPLY_OPENING, WRITER_UTYPES, CompactPrompt
from speakerflow.ops.write.writer.rules_content import concise
from speakerflow.ops.write.writer.rules_text import (
    is_question,
    sentences,
    strip_filler,
    third_person,
    words,
)
from speakerflow.schemas.records import GROUP_LAYERS, GROUP_OWNER, PERSON_LAYERS

_NEXT = '}, {"action": "'
_CLOSE = "}]}"


@dataclass(frozen=True)
class StructuredSettings:
    """Limits of the walk: actions per reply, tokens per content (most, least), NOOP gate;
    ``content``: ``generate`` (the model writes it) or ``extract`` (it chooses a statement of
    the window, :func:`statements`); ``temperature`` / ``seed``: sampled choices;
    ``more_bias``: a preference for another action over closing the reply."""

    max_actions: int = 6
    content_tokens: int = 48
    noop_min_p: float = 0.0
    min_content_tokens: int = 4
    content: Literal["generate", "extract"] = "generate"
    #: > 0: every choice is drawn from the softmax of its options' scores at this
    #: temperature (seeded by ``seed``), for GRPO's sampled walks; 0 = the best option
    temperature: float = 0.0
    seed: int = 0
    #: added to the log-probability of opening another action (rather than closing the
    #: reply): the calibrated rate of actions per window (``train calibrate-more``)
    more_bias: float = 0.0


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


def statements(
    window: Sequence[Mapping[str, Any]], owner: str, source: str | None, min_words: int = 3
) -> list[tuple[int, str]]:
    """``(message number, content)`` for each sentence of the window said by ``source``
    (anyone's when ``source`` is None or said nothing there) that is not a question and has
    at least ``min_words`` words: the speaker's first person rewritten in the third, the
    record's owner dropped as its opening subject (:func:`concise`). Numbers are 1-based, as
    the prompt shows them; repeated contents are kept once."""
    said = [i for i, m in enumerate(window) if source is not None and m.get("speaker") == source]
    picked = said or range(len(window))
    out: list[tuple[int, str]] = []
    seen: set[str] = set()
    for i in picked:
        speaker = str(window[i].get("speaker") or "")
        for sent in sentences(_clean(str(window[i].get("text") or ""))):
            sent = strip_filler(sent)
            if is_question(sent) or len(words(sent)) < min_words:
                continue
            text = third_person(sent, speaker) if speaker else sent
            text = _clean(concise(text, owner, speaker, elide=owner == speaker, keep_owner=True))
            if text and text.lower() not in seen:
                seen.add(text.lower())
                out.append((i + 1, text))
    return out


class _Walk:
    def __init__(
        self,
        dec: CachedDecoder,
        prompt: CompactPrompt,
        roster: list[str],
        s: Any,
        window: Sequence[Mapping[str, Any]] = (),
    ):
        self.dec, self.prompt, self.roster, self.s = dec, prompt, roster, s
        self.window = window
        self.reply = StructuredReply(REPLY_OPENING, [])
        self.rng = random.Random(s.seed) if s.temperature > 0 else None

    def choose(self, options: list[str], per_token: bool = False) -> int:
        """The index of the option written (the best, or drawn: see StructuredSettings);
        an option that opens another action gets ``more_bias`` added to its score."""
        more = self.s.more_bias
        bias = [more if _NEXT in o else 0.0 for o in options] if more else None
        return self.dec.choose(options, per_token, self.s.temperature, self.rng, bias).index

    def pick(self, values: list[str], after: str) -> str:
        return values[self.choose([_q(v) + after for v in values])]

    def content(self) -> str:
        text, why = self.dec.generate(
            '"', self.s.content_tokens, min_tokens=self.s.min_content_tokens
        )
        self.reply.endings[why] = self.reply.endings.get(why, 0) + 1
        return _clean(text)

    def extract(self, act: dict[str, Any]) -> tuple[str, int] | None:
        """The statement chosen for ``act`` and its message number (None: none left); the
        decoder then holds it and its closing quote."""
        earlier = {a.get("content") for a in self.reply.actions}
        found = [
            (k, text)
            for k, text in statements(self.window, act.get("owner", ""), act.get("source"))
            if text not in earlier
        ]
        if not found:
            return None
        pick = self.choose([_q(text) + '"' for _, text in found], per_token=True)
        self.reply.endings["extract"] = self.reply.endings.get("extract", 0) + 1
        return found[pick][1], found[pick][0]

    def citations(self, action: dict[str, Any], closers: list[str]) -> str:
        """Message numbers after ``"from_ids": [``; returns the closing chosen."""
        left = list(range(1, len(self.prompt.messages) + 1))
        cited: list[int] = []
        while True:
            k = left[self.choose([str(n) for n in left])]
            cited.append(k)
            left.remove(k)
            more = [", "] if left else []
            pick = self.choose(more + ["]" + c for c in closers])
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
        kind = kinds[self.choose([k + heads[k] for k in kinds])]
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
        if self.s.content == "extract":
            return self.extracted(act, mark)
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
        pick = self.choose(options)
        closing = closers[pick] if pick < len(closers) else self.citations(act, closers)
        return act, closing

    def extracted(self, act: dict[str, Any], mark: str) -> tuple[dict[str, Any] | None, str]:
        """The rest of an action whose content is chosen (:meth:`extract`) and cited."""
        dec = self.dec
        chosen = self.extract(act)
        if chosen is None:
            dec.set_text(mark)
            return None, _CLOSE
        act["content"], act["from_ids"] = chosen[0], [chosen[1]]
        dec.set_text(dec.text + f', "from_ids": [{chosen[1]}]')
        more = len(self.reply.actions) + 1 < self.s.max_actions
        closers = [_CLOSE] + ([_NEXT] if more else [])
        return act, closers[self.choose(closers)]

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
    window: Sequence[Mapping[str, Any]] = (),
) -> StructuredReply:
    """Walk the reply for ``prompt`` over ``dec`` (which holds the prompt and
    :data:`REPLY_OPENING`); see the module docstring. ``roster`` are the names offered for
    owner and source; ``window`` the window's messages (``speaker``, ``text``, in the
    prompt's order), which ``content="extract"`` chooses from."""
    settings = settings or StructuredSettings()
    if settings.content == "extract" and len(window) != len(prompt.messages):
        raise ValueError(
            f"content='extract' needs the window's {len(prompt.messages)} messages, "
            f"got {len(window)}"
        )
    if not roster:
        raise ValueError("structured decoding needs a roster to choose owner and source from")
    if dec.text != REPLY_OPENING:
        raise ValueError(f"the decoder must hold exactly the reply opening {REPLY_OPENING!r}")
    return _Walk(dec, prompt, roster, settings, window).run()

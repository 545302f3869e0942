"""GRPO of the local Writer samples after the forced reply opening, and its reward parses
opening + completion (training/grpo_windows.py)."""

from __future__ import annotations

import json

from writer_sample import MSGS

from speakerflow.ops.write.interfaces import Segment
from speakerflow.ops.write.writer.local import LocalWriterConfig
from speakerflow.ops.write.writer.prompt import (
    REPLY_OPENING,
    build_compact_messages,
    render_actions,
)
from speakerflow.training.grpo_windows import WindowReward, forced_prompt, grpo_rows
from speakerflow.training.state import WriterState

TARGET = [
    {"action": "ADD", "owner": "GROUP", "source": "Ana", "layer": "group_interaction",
     "utype": "decision", "content": "the offsite is in Porto", "from_ids": ["t_s1_t000"]},
]  # fmt: skip


class TemplateTokenizer:
    """A double of a chat tokenizer whose template opens with BOS and which adds BOS itself."""

    bos_token, bos_token_id, eos_token_id = "<s>", 1, 2

    def apply_chat_template(self, chat, tokenize, add_generation_prompt):
        assert not tokenize and add_generation_prompt
        body = "".join(f"<s>{m['role']}\n{m['content']}</s>\n" for m in chat)
        return body + "<s>assistant\n"

    def __call__(self, text):
        return {"input_ids": [self.bos_token_id] + [ord(c) for c in text]}


def example() -> dict:
    seg = Segment("s1#0/w0", "t", ("Ana", "Ben"), MSGS)
    return {
        "network_id": "t",
        "position": 0,
        "segment_id": seg.segment_id,
        "prompt": build_compact_messages(seg).chat,
        "state": json.dumps(WriterState(roster=("Ana", "Ben")).to_json()),
        "window_messages": json.dumps(list(MSGS)),
        "target_actions": json.dumps(TARGET),
    }


def test_the_opening_is_the_writers_and_starts_every_target():
    assert LocalWriterConfig().reply_prefix == REPLY_OPENING
    assert render_actions(TARGET).startswith(REPLY_OPENING)
    assert render_actions([{"action": "NOOP"}]).startswith(REPLY_OPENING)


def test_prompt_ends_with_the_assistant_header_and_the_opening_without_a_second_bos():
    tok = TemplateTokenizer()
    text = forced_prompt(tok, [{"role": "user", "content": "hi"}])
    assert text == "user\nhi</s>\n<s>assistant\n" + REPLY_OPENING
    assert tok(text)["input_ids"].count(tok.bos_token_id) == 1  # the one the tokenizer adds
    [row] = grpo_rows([example()], tok)
    assert row["prompt"].endswith("<s>assistant\n" + REPLY_OPENING)
    assert set(row) == {"prompt", "state", "window_messages", "target_actions", "position",
                        "network_id"}  # fmt: skip


def test_reward_parses_opening_plus_completion_so_rewards_differ_within_a_group():
    tok = TemplateTokenizer()
    rows = grpo_rows([example()], tok) * 3
    cols = {k: [r[k] for r in rows] for k in rows[0] if k != "prompt"}
    good = render_actions(TARGET).removeprefix(REPLY_OPENING)
    completions = [good, 'NOOP"}]}', "the offsite"]  # the right write, a NOOP, broken JSON
    reward = WindowReward(tok.eos_token_id)
    ids = [[5, tok.eos_token_id], [5, tok.eos_token_id], [5, 6]]
    r = reward([row["prompt"] for row in rows], completions, completion_ids=ids, **cols)
    assert r[0] > r[1] > r[2]
    assert reward.last["json_valid"] == 2 / 3 and reward.last["cut"] == 1 / 3
    assert reward.last["refused"] == 0.0  # the target write and the NOOP both pass Validate

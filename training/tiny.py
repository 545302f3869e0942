"""A tiny, randomly initialised Qwen2-architecture chat model for tests and dry runs.

:func:`build_tiny_model` writes a complete Hugging Face model folder (config, weights,
tokenizer with a ChatML chat template, generation config) without any download: the
byte-level BPE tokenizer is trained offline by ``tokenizers`` on a small built-in corpus
that contains the Writer's vocabulary and JSON punctuation, and the model weights are
drawn from a seeded random initialisation. Its output is garbage by design: it exercises
every code path of the chat backends, training and ONNX export in milliseconds.

>>> folder = build_tiny_model(tmp_path / "tiny")          # doctest: +SKIP
>>> make_backend("transformers", model_dir=folder).chat([{"role": "user", "content": "hi"}])  # doctest: +SKIP
"""  # noqa: E501

from __future__ import annotations

from pathlib import Path

#: Special tokens of the ChatML format used by Qwen2 chat models.
END_OF_TEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = (END_OF_TEXT, IM_START, IM_END)

#: ChatML template. ``{% generation %}`` marks assistant text, so that TRL's
#: ``assistant_only_loss=True`` can mask everything else.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}"
    "{{ '<|im_start|>assistant\n' }}{% generation %}{{ message['content'] + '<|im_end|>' }}"
    "{% endgeneration %}{{ '\n' }}"
    "{% else %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# A few lines of what the tokenizer will see most: Writer prompts, chat lines, JSON actions.
_CORPUS = (
    '{"actions": [{"action": "ADD", "owner": "GROUP", "source": "Ana", "layer": '
    '"group_interaction", '
    '"utype": "decision", "content": "the team will go with Porto", "from_ids": ["m1", "m2"]}]}',
    '{"actions": [{"action": "UPDATE", "entry_id": "r_3f2a", "content": "now lives in Vienna", '
    '"from_ids": ["m7"]}, {"action": "NOOP"}]}',
    "per_speaker_core per_speaker_profile group_interaction group_insight",
    "fact stance observation decision relation norm preference owner source layer utype content",
    "Speakers present: Ana, Ben, Dev, Mum, Dad. Session s01. Time 2025-03-14T09:30:00Z.",
    "[m12] 2025-03-14 Ana: let's go with the Lisbon option, it's settled then.",
    "[m13] 2025-03-14 Ben: I think Dev is always the one who books the tables.",
    "[m14] 2025-03-15 Dev: we always split the bill evenly, everyone should pay on time.",
    "CURRENT MEMORY: none yet. NEW MESSAGES IN THIS SEGMENT. Return JSON only.",
    "The budget moved from 600 to 700 euros; the deadline shifted to Friday 27 June.",
    "I live in Munich. I moved to Vienna last month. I would rather stay home this year.",
    "0123456789 {} [] : , \" ' ( ) @ # - _ . ! ? ; / \\ < > = + * % & | ~ `",
    "You are a memory writer for a group chat. Record who said what about whom.",
)


def _train_tokenizer(vocab_size: int):
    """Train a byte-level BPE tokenizer on the built-in corpus (deterministic, ~0.1 s)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(_CORPUS) * 4, trainer=trainer)
    return tok


def build_tiny_model(
    folder: str | Path,
    seed: int = 0,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    vocab_size: int = 640,
    max_positions: int = 32768,
) -> Path:
    """Write a tiny random Qwen2 chat model and its tokenizer into ``folder``.

    Parameters
    ----------
    folder : the output folder (created; existing files are overwritten).
    seed : seeds the weight initialisation; the same seed gives identical weights.
    hidden_size, num_layers : model width and depth (defaults: 64 and 2, ~0.1 M parameters).
    vocab_size : target BPE vocabulary size (256 byte symbols + merges + 3 special tokens).
    max_positions : longest sequence (prompt + completion) in tokens; Writer prompts are
        long and this tokenizer is coarse; rotary positions cost no parameters, so the
        default matches Qwen2.5 (32768).

    Returns
    -------
    Path
        ``folder``, loadable with ``AutoModelForCausalLM`` / ``AutoTokenizer`` and by the
        ``transformers`` chat backend; ``<|im_end|>`` ends a turn (the eos token).
    """
    import torch
    from transformers import (
        GenerationConfig,
        PreTrainedTokenizerFast,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=_train_tokenizer(vocab_size),
        eos_token=IM_END,
        pad_token=END_OF_TEXT,
        unk_token=None,
        padding_side="left",
        model_input_names=["input_ids", "attention_mask"],
        additional_special_tokens=[IM_START],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    eos_id = tokenizer.convert_tokens_to_ids(IM_END)
    pad_id = tokenizer.convert_tokens_to_ids(END_OF_TEXT)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        bos_token_id=pad_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        use_cache=True,
        # wider than the usual 0.02 so that logits are decisive (no near-ties under greedy
        # decoding, which keeps torch/ONNX parity checks meaningful) and output varied
        initializer_range=0.3,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=pad_id, eos_token_id=eos_id, pad_token_id=pad_id, do_sample=False
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out

"""Speaker-conditioned GRPO of the local Writer with TRL's ``GRPOTrainer``, on windows.

Each training prompt is one window of :mod:`speakerflow.training.windows` (the compact
prompt over the teacher's heads before the session), rendered as text that ends with the
forced reply opening the Writer gets at inference (:func:`forced_prompt`), so the samples
are continuations of ``{"actions": [{"action": "`` and valid JSON is a few tokens away; the
reward parses opening + completion. TRL samples ``num_generations``
completions of it (G = 4 by default) and normalises their rewards within the group (the
paper's position-wise advantage, here with one writing position per group). The reward of
a completion is the local part of the paper's return (Eq. 9 without the terminal QA term,
which needs whole-network trajectories; :mod:`.grpo` keeps that loop):

``r = 0.20 R_valid + 0.45 R_mem + P_struct``

computed by :func:`speakerflow.training.reward.step_reward`: every action goes through
``check_action`` (Validate's contract) against the window, only writes are applied, and
``R_mem = 0.80 Phi_SL + 0.20 chain F`` compares the resulting state with the teacher's state
after the window, owner bucket by owner bucket (SpeakerLevenshtein; GROUP and each person
scored separately, the worst owner weighted 0.20). ``new_weight`` adds ``w_new R_new``, the
window credit over the records the teacher wrote in this window
(:func:`speakerflow.training.reward.window_credit`; 0 by default).

With ``decoding="extract"`` TRL's sampler is replaced (:class:`WalkRollout`, TRL's
``rollout_func``) by the extractive walk the Writer is evaluated with, every choice sampled.

The policy is the SFT adapter merged into the base plus a fresh LoRA adapter; TRL's
reference policy is the same model with that adapter disabled, i.e. the SFT Writer, and the
k3 KL to it is weighted ``beta`` (0.10 as in the paper). The saved adapter names the SFT
adapter folder as its base, so :func:`speakerflow.ops.backends.models.resolve_model` stacks
both over the PyPI base. Checkpoints every ``save_steps`` steps; ``resume`` continues from
the newest. The learning curve (reward, Phi_SL, share of actions Validate refuses, JSON
validity, per step) is returned and written to ``curve.json``.
"""

from __future__ import annotations

import json
import shutil
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from speakerflow.ops.write.interfaces import Segment
from speakerflow.ops.write.writer.prompt import (
    REPLY_OPENING,
    build_compact_messages,
    unalias_actions,
)

from .action_report import parse_actions
from .reward import DEFAULT_REWARD, RewardConfig, step_reward
from .sft import device_and_dtype, lora_config, newest_checkpoint
from .state import WriterState


class WindowGRPOSettings(BaseModel):
    """Hyper-parameters of :func:`train_grpo_windows` (small CPU defaults)."""

    model_config = ConfigDict(frozen=True)

    steps: int = Field(default=20, ge=1, description="optimizer steps (one prompt group each)")
    group_size: int = Field(default=4, ge=2, description="completions per prompt (G)")
    lr: float = Field(default=5e-5, gt=0)
    beta: float = Field(default=0.10, ge=0, description="k3 KL weight to the SFT policy")
    eps: float = Field(default=0.20, gt=0, description="ratio clip")
    temperature: float = Field(default=0.8, gt=0)
    top_p: float = Field(default=0.95, gt=0, le=1)
    max_new_tokens: int = Field(default=160, ge=8)
    lora_r: int = Field(default=16, ge=1)
    lora_alpha: int = Field(default=32, ge=1)
    lora_layers: int | None = Field(default=None, ge=1)
    save_steps: int = Field(default=0, ge=0)
    resume: bool = False
    seed: int = 0
    decoding: Literal["free", "extract"] = Field(
        default="free",
        description="how samples are drawn: free text (TRL's generate) or the extractive "
        "walk with sampled choices (WalkRollout)",
    )
    max_actions: int = Field(default=6, ge=1, description="extract: actions per sampled walk")
    new_weight: float = Field(
        default=0.0,
        ge=0,
        description="w_new of the return: weight of the window credit over the records the "
        "teacher wrote in the window (0: the paper's local return)",
    )


def window_segment(example: dict[str, Any]) -> tuple[Segment, WriterState]:
    """The window :class:`Segment` (heads = the state before it) and that state, from a
    :func:`~speakerflow.training.windows.window_examples` record."""
    state = WriterState.from_json(json.loads(example["state"]))
    messages = tuple(json.loads(example["window_messages"]))
    group = str(example.get("network_id", ""))
    seg = Segment(
        str(example.get("segment_id", "w")), group, state.roster, messages, tuple(state.heads())
    )
    return seg, state


class WindowReward:
    """TRL reward function: the local return of each completion (see the module docstring).

    Also logs ``phi_sl``, ``refused`` (share of proposed actions Validate refuses),
    ``json_valid`` and ``cut`` per batch through TRL's ``log_metric``, and keeps the last
    batch's values in ``last``.
    """

    __name__ = "speaker_levenshtein"

    def __init__(self, eos_id: int | None, cfg: RewardConfig = DEFAULT_REWARD):
        self.eos_id, self.cfg = eos_id, cfg
        self.last: dict[str, float] = {}

    def score(self, text: str, example: dict[str, Any], cut: bool) -> tuple[float, Any, Any]:
        """Reward of the reply ``text`` (the forced opening included) to ``example``."""
        seg, state = window_segment(example)
        prompt = build_compact_messages(seg)
        ref = state.copy()
        ref.apply(json.loads(example["target_actions"]), position=int(example["position"]))
        actions, _, clean = parse_actions(text)
        if actions is not None:  # the short ids mapped back; a dirty stop stays dirty
            text = json.dumps({"actions": unalias_actions(actions, prompt)}, ensure_ascii=False)
            text += "" if clean else " …"
        sr, rep = step_reward(
            text,
            state,
            ref,
            n_messages=len(seg.messages),
            position=int(example["position"]) + 1000,
            length_cut=cut,
            cfg=self.cfg,
            segment=seg,
        )
        return sr.local, sr, rep

    def __call__(self, prompts, completions, completion_ids=None, log_metric=None, **columns):
        keys = [k for k in columns if k not in ("trainer_state", "log_extra", "environments")]
        rewards, phis, news, refused, attempted, valid, cuts = [], [], [], 0, 0, 0, 0
        for i, completion in enumerate(completions):
            ids = list(completion_ids[i]) if completion_ids is not None else []
            cut = bool(ids) and self.eos_id is not None and self.eos_id not in ids
            text = REPLY_OPENING + str(completion)  # TRL samples after the forced opening
            r, sr, rep = self.score(text, {k: columns[k][i] for k in keys}, cut)
            rewards.append(r)
            phis.append(sr.phi)
            news.append(sr.new)
            attempted += rep.attempted
            refused += rep.attempted - rep.schema_valid
            valid += rep.json_valid
            cuts += cut
        n = max(1, len(rewards))
        self.last = {
            "reward": sum(rewards) / n,
            "phi_sl": sum(phis) / n,
            "window_credit": sum(news) / n,
            "refused": refused / attempted if attempted else 0.0,
            "json_valid": valid / n,
            "cut": cuts / n,
        }
        if log_metric is not None:
            for name in ("phi_sl", "window_credit", "refused", "json_valid", "cut"):
                log_metric(name, self.last[name])
        return rewards


def forced_prompt(tokenizer: Any, chat: Sequence[dict[str, Any]]) -> str:
    """The text GRPO samples after: ``chat`` through the chat template with its assistant
    header, then :data:`~speakerflow.ops.write.writer.prompt.REPLY_OPENING`, as
    :class:`~speakerflow.ops.write.writer.local.LocalWriter` prompts at inference. TRL
    tokenises a text prompt with the tokenizer's special tokens, so a leading BOS that the
    template writes and the tokenizer adds again is dropped from the text: the ids are then
    the ones inference feeds."""
    text = tokenizer.apply_chat_template(list(chat), tokenize=False, add_generation_prompt=True)
    bos, bos_id = getattr(tokenizer, "bos_token", None), getattr(tokenizer, "bos_token_id", None)
    if bos and text.startswith(bos) and tokenizer("")["input_ids"][:1] == [bos_id]:
        text = text[len(bos) :]
    return text + REPLY_OPENING


#: Columns of a window example the reward reads (besides the prompt).
REWARD_COLUMNS = ("state", "window_messages", "target_actions", "position", "network_id")


def grpo_rows(examples: Sequence[dict[str, Any]], tokenizer: Any) -> list[dict[str, Any]]:
    """GRPO dataset rows: the :func:`forced_prompt` text and the reward's columns."""
    return [
        {"prompt": forced_prompt(tokenizer, ex["prompt"]), **{k: ex[k] for k in REWARD_COLUMNS}}
        for ex in examples
    ]


class WalkRollout:
    """TRL ``rollout_func`` for ``decoding="extract"``: each prompt's completion is a walk of
    :func:`~speakerflow.ops.write.writer.structured.structured_reply` with extracted contents
    and every choice drawn at ``temperature`` (a new seed per sample), over the policy being
    trained. Returns the prompt ids (the chat template with the assistant header and the
    forced opening, as inference feeds them), the reply's ids after the opening plus the end
    token, and no sampling log-probabilities (TRL scores the ids itself). So GRPO trains the
    decoding the Writer is evaluated with: TRL's loss raises or lowers the log-probability
    of the walk's whole text, i.e. of the options it chose."""

    def __init__(self, examples: Sequence[dict[str, Any]], tokenizer: Any, s: WindowGRPOSettings):
        self.by_prompt = {forced_prompt(tokenizer, ex["prompt"]): ex for ex in examples}
        self.tokenizer, self.s = tokenizer, s
        self.calls = 0

    def __call__(self, prompts: Sequence[str], trainer: Any) -> dict[str, Any]:
        model = trainer.model
        out: dict[str, Any] = {"prompt_ids": [], "completion_ids": [], "logprobs": None}
        training = model.training
        model.eval()  # in train mode gradient checkpointing drops the KV cache the walk reads
        try:
            for prompt in prompts:
                opened, reply = self.walk(model, self.by_prompt[prompt])
                out["prompt_ids"].append(opened)
                out["completion_ids"].append(reply + [self.tokenizer.eos_token_id])
        finally:
            model.train(training)
        return out

    def walk(self, model: Any, ex: dict[str, Any]) -> tuple[list[int], list[int]]:
        """One sampled walk for window example ``ex``: the ids up to the forced opening and
        the reply's ids after it."""
        from speakerflow.ops.backends.structured import CachedDecoder
        from speakerflow.ops.write.writer.structured import StructuredSettings, structured_reply

        tok = self.tokenizer
        seg, _ = window_segment(ex)
        chat = tok.apply_chat_template(
            list(ex["prompt"]), tokenize=False, add_generation_prompt=True
        )
        dec = CachedDecoder(model, tok, chat)
        dec.set_text(REPLY_OPENING)
        opened = list(dec.ids)
        self.calls += 1
        settings = StructuredSettings(
            max_actions=self.s.max_actions,
            content="extract",
            temperature=self.s.temperature,
            seed=self.s.seed * 100_003 + self.calls,
        )
        reply = structured_reply(
            dec, build_compact_messages(seg), list(seg.roster), settings, seg.messages
        )
        if not reply.text.startswith(REPLY_OPENING):  # an empty reply (nothing to choose):
            rest = 'NOOP"}]}'  # the NOOP it amounts to
        elif dec.ids[: len(opened)] == opened:
            return opened, dec.ids[len(opened) :]
        else:  # the reply's first token merged with the opening's last: tokenised after it
            rest = reply.text.removeprefix(REPLY_OPENING)
        return opened, list(tok(rest, add_special_tokens=False)["input_ids"])


def train_grpo_windows(
    sft_adapter: str | Path,
    examples: Sequence[dict[str, Any]],
    out_dir: str | Path,
    settings: WindowGRPOSettings | None = None,
) -> dict[str, Any]:
    """GRPO from the SFT adapter ``sft_adapter`` over window ``examples``; saves a new
    adapter (over the SFT one) in ``out_dir`` and returns the report with the curve."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from speakerflow.ops.backends.models import load_causal_lm

    s = settings or WindowGRPOSettings()
    out = Path(out_dir)
    device, dtype = device_and_dtype()
    model, tokenizer = load_causal_lm(sft_adapter, dtype=dtype)  # SFT merged: the reference
    tokenizer.padding_side = "left"
    n_layers = int(getattr(model.config, "num_hidden_layers", 0))
    reward = WindowReward(tokenizer.eos_token_id, RewardConfig(w_new=s.new_weight))
    data = Dataset.from_list(grpo_rows(examples, tokenizer))
    rollout = WalkRollout(examples, tokenizer, s) if s.decoding == "extract" else None
    config = GRPOConfig(
        output_dir=str(out / "checkpoints"),
        max_steps=s.steps,
        learning_rate=s.lr,
        per_device_train_batch_size=s.group_size,
        gradient_accumulation_steps=1,
        num_generations=s.group_size,
        max_completion_length=s.max_new_tokens,
        temperature=s.temperature,
        top_p=s.top_p,
        beta=s.beta,
        epsilon=s.eps,
        loss_type="grpo",
        scale_rewards="group",
        logging_steps=1,
        save_strategy="steps" if s.save_steps else "no",
        save_steps=s.save_steps or 500,
        report_to="none",
        seed=s.seed,
        use_cpu=device == "cpu",
        bf16=str(dtype) == "torch.bfloat16",
        dataloader_pin_memory=device == "cuda",
    )
    with warnings.catch_warnings():  # TRL marks rollout_func experimental
        warnings.filterwarnings("ignore", message=".*'rollout_func'.*", category=UserWarning)
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=[reward],
            args=config,
            train_dataset=data,
            processing_class=tokenizer,
            peft_config=lora_config(s.lora_r, s.lora_alpha, 0.0, s.lora_layers, n_layers),
            rollout_func=rollout,
        )
    resume = newest_checkpoint(out / "checkpoints") if s.resume else None
    start = time.perf_counter()
    trainer.train(resume_from_checkpoint=resume)
    seconds = time.perf_counter() - start
    save_stacked(trainer.model, tokenizer, out, Path(sft_adapter))
    curve = learning_curve(trainer.state.log_history)
    (out / "curve.json").write_text(json.dumps(curve, indent=1) + "\n")
    return {
        "curve": curve,
        "steps": len(curve),
        "resumed_from": resume,
        "device": device,
        "dtype": str(dtype).removeprefix("torch."),
        "settings": s.model_dump(),
        "seconds": round(seconds, 1),
        "out_dir": str(out),
    }


#: Keys of TRL's log records kept in the curve (TRL 1.16 names).
CURVE_KEYS = {
    "reward": "reward",
    "reward_std": "reward_std",
    "rewards/speaker_levenshtein/mean": "reward_fn",
    "phi_sl": "phi_sl",
    "window_credit": "window_credit",
    "refused": "refused",
    "json_valid": "json_valid",
    "cut": "cut",
    "kl": "kl",
    "loss": "loss",
    "completions/mean_length": "completion_tokens",
}


def learning_curve(history: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per optimizer step from the trainer's log history."""
    rows = []
    for rec in history:
        if "step" not in rec or "reward" not in rec:
            continue
        row: dict[str, Any] = {"step": int(rec["step"])}
        for key, name in CURVE_KEYS.items():
            if key in rec:
                row[name] = round(float(rec[key]), 5)
        rows.append(row)
    return rows


def save_stacked(model: Any, tokenizer: Any, out: Path, sft_adapter: Path) -> None:
    """Save the GRPO adapter with a copy of the SFT adapter in ``out/sft`` as its base, so the
    folder is self-contained (``adapter_config.json`` -> ``sft`` -> ``smollm2-135m``)."""
    from .sft import save_adapter

    base = out / "sft"
    if sft_adapter.resolve() != base.resolve():
        shutil.rmtree(base, ignore_errors=True)
        shutil.copytree(
            sft_adapter,
            base,
            ignore=shutil.ignore_patterns("checkpoints", "*.partial", "sft"),
        )
    save_adapter(model, tokenizer, out, "sft")

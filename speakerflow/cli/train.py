"""``speakerflow train data|sft|grpo|calibrate-noop|calibrate-more|export-onnx``: Writer training.

See docs/training.md. Every sub-command prints its report as text (``--json``: as JSON).
``sft`` and ``grpo`` split the data by whole network with the same ``--heldout-fraction`` /
``--seed`` (so both see the same held-out networks, listed in the report)
and train only on the training side.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from speakerflow.cli import CliError
from speakerflow.cli.common import emit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train the Writer (SFT, GRPO) and export it to ONNX")
    tsub = p.add_subparsers(dest="train_command", required=True, metavar="STEP")
    for add in (
        _add_data,
        _add_sft,
        _add_grpo,
        _add_calibrate_noop,
        _add_calibrate_more,
        _add_export,
        _add_reader,
        _add_picker,
    ):
        add(tsub)


def _data_args(q: argparse.ArgumentParser) -> None:
    q.add_argument("data", help="socialmem training folder (networks + trajectories) or one file")
    q.add_argument(
        "--teacher", default=None, help="teacher folder (default: 'teacher' beside DATA)"
    )
    q.add_argument(
        "--heldout-fraction",
        type=float,
        default=0.2,
        help="share of networks held out, whole networks only (default 0.2)",
    )
    q.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    q.add_argument(
        "--min-teacher-overlap",
        type=float,
        default=0.5,
        help="refuse teacher files whose content shares fewer tokens with the chat "
        "(e.g. memory written in another language); 0 keeps all (default 0.5)",
    )


def _local_args(q: argparse.ArgumentParser) -> None:
    q.add_argument(
        "--base",
        default=None,
        help="train a LoRA adapter for the local Writer over this base (smollm2-135m, a "
        ".gguf file or a model folder) on short windows with the compact prompt",
    )
    q.add_argument("--window", type=int, default=4, help="--base: messages per window")
    q.add_argument("--lora-r", type=int, default=16, help="--base: LoRA rank (default 16)")
    q.add_argument(
        "--lora-layers",
        type=int,
        default=None,
        help="--base: adapt only the top N layers (cheaper backward on a CPU)",
    )
    q.add_argument("--save-steps", type=int, default=0, help="checkpoint every N steps (0: none)")
    q.add_argument(
        "--resume", action="store_true", help="continue from the newest checkpoint in --out"
    )
    q.add_argument(
        "--max-examples", type=int, default=None, help="--base: use the first N windows only"
    )


def _add_data(tsub: argparse._SubParsersAction) -> None:
    """``train data``: the SFT pairs as JSONL."""
    d = tsub.add_parser("data", help="write the SFT pairs (prompt, target actions) as JSONL")
    _data_args(d)
    d.add_argument(
        "--backend",
        default=None,
        help="use this Writer backend as the teacher (e.g. rules) instead of the teacher files",
    )
    d.add_argument("--out", required=True, help="output folder (train.jsonl, heldout.jsonl)")
    d.add_argument("--json", action="store_true", help="print the report as JSON instead of text")
    d.set_defaults(func=run_data)


def _add_sft(tsub: argparse._SubParsersAction) -> None:
    """``train sft``: supervised fine-tuning."""
    s = tsub.add_parser("sft", help="supervised fine-tuning with TRL's SFTTrainer")
    _data_args(s)
    _local_args(s)
    s.add_argument(
        "--model",
        default=None,
        help="model folder to start from (Hugging Face layout), or an adapter to go on training",
    )
    s.add_argument("--out", required=True, help="folder for the fine-tuned model")
    s.add_argument(
        "--backend", default=None, help="Writer backend as teacher instead of the teacher files"
    )
    s.add_argument("--steps", type=int, default=-1, help="optimizer steps (-1: use --epochs)")
    s.add_argument("--epochs", type=float, default=10.0, help="SFT epochs (default 10)")
    s.add_argument("--lr", type=float, default=1e-5, help="learning rate (default 1e-5)")
    s.add_argument(
        "--batch-size", type=int, default=1, help="examples per device batch (default 1)"
    )
    s.add_argument(
        "--max-length", type=int, default=8192, help="drop pairs longer than this (tokens)"
    )
    s.add_argument(
        "--noop-keep",
        type=float,
        default=0.25,
        help="--base: share of the NOOP-target windows kept (seeded by --seed; 1 keeps all, "
        "default 0.25): NOOP is learnt first and crowds out the actions otherwise",
    )
    s.add_argument("--json", action="store_true", help="print the report as JSON instead of text")
    s.set_defaults(func=run_sft)


def _add_grpo(tsub: argparse._SubParsersAction) -> None:
    """``train grpo``: speaker-conditioned GRPO from an SFT model."""
    g = tsub.add_parser("grpo", help="speaker-conditioned GRPO from an SFT model")
    _data_args(g)
    _local_args(g)
    g.add_argument(
        "--model",
        required=True,
        help="the SFT policy folder (with --base: the SFT adapter, merged under a new one)",
    )
    g.add_argument("--ref", default=None, help="frozen reference policy (default: --model)")
    g.add_argument("--out", required=True, help="folder for the trained policy")
    g.add_argument(
        "--steps",
        type=int,
        default=None,
        help="policy updates (default 30 rollout rounds, the paper's; --base: 20 windows)",
    )
    g.add_argument(
        "--group-size",
        type=int,
        default=None,
        help="G samples per position (default 8, the paper's; --base: 4)",
    )
    g.add_argument(
        "--lr", type=float, default=None, help="learning rate (default 1e-6; --base: 5e-5)"
    )
    g.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        help="longest completion sampled per prompt (default 2048; --base: 160)",
    )
    g.add_argument(
        "--decoding",
        choices=("free", "extract"),
        default="free",
        help="--base: sample free text (TRL's generate) or the extractive walk with sampled "
        "choices, the decoding `eval writer --backend local@extract:OUT` evaluates",
    )
    g.add_argument(
        "--max-actions", type=int, default=6, help="--base --decoding extract: actions per walk"
    )
    g.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="--base: sampling temperature of tokens (free) or choices (extract); default 0.8",
    )
    g.add_argument(
        "--new-weight",
        type=float,
        default=0.0,
        help="--base: weight of the window credit (the records the teacher wrote in the "
        "window, matched per owner) added to the return; default 0, the paper's return",
    )
    g.add_argument("--positions", type=int, default=None, help="cap writing positions per network")
    g.add_argument("--networks", default=None, help="comma-separated network ids to train on")
    g.add_argument(
        "--qa-gain",
        choices=("token_f1", "none"),
        default="token_f1",
        help="terminal QA gain judge: token_f1 (offline proxy) or none (R_QA = 0)",
    )
    g.add_argument("--qa-embedder", default="minilm", help="query-path embedder for the QA gain")
    g.add_argument("--json", action="store_true", help="print the report as JSON instead of text")
    g.set_defaults(func=run_grpo)


def _add_reader(tsub: argparse._SubParsersAction) -> None:
    """``train reader``: the answer reader's LoRA adapter (docs/training.md)."""
    r = tsub.add_parser(
        "reader", help="fine-tune the answer reader (short answers from evidence) over SmolLM2"
    )
    r.add_argument(
        "data",
        nargs="+",
        help="QA data: a LoCoMo file, a SocialMemBench folder or an answer-set folder "
        "(conversations/*.jsonl + questions.json); several may be given",
    )
    r.add_argument(
        "--heldout",
        default="",
        help="comma-separated group ids never trained on (the ones you will report on)",
    )
    r.add_argument("--base", default="smollm2-135m", help="base model spec (default smollm2-135m)")
    r.add_argument("--out", required=True, help="folder for the adapter and its report")
    r.add_argument("--epochs", type=float, default=1.0, help="passes over the pairs (default 1)")
    r.add_argument("--steps", type=int, default=-1, help="optimizer steps (-1: use --epochs)")
    r.add_argument("--lr", type=float, default=3e-4, help="learning rate (default 3e-4)")
    r.add_argument("--lora-r", type=int, default=16, help="LoRA rank (default 16)")
    r.add_argument(
        "--lora-layers", type=int, default=12, help="adapt the top N layers (default 12)"
    )
    r.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    r.add_argument("--save-steps", type=int, default=0, help="checkpoint every N steps (0: none)")
    r.add_argument(
        "--resume", action="store_true", help="continue from the newest checkpoint in --out"
    )
    r.add_argument("--json", action="store_true", help="print the report as JSON instead of text")
    r.set_defaults(func=run_reader)


def _reader_source(path: str):
    """(name, data) for one ``train reader`` DATA argument."""
    from speakerflow.benchmarks.qa_data import load_answer_set, load_qa

    p = Path(path)
    if not p.exists():
        raise CliError(f"{path}: no such file or folder")
    if p.is_dir() and (p / "questions.json").is_file():
        return p.name, load_answer_set(p)
    fmt = "locomo" if p.is_file() else "socialmem"
    try:
        return p.name, load_qa(p, fmt)
    except (ValueError, KeyError) as exc:
        raise CliError(f"{path}: not LoCoMo, SocialMemBench or an answer set ({exc})") from None


def run_reader(args: argparse.Namespace) -> int:
    from speakerflow.training.reader import READER_SFT, train_reader

    sources = [_reader_source(d) for d in args.data]
    flags = ("epochs", "lr", "seed", "lora_r", "lora_layers", "save_steps", "resume")
    settings = READER_SFT.model_copy(
        update={"max_steps": args.steps, **{f: getattr(args, f) for f in flags}}
    )
    heldout = [g.strip() for g in args.heldout.split(",") if g.strip()]
    try:
        with _quiet():
            report = train_reader(sources, heldout, args.out, args.base, settings)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    emit(report, args.json)
    return 0


def _add_picker(tsub: argparse._SubParsersAction) -> None:
    """``train picker``: the learned answer choice's weights (docs/query-path.md)."""
    k = tsub.add_parser(
        "picker", help="fit the learned answer choice (picker='learned') on answer sets"
    )
    k.add_argument(
        "sets", nargs="+", help="answer-set folders (conversations/*.jsonl + questions.json)"
    )
    k.add_argument("--out", required=True, help="the weights file to write (.json)")
    k.add_argument("--l2", type=float, default=0.01, help="L2 penalty (default 0.01)")
    k.add_argument("--json", action="store_true", help="print the report as JSON instead of text")
    k.set_defaults(func=run_picker)


def run_picker(args: argparse.Namespace) -> int:
    from speakerflow.benchmarks.picker_data import collect
    from speakerflow.training.picker import fit, split, top_is_gold

    for folder in args.sets:
        if not (Path(folder) / "questions.json").is_file():
            raise CliError(f"{folder}: not an answer set (no questions.json)")
    try:
        records = [r for folder in args.sets for r in collect(folder)]
        weights = fit(records, l2=args.l2)
    except ValueError as exc:  # a malformed answer set, or nothing to fit on
        raise CliError(str(exc)) from None
    weights["trained_on"] = [Path(f).name for f in args.sets]
    held = {}
    for name in weights["trained_on"]:  # each set scored by weights fitted on the others
        train, test = split(records, "set", {name})
        if train and test:
            held[name] = {
                "first_ranked": round(top_is_gold(test, None), 3),
                "learned": round(top_is_gold(test, fit(train, l2=args.l2)), 3),
                "questions": len(test),
            }
    Path(args.out).write_text(json.dumps(weights, indent=1))
    report = {"out": args.out, "questions": weights["questions"], "gold_chosen_held_out": held}
    emit(report, args.json)
    return 0


def _calibration_args(c: argparse.ArgumentParser) -> None:
    """What ``calibrate-noop`` and ``calibrate-more`` share: data, model, windows, sample."""
    _data_args(c)
    c.add_argument("--model", required=True, help="the local Writer's adapter or model folder")
    c.add_argument("--window", type=int, default=4, help="messages per window (default 4)")
    c.add_argument(
        "--per-kind",
        type=int,
        default=None,
        help="calibrate on a seeded sample of at most N NOOP and N action windows (default: all)",
    )


def _add_calibrate_noop(tsub: argparse._SubParsersAction) -> None:
    """``train calibrate-noop``: the local Writer's NOOP threshold."""
    c = tsub.add_parser(
        "calibrate-noop",
        help="choose the local Writer's NOOP threshold on the training windows (decoding.json)",
    )
    _calibration_args(c)
    c.add_argument("--json", action="store_true", help="print the report as JSON instead of text")
    c.set_defaults(func=run_calibrate_noop, max_examples=None)


def _add_export(tsub: argparse._SubParsersAction) -> None:
    """``train export-onnx``: ONNX export with a parity check."""
    e = tsub.add_parser(
        "export-onnx", help="export a model folder to ONNX (KV cache) and check parity"
    )
    e.add_argument("--model", required=True, help="model folder (e.g. the GRPO output)")
    e.add_argument("--out", required=True, help="folder for model.onnx + tokenizer")
    e.add_argument(
        "--prompt",
        default="Ana: let's go with Porto, it's settled.",
        help="prompt of the torch/ONNX parity check",
    )
    e.add_argument(
        "--tolerance", type=float, default=1e-3, help="largest allowed |logit difference|"
    )
    e.add_argument("--json", action="store_true", help="print the report as JSON instead of text")
    e.set_defaults(func=run_export)


def _quiet():
    """Library progress and log lines go to stderr: stdout carries only the JSON report."""
    return contextlib.redirect_stdout(sys.stderr)


def _split(args: argparse.Namespace, items: list) -> tuple[list, list]:
    """Split ``items`` with the held-out ids drawn from *every* network under DATA, so that
    ``data``, ``sft`` and ``grpo`` hold out the same networks whatever each one drops."""
    from speakerflow.training.data import load_networks, network_id_of, split_by_network

    every = sorted({n.network_id for n in load_networks(args.data, args.teacher)})
    _, held = split_by_network(
        [{"network_id": i} for i in every], heldout_fraction=args.heldout_fraction, seed=args.seed
    )
    return split_by_network(items, heldout=[network_id_of(h) for h in held])


def _writer(name: str | None):
    if name is None:
        return None
    from speakerflow.ops.write.writer.registry import make_writer

    writer = make_writer(name)
    if writer is None:
        raise CliError("--backend none writes nothing; pick a Writer backend (e.g. rules)")
    return writer


def _pairs(args: argparse.Namespace) -> tuple[list, list, list[str]]:
    """(train pairs, held-out pairs, networks whose teacher was refused)."""
    from speakerflow.training.data import build_sft_dataset, load_networks, trusted

    pairs = build_sft_dataset(
        args.data,
        args.teacher,
        backend=_writer(args.backend),
        min_teacher_overlap=args.min_teacher_overlap,
    )
    if not pairs:
        raise CliError(f"{args.data}: no writing segment found")
    refused = (
        []
        if args.backend
        else trusted(load_networks(args.data, args.teacher), args.min_teacher_overlap)[1]
    )
    return (*_split(args, pairs), refused)


def _ids(items: list) -> list[str]:
    from speakerflow.training.data import network_id_of

    return sorted({network_id_of(it) for it in items})


def run_data(args: argparse.Namespace) -> int:
    from speakerflow.training.data import write_jsonl

    train, held, refused = _pairs(args)
    out = Path(args.out)
    write_jsonl(train, out / "train.jsonl")
    write_jsonl(held, out / "heldout.jsonl")
    emit(
        {
            "train_pairs": len(train),
            "heldout_pairs": len(held),
            "train_networks": _ids(train),
            "heldout_networks": _ids(held),
            "refused_networks": refused,
            "out": str(out),
        },
        args.json,
    )
    return 0


def _windows(args: argparse.Namespace) -> tuple[list, list, list[str], dict]:
    """(train windows, held-out windows, refused networks, build report) for ``--base``."""
    from speakerflow.training.data import load_networks, trusted
    from speakerflow.training.windows import build_window_dataset

    nets = [n for n in load_networks(args.data, args.teacher) if n.has_teacher]
    train_nets, held_nets = _split(args, nets)
    train_nets, refused = trusted(train_nets, args.min_teacher_overlap)
    train, build = build_window_dataset(train_nets, args.window)
    held, _ = build_window_dataset(held_nets, args.window)
    if args.max_examples:
        train = train[: args.max_examples]
    if not train:
        raise CliError(f"{args.data}: no training window")
    return train, held, refused, build


def run_sft(args: argparse.Namespace) -> int:
    from speakerflow.training.sft import SFTSettings, train_sft

    if (args.base is None) == (args.model is None):
        raise CliError("train sft: give --model FOLDER (full model) or --base MODEL (LoRA)")
    build = None
    if args.base:
        from speakerflow.training.windows import thin_noop

        train, held, refused, build = _windows(args)
        train, build["noop_dropped"] = thin_noop(train, args.noop_keep, args.seed)
        build["sft_windows"] = len(train)
    else:
        train, held, refused = _pairs(args)
    settings = SFTSettings(
        max_steps=args.steps,
        epochs=args.epochs,
        lr=args.lr,
        batch_size=args.batch_size,
        max_length=args.max_length,
        seed=args.seed,
        lora_r=args.lora_r if args.base else 0,
        lora_layers=args.lora_layers,
        save_steps=args.save_steps,
        resume=args.resume,
    )
    with _quiet():
        report = train_sft(args.base or args.model, train, args.out, settings)
    report.update(train_networks=_ids(train), heldout_networks=_ids(held), refused_networks=refused)
    if build is not None:
        report["windows"] = build
    emit(report, args.json)
    return 0


def run_grpo_windows(args: argparse.Namespace) -> int:
    """``train grpo --base ...``: TRL GRPO of the local Writer's adapter on windows."""
    from speakerflow.training.grpo_windows import WindowGRPOSettings, train_grpo_windows

    train, held, refused, build = _windows(args)
    if args.networks:
        wanted = {x.strip() for x in args.networks.split(",") if x.strip()}
        train = [ex for ex in train if ex["network_id"] in wanted]
        if not train:
            raise CliError(f"--networks: no training window in {sorted(wanted)}")
    given = {
        "steps": args.steps,
        "group_size": args.group_size,
        "lr": args.lr,
        "max_new_tokens": args.max_new_tokens,
        "temperature": args.temperature,
    }
    settings = WindowGRPOSettings(
        **{k: v for k, v in given.items() if v is not None},
        lora_r=args.lora_r,
        lora_layers=args.lora_layers,
        save_steps=args.save_steps,
        resume=args.resume,
        seed=args.seed,
        decoding=args.decoding,
        max_actions=args.max_actions,
        new_weight=args.new_weight,
    )
    with _quiet():
        report = train_grpo_windows(args.model, train, args.out, settings)
    report.update(
        train_networks=_ids(train),
        heldout_networks=_ids(held),
        refused_networks=refused,
        windows=build,
    )
    emit(report, args.json)
    return 0


def run_grpo(args: argparse.Namespace) -> int:
    from speakerflow.training.data import load_networks, trusted
    from speakerflow.training.grpo import GRPOSettings, train_grpo

    if args.base:
        return run_grpo_windows(args)

    nets = [n for n in load_networks(args.data, args.teacher) if n.has_teacher]
    train, held = _split(args, nets)
    train, refused = trusted(train, args.min_teacher_overlap)
    if args.networks:
        wanted = {x.strip() for x in args.networks.split(",") if x.strip()}
        unknown = wanted - {n.network_id for n in nets}
        if unknown:
            raise CliError(
                f"--networks: unknown network id(s) {sorted(unknown)}; known: {_ids(nets)}"
            )
        if wanted & set(_ids(held)):
            raise CliError(
                f"--networks: {sorted(wanted & set(_ids(held)))} are held out; "
                "change --heldout-fraction/--seed or pick training networks"
            )
        train = [n for n in train if n.network_id in wanted]
    settings = GRPOSettings(
        steps=args.steps or 30,
        group_size=args.group_size or 8,
        lr=args.lr or 1e-6,
        max_new_tokens=args.max_new_tokens or 2048,
        positions=args.positions,
        seed=args.seed,
    )
    qa_gain = None
    if args.qa_gain != "none":
        from speakerflow.training.qa_gain import QAGainConfig, StoreQAGain

        qa_gain = StoreQAGain.from_folder(
            train, QAGainConfig(embedder=args.qa_embedder, judge=args.qa_gain)
        )
    with _quiet():
        report = train_grpo(
            args.model, train, args.out, settings, ref_dir=args.ref, qa_gain=qa_gain
        )
    report.update(train_networks=_ids(train), heldout_networks=_ids(held), refused_networks=refused)
    emit(report, args.json)
    return 0


def _add_calibrate_more(tsub: argparse._SubParsersAction) -> None:
    """``train calibrate-more``: the extract Writer's preference for another action."""
    c = tsub.add_parser(
        "calibrate-more",
        help="choose the structured/extract Writer's more_bias on the training windows "
        "(actions per window as the teacher's; decoding.json)",
    )
    _calibration_args(c)
    c.add_argument(
        "--biases", default="0,1,2,3,4", help="candidate biases, comma-separated (default 0..4)"
    )
    c.add_argument("--json", action="store_true", help="print the report as JSON instead of text")
    c.set_defaults(func=run_calibrate_more, max_examples=None)


def run_calibrate_more(args: argparse.Namespace) -> int:
    """``train calibrate-more``: ``more_bias`` of ``--model`` from the training windows only."""
    from speakerflow.training.more_gate import calibrate_more
    from speakerflow.training.noop_gate import per_kind_sample

    try:
        biases = [float(x) for x in args.biases.split(",") if x.strip()]
    except ValueError:
        raise CliError(f"--biases: numbers separated by commas, got {args.biases!r}") from None
    train, held, _, _ = _windows(args)
    try:
        sample = per_kind_sample(train, args.per_kind, args.seed)
        with _quiet():
            report = calibrate_more(args.model, sample, _ids(train), biases)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    report["heldout_networks"] = _ids(held)
    emit(report, args.json)
    return 0


def run_calibrate_noop(args: argparse.Namespace) -> int:
    """``train calibrate-noop``: the NOOP gate of ``--model`` from the training windows only."""
    from speakerflow.training.noop_gate import calibrate_folder, per_kind_sample

    train, held, _, _ = _windows(args)
    try:
        sample = per_kind_sample(train, args.per_kind, args.seed)
        with _quiet():
            report = calibrate_folder(args.model, sample, _ids(train))
    except ValueError as exc:
        raise CliError(str(exc)) from None
    report["heldout_networks"] = _ids(held)
    emit(report, args.json)
    return 0


def run_export(args: argparse.Namespace) -> int:
    from speakerflow.training.onnx_export import export_onnx, onnx_parity

    with _quiet():
        out = export_onnx(args.model, args.out)
        parity = onnx_parity(args.model, out, args.prompt)
    ok = parity.max_abs_logit_diff <= args.tolerance and parity.greedy_match
    emit(
        {
            "out": str(out),
            "max_abs_logit_diff": parity.max_abs_logit_diff,
            "greedy_match": parity.greedy_match,
            "tolerance": args.tolerance,
            "ok": ok,
        },
        args.json,
    )
    return 0 if ok else 1

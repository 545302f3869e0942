"""``speakerflow ingest PATH [--format auto|jsonl|locomo|socialmem|events] [--writer ...]``.

Loads a file (or folder) into per-group stores, then runs the SpeakerMem write path
(:func:`speakerflow.pipelines.write_path.write_group`) on each ingested group: derived
records from the messages not written before (``--writer none`` skips it).
"""

from __future__ import annotations

import argparse
import os
import warnings
from typing import Any

from tqdm import tqdm

from speakerflow.ops.loaders import FORMATS, detect_format, load
from speakerflow.ops.write.writer.registry import WRITER_KINDS, make_writer
from speakerflow.pipelines.write_path import write_group
from speakerflow.settings import setting

from . import CliError
from .common import add_home, add_json, home_of, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="ingest messages or events into per-group stores")
    p.add_argument("path", help="a file, or a folder of files")
    p.add_argument(
        "--format",
        default="auto",
        choices=["auto", "jsonl", "locomo", "socialmem", "events"],
        help="input format (docs/formats.md; default auto: told from the first record's keys)",
    )
    p.add_argument("--group", default=None, help="group id (JSONL without group_id; or override)")
    p.add_argument(
        "--writer",
        default="rules",
        choices=list(WRITER_KINDS),
        help="Writer backend for derived records (default: rules, offline; none: verbatim only)",
    )
    p.add_argument(
        "--model",
        default=None,
        help="chat writers: model name (openai) or model folder (transformers/onnx); local: a "
        "LoRA adapter, a base (smollm2-135m, a .gguf) or an ONNX export (default: the shipped "
        "adapter)",
    )
    p.add_argument(
        "--decoding",
        default=None,
        choices=["free", "structured", "extract"],
        help="local writer: free (generate, repair the JSON), structured (the model chooses "
        "where the contract leaves a choice) or extract (structured, contents chosen among the "
        "window's sentences); default: the model folder's decoding.json, else free",
    )
    p.add_argument(
        "--base-url", default=None, help="openai writer: base URL of an OpenAI-compatible endpoint"
    )
    p.add_argument(
        "--device",
        default=None,
        choices=["auto", "cpu", "cuda"],
        help="transformers/onnx writer: device",
    )
    p.add_argument(
        "--window", type=int, default=25, help="messages per Writer segment (default 25)"
    )
    p.add_argument(
        "--embedder",
        default=setting("ingest_embedder"),
        choices=["minilm", "hashing", "none"],
        help="embed the new messages now, so no question pays for it (default minilm, or "
        "$SPEAKERFLOW_INGEST_EMBEDDER; none: ingest stays model-free and the first dense "
        "question embeds the group)",
    )
    p.add_argument(
        "--domain",
        default=None,
        metavar="PACK",
        help="domain pack the groups' knowledge is read with (a pack file or folder, or a "
        "bundled name: trading, itops; docs/custom-domains.md); recorded per group for "
        "maintain, inject and the Dagster assets (default: the group's, else trading)",
    )
    add_json(p, "the ingest summary")
    add_home(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    extra = {"decoding": args.decoding} if args.decoding else {}
    if extra and args.writer != "local":
        raise CliError("--decoding is for --writer local")
    pack, loaded, notes = _load(args)
    if not args.json:
        for note in notes:
            print(f"note: {note}")
    home = home_of(args)
    backend = make_writer(
        args.writer, model=args.model, base_url=args.base_url, device=args.device, **extra
    )
    total_added, total_skipped, reports = _ingest_groups(loaded, home, backend, pack, args)
    embedded = _embed([gid for gid, _ in loaded], home, args)
    partitions, partition_note = _register_partitions([gid for gid, _ in loaded])
    if args.json:
        print_json(
            {
                "home": str(home.root),
                "groups": [gid for gid, _ in loaded],
                "ingested": total_added,
                "already_stored": total_skipped,
                "notes": notes,
                "writer": None if backend is None else _writer_totals(args.writer, reports),
                "domain": pack.name if pack is not None else None,
                "embedded": embedded,
                "dagster_partitions_added": partitions,
                "dagster_note": partition_note,
            }
        )
        return 0
    print(
        f"ingested {total_added} new message(s) into {len(loaded)} group(s) "
        f"({total_skipped} already stored) under {home.root}"
    )
    if partition_note:
        print(partition_note)
    if pack is not None:
        print(f"domain pack {pack.name!r} recorded for {len(loaded)} group(s)")
    if embedded is not None:
        print(
            f"embedder {args.embedder}: {embedded} message(s) have vectors (new ones embedded now)"
        )
    if backend is not None:
        _print_writer(args.writer, reports)
    return 0


def _load(args: argparse.Namespace) -> tuple[Any, list, list[str]]:
    """The domain pack (None without ``--domain``), the loaded ``(group, table)`` pairs and
    the notes to show (the detected format, the loaders' warnings). Everything is read and
    validated here, before any write; ``args.format`` becomes the detected format."""
    FORMATS  # noqa: B018 - formats register on import of the loaders
    pack = None
    if args.domain:  # a malformed pack stops the ingest before anything is read or written
        from speakerflow.ops.knowledge.domain.load import load_pack

        pack = load_pack(args.domain)
    detected = args.format == "auto"
    if detected:
        args.format = detect_format(args.path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load(
            args.path, args.format, group=args.group
        )  # everything validated before any write
    notes = [f"format {args.format} (detected)"] if detected else []
    notes += [str(w.message) for w in caught]
    return pack, loaded, notes


def _ingest_groups(
    loaded: list, home, backend, pack, args: argparse.Namespace
) -> tuple[int, int, list]:
    """Append each group's messages to its store, record the domain pack, and run the write
    path when there is a Writer. Returns the messages added, those already stored, and the
    Writer's reports (one a group)."""
    total_added = total_skipped = 0
    reports = []
    for gid, table in tqdm(loaded, desc="ingest", unit="group", disable=len(loaded) < 2):
        with home.open(gid, writable=True) as store:
            result = store.append_messages(table)
            if pack is not None:
                from speakerflow.ops.knowledge.domain.load import record_pack

                record_pack(store, pack)
            if backend is not None:
                reports.append(
                    write_group(
                        store,
                        backend,
                        window=args.window,
                        progress=len(loaded) < 2 and not args.json,
                    )
                )
        total_added += result.added
        total_skipped += result.skipped
    return total_added, total_skipped, reports


def _writer_totals(kind: str, reports: list) -> dict[str, Any]:
    """The Writer's totals over the groups, for ``--json``."""
    return {
        "kind": kind,
        "accepted": sum(r.accepted for r in reports),
        "updates": sum(r.updates for r in reports),
        "rejected": sum(r.rejected for r in reports),
        "model_calls": sum(r.model_calls for r in reports),
        "tokens": sum(r.tokens for r in reports),
        "seconds": round(sum(r.seconds for r in reports), 2),
        "messages_per_s": _rate(reports),
    }


def _print_writer(kind: str, reports: list) -> None:
    """The Writer's totals over the groups, and the first reject of each group with any."""
    written = sum(r.accepted for r in reports)
    print(
        f"writer {kind}: {written} derived record(s) ({sum(r.updates for r in reports)} "
        "updates), "
        f"{sum(r.rejected for r in reports)} rejected, {sum(r.model_calls for r in reports)} "
        "model call(s), "
        f"{sum(r.tokens for r in reports)} tokens, {sum(r.seconds for r in reports):.1f}s, "
        f"{_rate(reports)} messages/s"
    )
    for r in reports:
        if r.rejected:
            print(f"  {r.group_id}: {r.rejected} rejected, e.g. {r.rejects[0]['reason']}")


def _rate(reports: list) -> float:
    """Messages the Writer wrote per second of write path (Writer >> Validate >> Upsert)."""
    seconds = sum(r.seconds for r in reports)
    return round(sum(r.messages for r in reports) / seconds, 2) if seconds else 0.0


def _embed(groups: list[str], home, args: argparse.Namespace) -> int | None:
    """Embed the messages of ``groups`` that have no cached vector yet (incremental: the
    group's cache keeps earlier ones), with the dense windows and the ANN index the query
    path reads, and the derived records the Writer just wrote (else the first question
    embeds them: 576 records of a LoCoMo conversation, 85 s at load 14). Returns the number
    of messages with a vector, None when nothing is embedded (``--embedder none``, or an
    events file: facts, not messages)."""
    if args.embedder == "none" or args.format == "events" or not groups:
        return None
    from speakerflow.ops.query.recall import warm_message_embeddings
    from speakerflow.ops.query.record_view import warm_record_embeddings
    from speakerflow.ops.text.embed import shared_embedder

    embedder = shared_embedder(args.embedder)
    embedded = 0
    for gid in tqdm(groups, desc="embed", unit="group", disable=len(groups) < 2 or args.json):
        with home.open(gid) as store:
            embedded += warm_message_embeddings(store, embedder)
            warm_record_embeddings(store, embedder)
    return embedded


def _register_partitions(groups: list[str]) -> tuple[list[str], str | None]:
    """With ``DAGSTER_HOME`` set, the ingested groups become partitions of the Dagster
    instance there, so the UI shows the groups the CLI wrote (docs/dagster.md). Returns
    the groups added and a line to print (None: nothing to say)."""
    if not os.environ.get("DAGSTER_HOME", "").strip():
        return [], None  # no instance to tell (and no Dagster import on the plain CLI path)
    from speakerflow.assets.partitions import dagster_home, register_groups

    if dagster_home() is None:
        return [], None
    try:
        new = register_groups(groups)
    except Exception as exc:  # noqa: BLE001 - the ingest itself succeeded; say why the UI lags
        return [], (
            f"note: could not add the groups as Dagster partitions in {dagster_home()}: {exc} "
            "(the inbox sensor adds them on its next tick)"
        )
    if not new:
        return [], None
    return new, (
        f"dagster: added {len(new)} group(s) as partitions in {dagster_home()}: "
        f"{', '.join(new[:10])}" + (" ..." if len(new) > 10 else "")
    )

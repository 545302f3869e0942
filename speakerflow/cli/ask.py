"""``speakerflow ask GROUP "question" [--json]``: answer from a group's memory, with cited
messages."""

from __future__ import annotations

import argparse

from .common import add_home, home_of, loading, print_json, skip_pandas_probe


def add_query_options(p: argparse.ArgumentParser) -> None:
    """Flags shared by ``ask`` and ``demo``: answer backend and embedder."""
    p.add_argument(
        "--backend",
        default="rules",
        help="rules (default), or a chat backend: openai, transformers, onnx",
    )
    p.add_argument(
        "--model", default=None, help="chat backends: model name (openai) or model folder (local)"
    )
    p.add_argument(
        "--base-url", default=None, help="openai backend: base URL of an OpenAI-compatible endpoint"
    )
    p.add_argument(
        "--embedder",
        default="minilm",
        choices=["minilm", "hashing", "none"],
        help="dense recall embedder (default minilm; none = BM25 channels only)",
    )
    add_reader_option(p)


def add_reader_option(p: argparse.ArgumentParser) -> None:
    """``--reader [SPEC]``: a short answer written by a local reader model (rules backend)."""
    p.add_argument(
        "--reader",
        nargs="?",
        const="smollm2-reader",
        default=None,
        help="rules backend: a local model writes the answer in a few words from the evidence, "
        "the extractive line kept as its quote (no SPEC: the shipped SmolLM2 reader adapter; "
        "or a model spec / adapter folder from `speakerflow train reader`)",
    )


def query_setup(args: argparse.Namespace):
    """(QueryConfig, chat backend or None) from the shared flags; secrets come from the
    environment."""
    from speakerflow.ops.query.answer_config import AnswerConfig
    from speakerflow.pipelines.query_path import QueryConfig

    chat = None
    if args.backend != "rules":
        from speakerflow.ops.backends.factory import make_backend

        cfg = {k: v for k, v in {"model": args.model, "base_url": args.base_url}.items() if v}
        chat = make_backend(args.backend, **cfg)
    answer = AnswerConfig(reader=getattr(args, "reader", None))
    return QueryConfig(
        embedder=args.embedder, backend="chat" if chat else "rules", answer=answer
    ), chat


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ask", help="answer a question from a group's memory, citing messages")
    p.add_argument("group", help="group id (see speakerflow stats)")
    p.add_argument("question", help="the question, in quotes")
    p.add_argument("--json", action="store_true", help="print JSON (answer, projection, evidence)")
    add_query_options(p)
    add_home(p)
    p.set_defaults(func=run)


def print_result(result, by_id: dict[str, dict]) -> None:
    """Human-readable answer, projection and cited messages."""
    proj = result.projection
    print(f"A: {result.answer}")
    if result.said:
        print(f"   said on {result.said} (the answer is the day meant)")
    if result.quote:
        print(f"   from: {result.quote}")
    extra = f", owner={proj.owner}, source={proj.source}" if proj.owner else ""
    as_of = f", as_of={proj.as_of:%Y-%m-%d}" if proj.as_of else ""
    print(
        f"   projection: issue={proj.issue!r}, rows={proj.rows}, tense={proj.tense}{extra}{as_of}"
    )
    print(f"   evidence ({result.tokens} context tokens, {result.latency_ms:.1f} ms):")
    for mid in result.cited_ids(10):
        m = by_id.get(mid)
        if m is not None:
            print(f"   [{mid}] {m['ts']:%Y-%m-%d %H:%M} {m['speaker']}: {m['text']}")


def warm_up(store, config, group: str) -> None:
    """Load the embedder, saying so on stderr with the time it took, and embed what has no
    vector yet (messages after an ingest with ``--embedder none``, records written by an
    ingest before records were embedded at ingest), saying so too: the first dense
    question pays for it once."""
    import sys
    import time

    from speakerflow.ops.query.recall import unembedded_messages, warm_message_embeddings
    from speakerflow.ops.query.record_view import warm_record_embeddings
    from speakerflow.ops.text.embed_cache import cached_ids
    from speakerflow.pipelines.query_path import embedder_for

    embedder = embedder_for(config)
    if embedder is None:
        return
    missing = unembedded_messages(store, embedder)
    have = cached_ids(store, embedder, "records")
    records = sum(1 for i in store.records()["entry_id"].to_pylist() if i not in have)
    if not missing and not records and hasattr(embedder, "threads"):
        # MiniLM on onnxruntime: a question and its evidence are small encodes, so one
        # one-thread model session serves them all (not a second, many-thread one to load)
        embedder.threads = 1
    with loading(f"the embedder {embedder.name}"):
        embedder.encode(["warm up"])
    if not missing and not records:
        return
    what = [f"{missing} message(s) of {group!r} and their windows"] if missing else []
    what += [f"{records} record(s)" + ("" if missing else f" of {group!r}")] if records else []
    print(
        f"embedding {' and '.join(what)} with {embedder.name} first (once; `speakerflow "
        "ingest` does it at ingest unless --embedder none) ...",
        file=sys.stderr,
        flush=True,
    )
    start = time.perf_counter()
    if missing:
        warm_message_embeddings(store, embedder)
    if records:
        warm_record_embeddings(store, embedder)
    print(f"embedded in {time.perf_counter() - start:.1f}s", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    skip_pandas_probe()
    from speakerflow.memory import message_rows
    from speakerflow.pipelines.query_path import answer_question

    config, chat = query_setup(args)
    with home_of(args).open(args.group) as store:
        warm_up(store, config, args.group)
        result = answer_question(store, args.question, config, chat=chat)
        by_id = message_rows(store)
    if args.json:
        print_json(
            {
                **result.to_dict(),
                "cited": [
                    {k: by_id[m][k] for k in ("msg_id", "speaker", "ts", "session_id", "text")}
                    for m in result.cited_ids()
                    if m in by_id
                ],
            }
        )
        return 0
    print(f"Q: {args.question}")
    print_result(result, by_id)
    return 0

"""``speakerflow serve``: the memory as an HTTP API (FastAPI + uvicorn).

Endpoints (OpenAPI at ``/docs``; every ``/v1`` path needs ``Authorization: Bearer KEY``):

=======  ==================================  =============================================
GET      ``/healthz``                         liveness and what is warm (no key needed)
POST     ``/mcp``                             the MCP tools (streamable HTTP), per-group keys
GET      ``/v1/groups``                       the groups this key may use that have a store
POST     ``/v1/groups/{group}/messages``      a JSON list of messages (docs/formats.md)
POST     ``/v1/groups/{group}/ask``           ``{"question": ...}`` -> answer, cited ids, evidence
GET      ``/v1/groups/{group}/search``        ``?q=&speaker=&k=``: BM25 over messages
GET      ``/v1/groups/{group}/memory``        ``?owner=&layer=&history=``: derived records
POST     ``/v1/groups/{group}/inject``        ``{"event": {...}, "user": ...}``: working context
GET      ``/v1/groups/{group}/stats``         message, speaker, session and record counts
GET      ``/v1/groups/{group}/wiki``          the wiki audit pages (``{file name: Markdown}``)
POST     ``/v1/groups/{group}/forget``        ``{"speaker"|"message_ids"|"all", "dry_run"}``
POST     ``/v1/groups/{group}/maintain``      ``{"now", "seed"}``: entity path + maintenance tick
GET      ``/v1/groups/{group}/status``        the background write (state, progress) and counts
=======  ==================================  =============================================

Messages are appended (Parquet + Kuzu + Tantivy) before the response; the Writer and the
embeddings of the new rows run afterwards on a background queue
(:class:`~speakerflow.server.write_queue.WriteQueue`), one job per group at a time,
different groups in parallel. Every read answers from the group's read snapshot (its last
complete write) without waiting for a write.

One process (``--workers 1``, the default) holds every group's store open in one
:class:`~speakerflow.memory.Memory` (its single-writer lock held), so models, indexes and
caches are warm between requests. ``--workers N`` runs N reader processes on the port and
one writer process behind them (:mod:`speakerflow.server.workers`): the writer owns the
stores and publishes each new read snapshot to disk (:mod:`speakerflow.server.replica`),
the readers serve reads from the latest published snapshot and forward writes.

Modules: :mod:`~speakerflow.server.access` (keys and the guard), :mod:`~.app` (routes),
:mod:`~.models` (bodies), :mod:`~.write_queue`, :mod:`~.overhead` (a benchmark),
:mod:`~.replica`, :mod:`~.workers`.
"""

from __future__ import annotations

from typing import Literal

from speakerflow.memory import Memory

from .access import KEYS_ENV, PUBLIC_PATHS, Access, ConfigError, Guard, is_loopback
from .app import DEFAULT_MAX_BODY, DEFAULT_MAX_MESSAGES, create_app
from .write_queue import WriteQueue

__all__ = [
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_MESSAGES",
    "KEYS_ENV",
    "PUBLIC_PATHS",
    "Access",
    "ConfigError",
    "Guard",
    "WriteQueue",
    "create_app",
    "is_loopback",
    "serve",
]


def serve(
    home: str | None,
    host: str = "127.0.0.1",
    port: int = 8750,
    no_auth: bool = False,
    embedder: str = "minilm",
    writer: str = "rules",
    max_body: int = DEFAULT_MAX_BODY,
    writers: int = 2,
    log_level: str = "info",
    torch_threads: int | None = 1,
    max_open: int = 64,
    reads: Literal["snapshot", "locked"] = "snapshot",
    batch_queries: bool = True,
    ask_threads: int = 32,
    write_nice: int = 10,
    workers: int = 1,
) -> None:
    """Run the server until interrupted: one process (``workers=1``: it holds every group's
    writer lock), or ``workers`` reader processes and one writer process
    (:func:`speakerflow.server.workers.run_workers`)."""
    _check_options(host, no_auth, reads, workers)
    access = Access.from_env(open_access=no_auth)
    keys = "no auth (loopback)" if no_auth else f"{len(access.keys)} key(s)"
    if workers > 1:
        from .workers import ServeOptions, run_workers

        opts = ServeOptions(
            home=home,
            host=host,
            port=port,
            embedder=embedder,
            writer=writer,
            max_body=max_body,
            writers=writers,
            log_level=log_level,
            torch_threads=torch_threads,
            max_open=max_open,
            batch_queries=batch_queries,
            ask_threads=ask_threads,
            write_nice=write_nice,
        )
        run_workers(opts, access, workers, keys)
        return
    memory = Memory(
        home=home,
        embedder=embedder,
        writer=writer,
        max_open=max_open,
        snapshot_reads=reads == "snapshot",
        batch_queries=batch_queries,
    )
    _serve_one(
        memory,
        access,
        keys,
        host=host,
        port=port,
        log_level=log_level,
        max_body=max_body,
        writers=writers,
        torch_threads=torch_threads,
        ask_threads=ask_threads,
        write_nice=write_nice,
    )


def _check_options(host: str, no_auth: bool, reads: str, workers: int) -> None:
    """A :class:`ConfigError` for options that do not go together."""
    if no_auth and not is_loopback(host):
        raise ConfigError(
            "--no-auth is only allowed on a loopback host (127.0.0.1, ::1, localhost), not "
            f"{host!r}"
        )
    if workers < 1:
        raise ConfigError(f"--workers must be at least 1, not {workers}")
    if workers > 1 and reads != "snapshot":
        raise ConfigError("--workers above 1 serves reads from snapshots; --reads locked needs 1")


def _serve_one(
    memory: Memory,
    access: Access,
    keys: str,
    host: str,
    port: int,
    log_level: str,
    max_body: int,
    writers: int,
    torch_threads: int | None,
    ask_threads: int,
    write_nice: int,
) -> None:
    """Serve ``memory`` from this one process (``keys``: how requests are let in, for the
    start line) until interrupted."""
    import uvicorn

    url = f"http://{host}:{port}"
    app = create_app(
        memory,
        access,
        max_body=max_body,
        writers=writers,
        torch_threads=torch_threads,
        host=host,
        ask_threads=ask_threads,
        write_nice=write_nice,
        on_ready=lambda: print(f"speakerflow serve: ready on {url}", flush=True),
    )
    print(
        f"speakerflow serve: home {memory.home.root}, {url} (docs at /docs), {keys}, 1 process",
        flush=True,
    )
    # idle connections are kept 75 s (uvicorn's default is 5 s, the same as httpx's pool
    # expiry: a client reusing a connection just as the server closes it gets a ReadError on
    # a POST, seen once in a 60 s run of 32 clients)
    uvicorn.run(app, host=host, port=port, log_level=log_level, workers=1, timeout_keep_alive=75)

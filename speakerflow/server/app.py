"""The FastAPI app: the read routes every server process has, the write routes of the process
that owns the writes, the error handlers and the guard (:mod:`speakerflow.server.access`).

Responses are rendered to JSON bytes by pydantic-core (:func:`json_response`) instead of
FastAPI's ``jsonable_encoder`` + ``json.dumps``; quick routes (``/status``, ``/healthz``)
run on the event loop, the others in worker threads (asks under their own limiter).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC
from typing import Annotated, Any, Literal

import anyio
from fastapi import Body, Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic_core import to_json
from starlette.exceptions import HTTPException as StarletteHTTPException

from speakerflow import __version__
from speakerflow.graphs import GroupBusyError
from speakerflow.memory import GroupNotFoundError, Memory, Warmth, warm_up
from speakerflow.schemas import LAYERS

from .access import Access, Guard, error_body
from .models import (
    CITED_FIELDS,
    MESSAGE_EXAMPLE,
    AskIn,
    AskOut,
    ForgetIn,
    IngestOut,
    InjectIn,
    MaintainIn,
)
from .write_queue import WriteQueue

log = logging.getLogger("speakerflow.server")

DEFAULT_MAX_BODY = 8 * 1024 * 1024
DEFAULT_MAX_MESSAGES = 10_000

BEARER = HTTPBearer(auto_error=False, description="an API key from SPEAKERFLOW_API_KEYS")


class SnapshotUnavailableError(RuntimeError):
    """A reader process has no published snapshot of the group yet (or the writer is
    rewriting it after a forget): answered 503, retry shortly."""


def set_embedder_threads(memory: Memory, threads: int | None) -> None:
    """Intra-op threads of the process embedder's many-text calls (``None``: the runtime's
    default): MiniLM on onnxruntime, or torch's for the torch model."""
    if not threads or memory.embedder is None:
        return
    inner = getattr(memory.embedder, "inner", memory.embedder)
    if hasattr(inner, "threads"):  # MiniLM on onnxruntime: its many-text session
        inner.threads = threads
    elif memory.config.embedder.startswith("minilm"):
        import torch

        torch.set_num_threads(threads)


def _key(_: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]) -> None:
    """The Guard middleware has checked the key; this only documents it in OpenAPI."""


def json_response(obj: Any, status: int = 200) -> Response:
    """``obj`` as a JSON response, rendered by pydantic-core in one pass (dates, pydantic
    models, plain values; no ``jsonable_encoder`` walk first: the per-route CPU is in
    docs/serving.md, "The framework's share of a request")."""
    return Response(to_json(obj), status_code=status, media_type="application/json")


def base_app(
    memory: Memory,
    access: Access,
    warmth: Warmth,
    lifespan: Callable,
    max_body: int = DEFAULT_MAX_BODY,
) -> FastAPI:
    """The app with the error handlers, the guard and ``/healthz`` (no group routes)."""
    app = FastAPI(
        title="speakerflow",
        version=__version__,
        lifespan=lifespan,
        description="Long-term memory for multi-party conversations: ingest messages, ask with "
        "cited messages, search, derived records, working contexts. Every /v1 path "
        "needs `Authorization: Bearer KEY`; a key only reaches its own groups.",
    )
    app.state.memory = memory
    app.state.warmth = warmth

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException):
        kind = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(
            exc.status_code, "http"
        )
        resp = json_response(error_body(exc.status_code, kind, str(exc.detail)), exc.status_code)
        resp.headers.update(exc.headers or {})
        return resp

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        message = f"{where}: {first.get('msg', 'invalid request')}"
        return json_response(error_body(422, "invalid_request", message), 422)

    def handler(status: int, kind: str):
        async def reply(_: Request, exc: Exception):
            if status == 500:
                log.error("unhandled error", exc_info=exc)
            message = str(exc) if status != 500 else f"{type(exc).__name__}: {exc}"
            return json_response(error_body(status, kind, message), status)

        return reply

    for exc_type, code, kind in (
        (GroupNotFoundError, 404, "not_found"),
        (GroupBusyError, 409, "busy"),
        (PermissionError, 409, "read_only"),
        (SnapshotUnavailableError, 503, "unavailable"),
        (ValueError, 400, "bad_request"),
        (Exception, 500, "internal"),
    ):
        app.add_exception_handler(exc_type, handler(code, kind))
    app.add_middleware(Guard, access=access, max_body=max_body)

    @app.get("/healthz", tags=["meta"])
    async def healthz() -> Response:
        """Liveness, and what this process has warm (the first request pays for nothing
        listed here)."""
        emb = memory.embedder
        return json_response(
            {
                "status": "ok",
                "version": __version__,
                "pid": os.getpid(),
                "embedder": emb.name if emb is not None else None,
                **warmth.as_dict(),
            }
        )

    return app


def _answer(memory: Memory, group: str, question: str, start: float) -> Response:
    """One ask, rendered to JSON here (in the worker thread: the event loop only moves
    bytes)."""
    slot_wait = time.perf_counter() - start
    result, cited = memory.ask_cited(group, question)
    # every value below is already of its AskOut type (the query path's own records):
    # built without validating it again, rendered straight to JSON
    body = AskOut.model_construct(
        question=result.question,
        answer=result.answer,
        said=result.said,
        cited_ids=result.cited_ids(),
        cited=[m.model_dump(mode="json", include=CITED_FIELDS) for m in cited],
        evidence=[e.model_dump(mode="json") for e in result.evidence],
        projection=result.projection.model_dump(mode="json"),
        context_tokens=result.tokens,
        latency_ms=round(result.latency_ms, 2),
        answer_ms=round(result.answer_ms, 2),
        server_ms=round((time.perf_counter() - start) * 1000, 2),
        wait_ms=round(slot_wait * 1000 + result.stats.get("group_wait_ms", 0.0), 2),
    )
    return Response(body.model_dump_json(), media_type="application/json")


def add_read_routes(app: FastAPI, memory: Memory, ask_threads: int = 32) -> None:
    """``/v1/groups``, ``ask``, ``search``, ``memory``, ``inject``, ``stats``, ``wiki``:
    every read answers from the group's read snapshot (its last complete write), never
    waiting for a write."""
    deps = [Depends(_key)]
    ask_limiter = anyio.CapacityLimiter(ask_threads)

    @app.get("/v1/groups", dependencies=deps, tags=["groups"])
    def groups(request: Request) -> Response:
        grant = request.scope["state"]["grant"]
        return json_response({"groups": [g for g in memory.groups() if Access.allows(grant, g)]})

    @app.post("/v1/groups/{group}/ask", dependencies=deps, tags=["groups"], response_model=AskOut)
    async def ask(group: str, body: AskIn) -> Response:
        """Answer from the group's memory with the messages the answer rests on."""
        # at most ask_threads asks run at once (the rest wait here, without a thread): CPU-bound
        # threads beyond that only slow the event loop and each other down
        return await anyio.to_thread.run_sync(
            _answer, memory, group, body.question, time.perf_counter(), limiter=ask_limiter
        )

    @app.get("/v1/groups/{group}/search", dependencies=deps, tags=["groups"])
    def search(
        group: str,
        q: str = Query(min_length=1, max_length=2000),
        speaker: str | None = None,
        k: int = Query(10, ge=1, le=200),
    ) -> Response:
        """BM25 over the group's messages (optionally one speaker's)."""
        return json_response({"hits": memory.search(group, q, speaker, k)})

    _add_record_reads(app, memory, deps)


def _add_record_reads(app: FastAPI, memory: Memory, deps: list) -> None:
    """The reads of what the group's memory derived: ``memory``, ``inject``, ``stats`` and
    ``wiki``."""

    @app.get("/v1/groups/{group}/memory", dependencies=deps, tags=["groups"])
    def records(
        group: str,
        owner: str | None = None,
        layer: Literal[LAYERS] | None = None,  # type: ignore[valid-type]
        history: bool = False,
    ) -> Response:
        """Derived records: current heads, or with ``history=true`` whole update chains."""
        if history:
            return json_response({"chains": memory.history(group, owner, layer)})
        return json_response({"records": memory.memory(group, owner, layer)})

    @app.post("/v1/groups/{group}/inject", dependencies=deps, tags=["groups"])
    def inject(group: str, body: InjectIn) -> Response:
        """The working context passive injection builds for one event (InKH)."""
        wc = memory.inject(group, body.event, user=body.user, budget=body.budget, hops=body.hops)
        return json_response({**wc.as_dict(), "text": wc.text()})

    @app.get("/v1/groups/{group}/stats", dependencies=deps, tags=["groups"])
    def stats(group: str) -> Response:
        """Counts of messages, speakers, sessions and records."""
        return json_response({"group": group, **memory.stats(group)})

    @app.get("/v1/groups/{group}/wiki", dependencies=deps, tags=["groups"])
    def wiki(group: str) -> Response:
        """The wiki audit pages (entities, the group page), ``{"pages": {name: Markdown}}``."""
        return json_response({"group": group, "pages": memory.wiki(group)})


def _forget(memory: Memory, publisher: Any, group: str, body: ForgetIn) -> Response:
    """Run the forget ``body`` asks for, with the group retracted from the reader
    processes meanwhile (``publisher``, when there is one); its report."""
    folder = memory.home.group_path(group)
    retracted = publisher is not None and not body.dry_run and publisher.retract(folder)
    try:  # the reader processes stop serving the group until its new snapshot is published
        report = memory.forget(
            group,
            speaker=body.speaker,
            message_ids=body.message_ids,
            everything=body.all,
            dry_run=body.dry_run,
            rederive=body.rederive,
        )
    except BaseException:
        if retracted:
            try:  # a new snapshot if the forget got as far as dropping the old one
                memory.snapshot(group)
            finally:
                publisher.restore(folder)  # else the old one again
        raise
    if not body.dry_run:
        memory.snapshot(group)  # the new snapshot now (the writer process publishes it)
    return json_response(report.as_dict())


def add_write_routes(
    app: FastAPI,
    memory: Memory,
    queue: WriteQueue,
    max_messages: int = DEFAULT_MAX_MESSAGES,
    publisher: Any = None,
) -> None:
    """``messages`` (append now, Writer on the background queue), ``forget``, ``maintain``
    and ``status``: the routes of the process that owns the group's writes."""
    deps = [Depends(_key)]

    @app.post(
        "/v1/groups/{group}/messages", dependencies=deps, tags=["groups"], response_model=IngestOut
    )
    def add_messages(
        group: str, messages: Annotated[list[dict[str, Any]], Body(examples=[MESSAGE_EXAMPLE])]
    ) -> Response:
        """Append messages (JSONL message format as a JSON list; ``group_id`` may be left
        out). Idempotent by ``msg_id``. The Writer and embeddings run after the response:
        see ``/status``."""
        if len(messages) > max_messages:
            raise HTTPException(
                413, f"{len(messages)} messages in one request; at most {max_messages}"
            )
        queued = memory.writer != "none"
        # reads keep answering from the group's last complete snapshot until the queued write lands
        result = memory.append(group, messages, pending_write=queued)
        state = queue.submit(group, result.ingested) if result.ingested and queued else "skipped"
        return json_response(
            {
                "ingested": result.ingested,
                "already_stored": result.already_stored,
                "new_speakers": result.new_speakers,
                "write": state,
            }
        )

    @app.post("/v1/groups/{group}/forget", dependencies=deps, tags=["groups"])
    def forget(group: str, body: ForgetIn) -> Response:
        """Remove a speaker's messages, some messages, or all, from every copy of the group
        (cascading to derived records and facts); an audit line without content is kept."""
        return _forget(memory, publisher, group, body)

    @app.post("/v1/groups/{group}/maintain", dependencies=deps, tags=["groups"])
    def maintain(group: str, body: MaintainIn) -> Response:
        """The entity path over the group's new messages and events, then one maintenance
        tick (what ``speakerflow maintain --group`` does): its report. Runs now, under the
        group's lock, and publishes the group's new snapshot before it answers."""
        now = body.now
        if now is not None and now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        return json_response(memory.maintain(group, now=now, seed=body.seed))

    @app.get("/v1/groups/{group}/status", dependencies=deps, tags=["groups"])
    async def status(group: str) -> Response:
        """The group's background write (``state``: queued, running, idle or failed; the
        running write's ``progress``; the last error) and the counts of its read snapshot.
        Never waits for the write."""
        snap = memory.current_snapshot(group)
        write = queue.status(group)
        if snap is None and write["state"] == "idle" and not memory.exists(group):
            raise GroupNotFoundError(f"group {group!r} has no store yet; add messages first")
        return json_response(
            {"group": group, "write": write, "stats": snap.stats() if snap is not None else None}
        )


def create_app(
    memory: Memory,
    access: Access,
    max_body: int = DEFAULT_MAX_BODY,
    max_messages: int = DEFAULT_MAX_MESSAGES,
    writers: int = 2,
    warm: bool = True,
    coalesce: float = 1.0,
    torch_threads: int | None = 1,
    mcp: bool = True,
    host: str = "127.0.0.1",
    ask_threads: int = 32,
    write_nice: int = 10,
    role: str = "server",
    say: Callable[[str], None] | None = None,
    on_ready: Callable[[], None] | None = None,
    publisher: Any = None,
) -> FastAPI:
    """The whole API over ``memory`` (closed when the app shuts down): reads, writes on a
    background :class:`WriteQueue`, and the MCP tools at ``/mcp``.

    ``torch_threads``: intra-op threads for the embedder (default 1: a server runs many
    requests side by side; measured on 2 busy cores, 8 messages encode in ~115 ms with one
    thread against ~1.3 s with two); with MiniLM on onnxruntime it is the intra-op threads
    of its many-text session (questions and small batches already run on one). ``None``
    leaves the runtime's default. ``warm``: load what the first requests need before the
    app starts serving (:func:`~speakerflow.memory.warm_up`; ``/healthz`` says what).
    ``mcp``: also serve the MCP tools at ``/mcp`` (streamable HTTP, stateless; each tool
    call checks the key against the group it names); ``host`` is where the server listens
    (for the MCP transport's DNS-rebinding protection on loopback). ``ask_threads``: asks
    answered at once (the others wait for a slot; their questions are encoded together,
    see :class:`~speakerflow.memory.BatchingEmbedder`). ``write_nice``: nice value added to
    the background write threads (default 10; 0 = same priority as asks). ``role`` is what
    ``/healthz`` calls this process (``server``, or ``writer`` behind reader processes);
    ``say``: where the warm-up's lines go (default: stderr); ``on_ready``: called once warm,
    before the first request is served. ``publisher``: the writer process's
    :class:`~speakerflow.server.replica.SnapshotPublisher` (its readers stop serving a group
    while it is forgotten)."""
    memory.snapshot_knowledge = True  # inject reads the snapshot's knowledge, without a lock
    queue = WriteQueue(memory, workers=writers, coalesce=coalesce, nice=write_nice)
    warmth = Warmth(role=role)
    mcp_server = None
    if mcp:
        from speakerflow.mcp_server import build_server

        mcp_server = build_server(memory, access)
        mcp_routes = mcp_server.streamable_http_app(
            streamable_http_path="/mcp",
            stateless_http=True,
            json_response=True,
            max_request_body_size=max_body,
            host=host,
        ).routes

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        set_embedder_threads(memory, torch_threads)
        if warm:
            warm_up(memory, warmth, say=say)
        else:
            warmth.ready = True
        if on_ready is not None:
            on_ready()
        async with AsyncExitStack() as stack:
            if mcp_server is not None:
                await stack.enter_async_context(mcp_server.session_manager.run())
            yield
        queue.close()
        memory.close()

    app = base_app(memory, access, warmth, lifespan, max_body=max_body)
    app.state.queue = queue
    add_read_routes(app, memory, ask_threads=ask_threads)
    add_write_routes(app, memory, queue, max_messages=max_messages, publisher=publisher)
    if mcp_server is not None:
        app.router.routes.extend(mcp_routes)
    return app

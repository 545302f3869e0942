"""``speakerflow serve``: the memory as an HTTP API (FastAPI + uvicorn), one process per home.

Endpoints (OpenAPI at ``/docs``; every ``/v1`` path needs ``Authorization: Bearer KEY``):

=======  ==================================  =============================================
GET      ``/healthz``                         liveness (no key needed)
POST     ``/mcp``                             the MCP tools (streamable HTTP), per-group keys as
below
GET      ``/v1/groups``                       the groups this key may use that have a store
POST     ``/v1/groups/{group}/messages``      a JSON list of messages (docs/formats.md)
POST     ``/v1/groups/{group}/ask``           ``{"question": ...}`` -> answer, cited ids, evidence
GET      ``/v1/groups/{group}/search``        ``?q=&speaker=&k=``: BM25 over messages
GET      ``/v1/groups/{group}/memory``        ``?owner=&layer=&history=``: derived records
POST     ``/v1/groups/{group}/inject``        ``{"event": {...}, "user": ...}``: working context
POST     ``/v1/groups/{group}/forget``        ``{"speaker"|"message_ids"|"all", "dry_run"}``
GET      ``/v1/groups/{group}/status``        the group's background write queue and counts
=======  ==================================  =============================================

Messages are appended (Parquet + Kuzu + Tantivy) before the response; the Writer and the
embeddings of the new rows run afterwards on a background queue (:class:`WriteQueue`), one
job per group at a time, different groups in parallel. Every group's store stays open in
one :class:`~speakerflow.memory.Memory` (its single-writer lock held by this process), so
models, indexes and caches are warm between requests.

Access (:class:`Access`): ``SPEAKERFLOW_API_KEYS`` is a JSON object mapping each key to the
groups it may use (``["*"]``: all). One ASGI guard in front of every route answers 401
without a valid key, 400 for a group name that is not a plain folder name (``..``,
slashes, encoded tricks), 403 for a group the key is not given, 413 for a body over the
limit, before any handler runs. ``--no-auth`` is refused unless the host is loopback.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Annotated, Any, Literal
from urllib.parse import unquote

import anyio
from fastapi import Body, Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from speakerflow import __version__
from speakerflow.graphs.store import GROUP_ID, GroupBusyError
from speakerflow.memory import GroupNotFoundError, Memory
from speakerflow.schemas import LAYERS

log = logging.getLogger("speakerflow.server")

KEYS_ENV = "SPEAKERFLOW_API_KEYS"
DEFAULT_MAX_BODY = 8 * 1024 * 1024
DEFAULT_MAX_MESSAGES = 10_000


#: Paths served without a key (everything else, unknown paths included, needs one).
PUBLIC_PATHS = frozenset({"/healthz", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"})


class ConfigError(ValueError):
    """The server cannot start as configured (keys, host); the message says why."""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# -- access ------------------------------------------------------------------------------
class Access:
    """Which key may use which groups. ``keys``: key -> list of group ids (``"*"``: all);
    ``None`` with ``open_access`` (``--no-auth``): every request may use every group."""

    def __init__(self, keys: dict[str, list[str]] | None, open_access: bool = False):
        self.open_access = open_access
        self.keys: dict[str, frozenset[str]] = {}
        for key, groups in (keys or {}).items():
            if not isinstance(key, str) or len(key) < 8:
                raise ConfigError(
                    f"{KEYS_ENV}: every key must be a string of at least 8 characters"
                )
            if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
                raise ConfigError(
                    f'{KEYS_ENV}: the value of each key must be a list of group ids or ["*"]'
                )
            for g in groups:
                if g != "*" and not GROUP_ID.match(g):
                    raise ConfigError(f"{KEYS_ENV}: {g!r} is not a valid group id")
            self.keys[key] = frozenset(groups)
        if not self.keys and not open_access:
            raise ConfigError(
                f"no API keys: set {KEYS_ENV} to a JSON object mapping each key to its groups, "
                'e.g. {"k-team-0123": ["team"], "k-admin-4567": ["*"]}, or run with --no-auth on '
                "127.0.0.1"
            )

    @classmethod
    def from_env(cls, open_access: bool = False) -> Access:
        raw = os.environ.get(KEYS_ENV)
        if not raw:
            return cls(None, open_access)
        try:
            keys = json.loads(raw)
        except ValueError as exc:
            raise ConfigError(f"{KEYS_ENV} is not valid JSON: {exc}") from None
        if not isinstance(keys, dict):
            raise ConfigError(f"{KEYS_ENV} must be a JSON object (key -> list of groups)")
        return cls(keys, open_access)

    def grant(self, authorization: str | None) -> frozenset[str] | None:
        """The groups a request with this ``Authorization`` header may use; ``None``: no
        valid key (every key is compared, in constant time)."""
        if self.open_access:
            return frozenset({"*"})
        if not authorization or not authorization.lower().startswith("bearer "):
            return None
        given = authorization[7:].strip().encode()
        found = None
        for key, groups in self.keys.items():
            if hmac.compare_digest(key.encode(), given):
                found = groups
        return found

    @staticmethod
    def allows(grant: frozenset[str], group: str) -> bool:
        return "*" in grant or group in grant


def _hostname(host: str) -> str:
    """``127.0.0.1:8750`` -> ``127.0.0.1``; ``[::1]:8750`` -> ``::1``."""
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _error(status: int, kind: str, message: str) -> dict:
    return {"error": kind, "status": status, "message": message}


class Guard:
    """ASGI middleware in front of every route: authentication (401; every path but
    :data:`PUBLIC_PATHS`), group names (400), group access (403) and body size (413),
    answered as JSON before the app runs."""

    def __init__(self, app, access: Access, max_body: int):
        self.app = app
        self.access = access
        self.max_body = max_body

    async def _reply(
        self, send, status: int, kind: str, message: str, headers: list | None = None
    ) -> None:
        body = json.dumps(_error(status, kind, message)).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    *(headers or []),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        raw = scope.get("raw_path") or scope["path"].encode()
        raw_path = raw.split(b"?", 1)[0].decode("latin-1")
        path = scope["path"]
        if raw_path in PUBLIC_PATHS and path in PUBLIC_PATHS:
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.access.open_access and not is_loopback(_hostname(headers.get("host", ""))):
            # --no-auth: only for this machine; a page that rebinds a DNS name to 127.0.0.1 sends
            # its own Host
            return await self._reply(
                send,
                403,
                "forbidden_host",
                "without API keys (--no-auth) only requests to a loopback host name are served",
            )
        grant = self.access.grant(headers.get("authorization"))
        if grant is None:
            return await self._reply(
                send,
                401,
                "unauthorized",
                "missing or unknown API key: send 'Authorization: Bearer KEY'",
                [(b"www-authenticate", b"Bearer")],
            )
        scope.setdefault("state", {})["grant"] = grant
        parts = raw_path.split("/")
        decoded = path.split("/")
        if (len(parts) > 2 and parts[2] == "groups") or (
            len(decoded) > 2 and decoded[2] == "groups"
        ):
            names = {
                unquote(parts[3]) if len(parts) > 3 else "",
                decoded[3] if len(decoded) > 3 else "",
            }
            names.discard("")
            if (len(parts) > 3 or len(decoded) > 3) and (
                len(names) != 1 or not all(GROUP_ID.match(n) for n in names)
            ):
                shown = (
                    unquote(parts[3])
                    if len(parts) > 3
                    else (decoded[3] if len(decoded) > 3 else "")
                )
                return await self._reply(
                    send,
                    400,
                    "bad_group",
                    f"invalid group id {shown!r}: use letters, digits, '.', '_' or '-' "
                    "(max 128), starting with a letter or digit",
                )
            if names and not Access.allows(grant, next(iter(names))):
                return await self._reply(
                    send, 403, "forbidden", f"this key may not use group {next(iter(names))!r}"
                )
        if scope["method"] in ("POST", "PUT", "PATCH"):
            length = headers.get("content-length")
            if length is not None and (not length.isdigit() or int(length) > self.max_body):
                return await self._reply(
                    send, 413, "too_large", f"request body over {self.max_body} bytes"
                )
            chunks, size = [], 0
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_body:
                    return await self._reply(
                        send, 413, "too_large", f"request body over {self.max_body} bytes"
                    )
                chunks.append(chunk)
                if not message.get("more_body"):
                    break
            body, sent = b"".join(chunks), False

            async def replay():
                nonlocal sent
                if sent:
                    return await receive()
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}

            return await self.app(scope, replay, send)
        return await self.app(scope, receive, send)


# -- the background write queue ----------------------------------------------------------
def lower_thread_priority(nice: int) -> None:
    """Raise the calling thread's nice value by ``nice`` (Linux, where the nice value is per
    thread; elsewhere nothing, since there it would apply to the whole process)."""
    if nice > 0 and sys.platform.startswith("linux"):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), os.nice(0) + nice)


class WriteQueue:
    """Runs :meth:`Memory.write` (Writer + embeddings) after appends: at most one job per
    group at a time (appends while it runs make it run once more), groups in parallel on
    ``workers`` threads, run at ``nice`` (Linux: those threads only, so asks get the cores
    first; threads the stores start from them inherit it). A job starts ``coalesce`` seconds
    after it is queued, so a burst of appends to a group is written (and embedded) in one
    run; a rerun (appends arrived while it ran) waits at least as long as the run took, so
    under a steady stream of appends the Writer holds a group about half the time at most
    and reads get the rest."""

    def __init__(self, memory: Memory, workers: int = 2, coalesce: float = 1.0, nice: int = 10):
        self.memory = memory
        self.coalesce = coalesce
        self.pool = ThreadPoolExecutor(
            max_workers=workers,
            thread_name_prefix="speakerflow-write",
            initializer=lower_thread_priority,
            initargs=(nice,),
        )
        self._state: dict[str, dict[str, Any]] = {}
        self._timers: set[threading.Timer] = set()
        self._closed = False
        self._lock = threading.Condition()

    def _entry(self, group: str) -> dict[str, Any]:
        return self._state.setdefault(
            group,
            {
                "state": "idle",
                "pending_messages": 0,
                "writes": 0,
                "again": False,
                "last_write": None,
                "last_write_at": None,
                "last_error": None,
            },
        )

    def _schedule(self, group: str, delay: float | None = None) -> None:
        """Start the group's job after ``delay`` (default ``coalesce``) seconds (call with
        the lock held)."""
        if self._closed:
            return
        delay = self.coalesce if delay is None else delay
        if delay <= 0:
            self.pool.submit(self._run, group)
            return

        def fire() -> None:
            with self._lock:
                self._timers.discard(timer)
                if self._closed:
                    return
                self.pool.submit(self._run, group)

        timer = threading.Timer(delay, fire)
        timer.daemon = True
        self._timers.add(timer)
        timer.start()

    def submit(self, group: str, new_messages: int) -> Literal["queued", "running"]:
        """Queue a write of ``group``; returns the state it is now in (queued/running)."""
        with self._lock:
            st = self._entry(group)
            st["pending_messages"] += new_messages
            if st["state"] == "running":
                st["again"] = True
                return "running"
            if st["state"] == "queued":
                return "queued"
            st["state"] = "queued"
            self._schedule(group)
        return "queued"

    def _run(self, group: str) -> None:
        with self._lock:
            st = self._entry(group)
            st.update(state="running", again=False, pending_messages=0)
        report, error = None, None
        started = time.monotonic()
        try:
            report = self.memory.write(group)
        except Exception as exc:  # noqa: BLE001 - reported on the status endpoint and the log
            error = f"{type(exc).__name__}: {exc}"
            log.exception("background write of group %r failed", group)
        with self._lock:
            st["writes"] += 1
            st["last_write_at"] = time.time()
            st["last_error"] = error
            if report is not None:
                st["last_write"] = {
                    "summary": report.summary(),
                    "accepted": report.accepted,
                    "rejected": report.rejected,
                    "messages": report.messages,
                    "seconds": round(report.seconds, 3),
                }
            if st["again"] and not self._closed:
                st["state"] = "queued"
                # the Writer holds the group at most about half the time under a steady stream
                self._schedule(
                    group,
                    max(self.coalesce, time.monotonic() - started) if self.coalesce > 0 else 0,
                )
            else:
                st["state"] = "idle"
            self._lock.notify_all()

    def status(self, group: str) -> dict[str, Any]:
        with self._lock:
            st = dict(self._entry(group))
        st.pop("again", None)
        return st

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Block until no group has a queued or running write (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while any(s["state"] != "idle" for s in self._state.values()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
        return True

    def close(self) -> None:
        """Run the writes already queued, then stop (appends after this are not written
        until the next start: the write path picks up unwritten messages then)."""
        with self._lock:
            timers = list(self._timers)
        for t in timers:  # queued jobs run now instead of after their delay
            t.cancel()
        with self._lock:
            self._closed = True
            pending = [g for g, s in self._state.items() if s["state"] == "queued"]
            self._timers.clear()
        for g in pending:
            self.pool.submit(self._run, g)
        self.pool.shutdown(wait=True)


# -- request and response bodies ---------------------------------------------------------
class AskIn(BaseModel):
    question: str = Field(min_length=1, max_length=4000)


class InjectIn(BaseModel):
    event: dict[str, Any] | str = Field(
        description='{"content": "...", "ts"?: ISO time, "source"?: user}, or text'
    )
    user: str | None = Field(default=None, description="the user whose private overlay applies")
    budget: int = Field(default=600, ge=1, le=20_000)
    hops: int = Field(default=2, ge=1, le=3)


class ForgetIn(BaseModel):
    speaker: str | None = Field(default=None, description="forget everything this person said")
    message_ids: list[str] | None = Field(
        default=None, max_length=10_000, description="forget these messages"
    )
    all: bool = Field(default=False, description="forget every message of the group")
    dry_run: bool = Field(default=False, description="report what would be removed; change nothing")
    rederive: Literal["auto", "all", "affected"] = Field(
        default="auto",
        description="all: write every record again from what remains; affected: only records "
        "resting on the forgotten messages; auto: all where the rules Writer wrote the group",
    )


class IngestOut(BaseModel):
    ingested: int
    already_stored: int
    new_speakers: list[str]
    write: Literal["queued", "running", "skipped"]


#: the fields of each cited message an ask returns
CITED_FIELDS: set[str] = {"msg_id", "speaker", "ts", "session_id", "text"}


class AskOut(BaseModel):
    question: str
    answer: str
    cited_ids: list[str]
    cited: list[dict[str, Any]]
    evidence: list[dict[str, Any]]
    projection: dict[str, Any]
    context_tokens: int
    latency_ms: float = Field(description="query path (projection, retrieval, composition)")
    answer_ms: float
    server_ms: float = Field(description="the whole request inside the server, waiting included")
    wait_ms: float = Field(
        description="of server_ms, waiting for an ask slot (--ask-threads) and for the group "
        "(a read snapshot being taken)"
    )


MESSAGE_EXAMPLE = [
    {
        "msg_id": "s2-t05",
        "session_id": "s2",
        "ts": "2026-03-06T14:15:00Z",
        "speaker": "Ana",
        "text": "Great, it's settled: the offsite will be in Porto, 12 to 14 May.",
    }
]


# -- the app -----------------------------------------------------------------------------
BEARER = HTTPBearer(auto_error=False, description="an API key from SPEAKERFLOW_API_KEYS")


def _key(_: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]) -> None:
    """The Guard middleware has checked the key; this only documents it in OpenAPI."""


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
) -> FastAPI:
    """The FastAPI app over ``memory`` (closed when the app shuts down).

    ``torch_threads``: intra-op threads for the embedder (default 1: a server runs many
    requests side by side; measured on 2 busy cores, 8 messages encode in ~115 ms with one
    thread against ~1.3 s with two); with MiniLM on onnxruntime it is the intra-op threads
    of its many-text session (questions and small batches already run on one). ``None``
    leaves the runtime's default. ``mcp``: also serve
    the MCP tools at ``/mcp`` (streamable HTTP, stateless; each tool call checks the key
    against the group it names); ``host`` is where the server listens (for the MCP
    transport's DNS-rebinding protection on loopback). ``ask_threads``: asks answered at
    once (the others wait for a slot; their questions are encoded together, see
    :class:`~speakerflow.memory.BatchingEmbedder`). ``write_nice``: nice value added to the
    background write threads (default 10; 0 = same priority as asks)."""
    queue = WriteQueue(memory, workers=writers, coalesce=coalesce, nice=write_nice)
    ask_limiter = anyio.CapacityLimiter(ask_threads)
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
        if torch_threads and memory.embedder is not None:
            inner = getattr(memory.embedder, "inner", memory.embedder)
            if hasattr(inner, "threads"):  # MiniLM on onnxruntime: its many-text session
                inner.threads = torch_threads
            elif memory.config.embedder.startswith("minilm"):
                import torch

                torch.set_num_threads(torch_threads)
        if warm and memory.embedder is not None:
            memory.embedder.encode(["warm up"])  # load the model before the first request
        async with AsyncExitStack() as stack:
            if mcp_server is not None:
                await stack.enter_async_context(mcp_server.session_manager.run())
            yield
        queue.close()
        memory.close()

    app = FastAPI(
        title="speakerflow",
        version=__version__,
        lifespan=lifespan,
        description="Long-term memory for multi-party conversations: ingest messages, ask with "
        "cited messages, search, derived records, working contexts. Every /v1 path "
        "needs `Authorization: Bearer KEY`; a key only reaches its own groups.",
    )
    app.state.memory = memory
    app.state.queue = queue

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException):
        kind = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(
            exc.status_code, "http"
        )
        return JSONResponse(
            _error(exc.status_code, kind, str(exc.detail)),
            status_code=exc.status_code,
            headers=exc.headers,
        )

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return JSONResponse(
            _error(422, "invalid_request", f"{where}: {first.get('msg', 'invalid request')}"),
            status_code=422,
        )

    def handler(status: int, kind: str):
        async def reply(_: Request, exc: Exception):
            if status == 500:
                log.error("unhandled error", exc_info=exc)
            message = str(exc) if status != 500 else f"{type(exc).__name__}: {exc}"
            return JSONResponse(_error(status, kind, message), status_code=status)

        return reply

    for exc_type, code, kind in (
        (GroupNotFoundError, 404, "not_found"),
        (GroupBusyError, 409, "busy"),
        (PermissionError, 409, "read_only"),
        (ValueError, 400, "bad_request"),
        (Exception, 500, "internal"),
    ):
        app.add_exception_handler(exc_type, handler(code, kind))
    app.add_middleware(Guard, access=access, max_body=max_body)
    if mcp_server is not None:
        app.router.routes.extend(mcp_routes)

    deps = [Depends(_key)]

    @app.get("/healthz", tags=["meta"])
    def healthz() -> dict[str, Any]:
        emb = memory.embedder
        return {
            "status": "ok",
            "version": __version__,
            "embedder": emb.name if emb is not None else None,
        }

    @app.get("/v1/groups", dependencies=deps, tags=["groups"])
    def groups(request: Request) -> dict[str, list[str]]:
        grant = request.scope["state"]["grant"]
        return {"groups": [g for g in memory.groups() if Access.allows(grant, g)]}

    @app.post(
        "/v1/groups/{group}/messages", dependencies=deps, tags=["groups"], response_model=IngestOut
    )
    def add_messages(
        group: str, messages: Annotated[list[dict[str, Any]], Body(examples=[MESSAGE_EXAMPLE])]
    ) -> IngestOut:
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
        state: Any = (
            queue.submit(group, result.ingested) if result.ingested and queued else "skipped"
        )
        return IngestOut(
            ingested=result.ingested,
            already_stored=result.already_stored,
            new_speakers=result.new_speakers,
            write=state,
        )

    def answer(group: str, question: str, start: float) -> Response:
        """One ask, its response validated and rendered to JSON here (in the worker thread:
        the event loop only moves bytes)."""
        slot_wait = time.perf_counter() - start
        result, cited = memory.ask_cited(group, question)
        # every value below is already of its AskOut type (the query path's own records):
        # built without validating it again, rendered straight to JSON
        body = AskOut.model_construct(
            question=result.question,
            answer=result.answer,
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

    @app.post("/v1/groups/{group}/ask", dependencies=deps, tags=["groups"], response_model=AskOut)
    async def ask(group: str, body: AskIn) -> Response:
        """Answer from the group's memory with the messages the answer rests on."""
        # at most ask_threads asks run at once (the rest wait here, without a thread): CPU-bound
        # threads beyond that only slow the event loop and each other down
        return await anyio.to_thread.run_sync(
            answer, group, body.question, time.perf_counter(), limiter=ask_limiter
        )

    @app.get("/v1/groups/{group}/search", dependencies=deps, tags=["groups"])
    def search(
        group: str,
        q: str = Query(min_length=1, max_length=2000),
        speaker: str | None = None,
        k: int = Query(10, ge=1, le=200),
    ) -> dict[str, Any]:
        """BM25 over the group's messages (optionally one speaker's)."""
        return {"hits": [h.model_dump(mode="json") for h in memory.search(group, q, speaker, k)]}

    @app.get("/v1/groups/{group}/memory", dependencies=deps, tags=["groups"])
    def records(
        group: str,
        owner: str | None = None,
        layer: Literal[LAYERS] | None = None,  # type: ignore[valid-type]
        history: bool = False,
    ) -> dict[str, Any]:
        """Derived records: current heads, or with ``history=true`` whole update chains."""
        if history:
            return {
                "chains": [
                    [r.model_dump(mode="json") for r in c]
                    for c in memory.history(group, owner, layer)
                ]
            }
        return {"records": [r.model_dump(mode="json") for r in memory.memory(group, owner, layer)]}

    @app.post("/v1/groups/{group}/inject", dependencies=deps, tags=["groups"])
    def inject(group: str, body: InjectIn) -> dict[str, Any]:
        """The working context passive injection builds for one event (InKH)."""
        wc = memory.inject(group, body.event, user=body.user, budget=body.budget, hops=body.hops)
        return {**wc.as_dict(), "text": wc.text()}

    @app.post("/v1/groups/{group}/forget", dependencies=deps, tags=["groups"])
    def forget(group: str, body: ForgetIn) -> dict[str, Any]:
        """Remove a speaker's messages, some messages, or all, from every copy of the group
        (cascading to derived records and facts); an audit line without content is kept."""
        report = memory.forget(
            group,
            speaker=body.speaker,
            message_ids=body.message_ids,
            everything=body.all,
            dry_run=body.dry_run,
            rederive=body.rederive,
        )
        return report.as_dict()

    @app.get("/v1/groups/{group}/status", dependencies=deps, tags=["groups"])
    def status(group: str) -> dict[str, Any]:
        """The group's background write queue and store counts."""
        stats = memory.stats(group) if memory.exists(group) else None
        return {"group": group, "write": queue.status(group), "stats": stats}

    return app


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
) -> None:
    """Run the server until interrupted (one process: it holds every group's writer lock)."""
    import uvicorn

    if no_auth and not is_loopback(host):
        raise ConfigError(
            "--no-auth is only allowed on a loopback host (127.0.0.1, ::1, localhost), not "
            f"{host!r}"
        )
    access = Access.from_env(open_access=no_auth)
    memory = Memory(
        home=home,
        embedder=embedder,
        writer=writer,
        max_open=max_open,
        snapshot_reads=reads == "snapshot",
        batch_queries=batch_queries,
    )
    app = create_app(
        memory,
        access,
        max_body=max_body,
        writers=writers,
        torch_threads=torch_threads,
        host=host,
        ask_threads=ask_threads,
        write_nice=write_nice,
    )
    print(
        f"speakerflow serve: home {memory.home.root}, http://{host}:{port} (docs at /docs), "
        f"{'no auth (loopback)' if no_auth else f'{len(access.keys)} key(s)'}",
        flush=True,
    )
    # idle connections are kept 75 s (uvicorn's default is 5 s, the same as httpx's pool
    # expiry: a client reusing a connection just as the server closes it gets a ReadError on
    # a POST, seen once in a 60 s run of 32 clients)
    uvicorn.run(app, host=host, port=port, log_level=log_level, workers=1, timeout_keep_alive=75)

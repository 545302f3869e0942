"""``speakerflow serve --workers N``: N reader processes on the port, one writer process
behind them.

- The **writer process** owns the home: every group's store (its single-writer lock; Kuzu
  allows one process per database file), the background write queue, the MCP tools. It
  serves the whole API on a Unix socket in a private folder, not on the network, and
  publishes each group's new read snapshot to disk (:class:`~.replica.SnapshotPublisher`).
- Each **reader process** listens on the public port itself (``SO_REUSEPORT``: the kernel
  spreads new connections over the listening readers; a reader listens only once warm) and
  answers ``ask``, ``search``, ``memory``, ``inject``, ``stats``, ``wiki`` and ``/v1/groups``
  from the latest
  published snapshot (:class:`~.replica.ReplicaMemory`); it forwards ``messages``,
  ``forget``, ``maintain``, ``status`` and ``/mcp`` to the writer as they came (the writer
  checks the key again).
- The **supervisor** (the ``speakerflow serve`` process) starts the writer, waits until it
  is warm, starts the readers, prints ``ready`` once all are warm, and on SIGINT/SIGTERM
  stops the readers, then the writer (which runs the writes already queued). A child that
  exits on its own stops the server (exit status 1); a child whose supervisor is gone
  stops itself.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any, cast

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.middleware import Middleware

from speakerflow.memory import Warmth, warm_up

from .access import Access, ConfigError, error_body
from .app import add_read_routes, add_write_routes, base_app, json_response, set_embedder_threads

#: request and response headers a proxy does not pass on (RFC 9110 hop-by-hop, and the
#: ones the forwarding connection sets itself)
HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "date",
        "server",
    }
)
#: the read routes of a group a reader forwards when the writer reads the group itself
READ_ROUTES = frozenset({"ask", "search", "memory", "inject", "stats", "wiki"})
#: the routes a reader forwards to the writer process
FORWARDED = (
    ("/v1/groups/{group}/messages", ["POST"]),
    ("/v1/groups/{group}/forget", ["POST"]),
    ("/v1/groups/{group}/maintain", ["POST"]),
    ("/v1/groups/{group}/status", ["GET"]),
    ("/mcp", ["GET", "POST", "DELETE"]),
)


@dataclass(frozen=True)
class ServeOptions:
    """The ``serve`` settings every child process needs (picklable: children are spawned)."""

    home: str | None
    host: str
    port: int
    embedder: str
    writer: str
    max_body: int
    writers: int
    log_level: str
    torch_threads: int | None
    max_open: int
    batch_queries: bool
    ask_threads: int
    write_nice: int


# -- the reader's app --------------------------------------------------------------------
def create_reader_app(
    replica: Any,
    access: Access,
    writer_socket: str,
    max_body: int,
    torch_threads: int | None = 1,
    ask_threads: int = 32,
    warm: bool = True,
    say: Any = None,
    on_ready: Any = None,
) -> FastAPI:
    """The app of a reader process: the read routes over ``replica`` (a
    :class:`~.replica.ReplicaMemory`), the write routes forwarded to the writer process on
    the Unix socket ``writer_socket``. Its OpenAPI is the whole API's."""
    import httpx

    warmth = Warmth(role="reader")
    client: dict[str, httpx.AsyncClient] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        set_embedder_threads(replica, torch_threads)
        if warm:
            warm_up(replica, warmth, say=say, groups=replica.published_groups())
        else:
            warmth.ready = True
        replica.start()
        client["writer"] = httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(uds=writer_socket),
            base_url="http://speakerflow-writer",
            timeout=httpx.Timeout(600.0, connect=10.0),
        )
        if on_ready is not None:
            on_ready()
        yield
        await client["writer"].aclose()
        replica.close()

    app = base_app(replica, access, warmth, lifespan, max_body=max_body)
    add_read_routes(app, replica, ask_threads=ask_threads)

    async def forward(request: Request) -> Response:
        # the Host header goes along (the writer's guard and MCP check it, as this reader's did)
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP_HEADERS]
        try:
            r = await client["writer"].request(
                request.method,
                request.url.path,
                params=request.query_params,
                content=await request.body(),
                headers=headers,
            )
        except httpx.HTTPError as exc:
            message = f"the writer process did not answer ({type(exc).__name__})"
            return json_response(error_body(502, "writer_unavailable", message), 502)
        kept = {k: v for k, v in r.headers.items() if k.lower() not in HOP_HEADERS}
        return Response(r.content, status_code=r.status_code, headers=kept)

    for path, methods in FORWARDED:
        app.add_api_route(path, forward, methods=methods, include_in_schema=False)
    # inside the guard (appended: the guard stays the outermost middleware)
    app.user_middleware.append(Middleware(ForwardedGroups, replica=replica, forward=forward))
    doc = FastAPI(title=app.title, version=app.version, description=app.description)
    add_read_routes(doc, cast(Any, None))  # the routes' declarations only: never called
    add_write_routes(doc, cast(Any, None), cast(Any, None))
    app.openapi = doc.openapi  # type: ignore[method-assign]
    return app


class ForwardedGroups:
    """ASGI middleware of a reader (inside the guard): the reads of a group the writer
    process reads itself (past the ANN threshold, where no snapshot is published) are
    forwarded to it as they came."""

    def __init__(self, app: Any, replica: Any, forward: Any):
        self.app, self.replica, self.forward = app, replica, forward

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            parts = scope["path"].split("/")
            if (
                len(parts) == 5
                and parts[1:3] == ["v1", "groups"]
                and parts[4] in READ_ROUTES
                and self.replica.forwarded(parts[3])
            ):
                response = await self.forward(Request(scope, receive))
                return await response(scope, receive, send)
        return await self.app(scope, receive, send)


# -- the child processes -----------------------------------------------------------------
def _orphan_watch() -> None:
    """Stop this child (gracefully, SIGTERM) if its supervisor goes away."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="speakerflow-orphan-watch", daemon=True).start()


def _child(role: str):
    """Set up a child: its own process group (a Ctrl-C reaches the supervisor, which stops
    the children in order), the orphan watch, and a ``say`` for its lines."""
    os.setpgid(0, 0)
    _orphan_watch()

    def say(line: str) -> None:
        print(f"[{role} {os.getpid()}] {line}", file=sys.stderr, flush=True)

    return say


def _writer_main(opts: ServeOptions, access: Access, sock_path: str, ready: Any) -> None:
    import uvicorn

    from speakerflow.memory import Memory

    from .app import create_app
    from .replica import SnapshotPublisher

    say = _child("writer")
    memory = Memory(
        home=opts.home,
        embedder=opts.embedder,
        writer=opts.writer,
        max_open=opts.max_open,
        batch_queries=opts.batch_queries,
    )
    publisher = SnapshotPublisher()
    memory.on_publish = publisher.publish
    memory.warm_snapshots = False  # the readers warm their own copies
    app = create_app(
        memory,
        access,
        max_body=opts.max_body,
        writers=opts.writers,
        torch_threads=opts.torch_threads,
        host=opts.host,
        ask_threads=opts.ask_threads,
        write_nice=opts.write_nice,
        role="writer",
        say=say,
        on_ready=lambda: ready.put(("writer", os.getpid())),
        publisher=publisher,
    )
    config = uvicorn.Config(app, uds=sock_path, log_level=opts.log_level, timeout_keep_alive=75)
    uvicorn.Server(config).run()


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` with ``SO_REUSEPORT`` (not listening yet: the
    kernel gives it connections once uvicorn calls ``listen``, i.e. once the app is warm)."""
    family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(addr)
    return sock


def _reader_main(
    opts: ServeOptions, access: Access, sock_path: str, index: int, ready: Any
) -> None:
    import uvicorn

    from .replica import ReplicaMemory

    say = _child(f"reader {index}")
    replica = ReplicaMemory(
        home=opts.home,
        embedder=opts.embedder,
        batch_queries=opts.batch_queries,
        max_open=opts.max_open,
    )
    app = create_reader_app(
        replica,
        access,
        sock_path,
        max_body=opts.max_body,
        torch_threads=opts.torch_threads,
        ask_threads=opts.ask_threads,
        say=say,
        on_ready=lambda: ready.put(("reader", os.getpid())),
    )
    sock = listening_socket(opts.host, opts.port)
    config = uvicorn.Config(app, log_level=opts.log_level, timeout_keep_alive=75)
    uvicorn.Server(config).run(sockets=[sock])


# -- the supervisor ----------------------------------------------------------------------
def _wait_ready(ready: Any, count: int, procs: list, stop: threading.Event) -> list[int]:
    """Pids of ``count`` children that said they are ready; raises :class:`ConfigError`
    if one exits first or ``stop`` is set."""
    pids: list[int] = []
    while len(pids) < count:
        if stop.is_set():
            raise KeyboardInterrupt
        dead = [p for p in procs if p.exitcode is not None]
        if dead:
            raise ConfigError(
                f"the {dead[0].name} process exited with status {dead[0].exitcode} while "
                "starting (its lines above say why)"
            )
        try:
            pids.append(ready.get(timeout=0.2)[1])
        except queue.Empty:
            continue
    return pids


def _stop(procs: list, timeout: float) -> None:
    for p in procs:
        if p.exitcode is None:
            p.terminate()
    deadline = time.monotonic() + timeout
    for p in procs:
        p.join(max(0.1, deadline - time.monotonic()))
        if p.exitcode is None:
            p.kill()
            p.join(5)


def run_workers(opts: ServeOptions, access: Access, workers: int, keys: str) -> None:
    """Run the writer and ``workers`` readers until SIGINT/SIGTERM (or a child exits)."""
    if not hasattr(socket, "SO_REUSEPORT"):
        raise ConfigError("--workers above 1 needs SO_REUSEPORT (Linux); run --workers 1")
    try:  # the port is free for us (another server without SO_REUSEPORT would refuse it)
        listening_socket(opts.host, opts.port).close()
    except OSError as exc:
        raise ConfigError(f"cannot listen on {opts.host}:{opts.port}: {exc}") from None
    ctx = multiprocessing.get_context("spawn")
    rundir = tempfile.mkdtemp(prefix="speakerflow-serve-")
    sock_path = os.path.join(rundir, "writer.sock")
    ready = ctx.Queue()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    url = f"http://{opts.host}:{opts.port}"
    print(
        f"speakerflow serve: home {opts.home or '(default)'}, {url} (docs at /docs), {keys}, "
        f"{workers} reader process(es) and 1 writer process",
        flush=True,
    )
    writer = ctx.Process(target=_writer_main, args=(opts, access, sock_path, ready), name="writer")
    readers = [
        ctx.Process(
            target=_reader_main, args=(opts, access, sock_path, i, ready), name=f"reader {i}"
        )
        for i in range(workers)
    ]
    failed = None
    try:
        writer.start()
        (writer_pid,) = _wait_ready(ready, 1, [writer], stop)
        for r in readers:
            r.start()
        pids = _wait_ready(ready, workers, [writer, *readers], stop)
        print(
            f"speakerflow serve: ready on {url} (reader pids {', '.join(map(str, pids))}; "
            f"writer pid {writer_pid})",
            flush=True,
        )
        procs = [writer, *readers]
        while not stop.is_set():
            wait([p.sentinel for p in procs], timeout=0.5)
            gone = [p for p in procs if p.exitcode is not None]
            if gone:
                failed = f"the {gone[0].name} process exited with status {gone[0].exitcode}"
                break
    except KeyboardInterrupt:
        pass
    except ConfigError as exc:
        failed = str(exc)
    finally:
        _stop([r for r in readers if r.pid is not None], timeout=30)
        if writer.pid is not None:
            _stop([writer], timeout=300)  # it runs the writes already queued
        shutil.rmtree(rundir, ignore_errors=True)
    if failed:
        raise ConfigError(f"{failed}; the server stopped")

"""``speakerflow mcp --home DIR``: the memory as an MCP server over stdio (the official
``mcp`` SDK), for assistants that speak the Model Context Protocol.

Tools (each takes the ``group`` it works on):

- ``remember``: add messages (the JSONL message format, docs/formats.md) and write them
- ``ask``: answer a question with the ids of the messages it rests on
- ``search``: BM25 over the group's messages
- ``memory``: the group's derived records (current heads)
- ``inject``: the working context passive injection builds for one event (InKH)

The process is one :class:`~speakerflow.memory.Memory`: stores and the embedder open once
and stay warm. Over stdio the client that started the process is the only caller, so there
are no keys; to reach groups over the network use ``speakerflow serve`` (per-group keys).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from speakerflow import __version__
from speakerflow.graphs import GroupBusyError, check_group_id
from speakerflow.memory import Memory


@contextmanager
def _told() -> Iterator[None]:
    """User errors (bad group, unknown speaker, invalid messages) reach the client with
    their message; anything else stays a crash whose text stays on the server."""
    try:
        yield
    except (ValueError, LookupError, PermissionError, GroupBusyError) as exc:
        raise ToolError(str(exc)) from exc


def build_server(memory: Memory, access: Any = None) -> MCPServer:
    """An ``MCPServer`` with the five tools over ``memory``.

    ``access`` (a :class:`speakerflow.server.Access`, for ``/mcp`` on the HTTP server):
    every tool call checks the request's ``Authorization: Bearer KEY`` against the group
    it names, as the REST routes do. ``None`` (stdio): the client that started the process
    may use every group.
    """
    allowed = _guard(access)
    server = MCPServer(
        name="speakerflow",
        version=__version__,
        instructions="Long-term memory of multi-party conversations, one store per group. "
        "remember messages, then ask questions: answers cite message ids.",
    )
    _add_message_tools(server, memory, allowed)
    _add_record_tools(server, memory, allowed)
    return server


def _guard(access: Any) -> Callable[[Context, str], None]:
    """The check each tool makes first: a valid group id and, with ``access``, a key in the
    request's headers that may use the group (a :class:`ToolError` otherwise)."""

    def allowed(ctx: Context, group: str) -> None:
        check_group_id(group)
        if access is None:
            return
        headers = ctx.headers or {}
        grant = access.grant(headers.get("authorization"))
        if grant is None:
            raise ToolError("missing or unknown API key: send 'Authorization: Bearer KEY'")
        if not access.allows(grant, group):
            raise ToolError(f"this key may not use group {group!r}")

    return allowed


def _add_message_tools(
    server: MCPServer, memory: Memory, allowed: Callable[[Context, str], None]
) -> None:
    """The tools over a group's messages: ``remember``, ``ask`` and ``search``."""

    @server.tool(
        description="Add messages to a group's memory (JSONL message format: msg_id, ts, speaker, "
        "text, optional session_id/reply_to); already stored msg_ids are skipped."
    )
    def remember(ctx: Context, group: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        with _told():
            allowed(ctx, group)
            return memory.add(group, messages).as_dict()

    @server.tool(
        description="Answer a question from a group's memory; cited_ids are the messages it rests "
        "on."
    )
    def ask(ctx: Context, group: str, question: str) -> dict[str, Any]:
        with _told():
            allowed(ctx, group)
            result, cited = memory.ask_cited(group, question)
            return {
                "answer": result.answer,
                "said": result.said,
                "cited_ids": result.cited_ids(),
                "cited": [
                    m.model_dump(mode="json", include={"msg_id", "speaker", "ts", "text"})
                    for m in cited
                ],
                "latency_ms": round(result.latency_ms, 2),
            }

    @server.tool(description="BM25 search over a group's messages, optionally only one speaker's.")
    def search(
        ctx: Context, group: str, query: str, speaker: str | None = None, k: int = 10
    ) -> dict[str, Any]:
        with _told():
            allowed(ctx, group)
            return {
                "hits": [
                    h.model_dump(mode="json")
                    for h in memory.search(group, query, speaker, max(1, min(k, 200)))
                ]
            }


def _add_record_tools(
    server: MCPServer, memory: Memory, allowed: Callable[[Context, str], None]
) -> None:
    """The tools over what the group's memory derived: ``memory`` (records) and ``inject``."""

    @server.tool(
        name="memory",
        description="A group's current derived records (facts, preferences, decisions), "
        "optionally about one owner (a roster name or GROUP).",
    )
    def memory_records(ctx: Context, group: str, owner: str | None = None) -> dict[str, Any]:
        with _told():
            allowed(ctx, group)
            return {"records": [r.model_dump(mode="json") for r in memory.memory(group, owner)]}

    @server.tool(
        description='The working context for one event, e.g. {"content": "fees on XBT?", '
        '"ts": "2026-05-14T09:00:00Z"}, for a user (private overlay).'
    )
    def inject(
        ctx: Context, group: str, event: dict[str, Any] | str, user: str | None = None
    ) -> dict[str, Any]:
        with _told():
            allowed(ctx, group)
            wc = memory.inject(group, event, user=user)
            return {**wc.as_dict(), "text": wc.text()}


def run_stdio(home: str | None, embedder: str = "minilm", writer: str = "rules") -> None:
    """Serve over stdin/stdout until the client closes the connection. What the first tool
    calls need (the embedder, each group's read snapshot and knowledge, the injector) is
    loaded meanwhile in a background thread, saying so on stderr
    (:func:`speakerflow.memory.warm_up`), so the client's handshake does not wait."""
    import threading

    from speakerflow.memory import Warmth, warm_up

    with Memory(home=home, embedder=embedder, writer=writer) as memory:
        memory.snapshot_knowledge = True  # inject reads the snapshot's knowledge
        threading.Thread(
            target=warm_up, args=(memory, Warmth(role="mcp")), name="speakerflow-warm", daemon=True
        ).start()
        build_server(memory).run("stdio")

"""``speakerflow mcp``: the official SDK's stdio client lists the five tools, remembers
messages and gets cited ids from ``ask``."""

from __future__ import annotations

import json
import sys

import anyio
import pytest

from speakerflow.settings import BUNDLED_SAMPLE

mcp = pytest.importorskip("mcp")

ROWS = [
    {k: v for k, v in json.loads(line).items() if k != "group_id"}
    for line in BUNDLED_SAMPLE.read_text().splitlines()
    if line.strip()
]


async def _session_run(home: str) -> dict:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-c",
            "import sys; from speakerflow.cli import main; sys.exit(main())",
            "mcp",
            "--home",
            home,
            "--embedder",
            "hashing",
        ],
    )
    out: dict = {}
    with anyio.fail_after(240):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            out["remember"] = await session.call_tool(
                "remember", {"group": "team", "messages": ROWS}
            )
            out["ask"] = await session.call_tool(
                "ask", {"group": "team", "question": "Where will the offsite be?"}
            )
            out["search"] = await session.call_tool(
                "search", {"group": "team", "query": "offsite", "k": 3}
            )
            out["memory"] = await session.call_tool("memory", {"group": "team", "owner": "Ben"})
            out["inject"] = await session.call_tool(
                "inject", {"group": "team", "event": {"content": "Porto?"}}
            )
            out["bad"] = await session.call_tool("ask", {"group": "../etc", "question": "x"})
    return out


def _payload(result) -> dict:
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if isinstance(data, dict) else data
    return json.loads(result.content[0].text)


def test_mcp_stdio_tools_and_cited_ids(tmp_path):
    out = anyio.run(_session_run, str(tmp_path))
    assert out["tools"] == ["ask", "inject", "memory", "remember", "search"]
    assert _payload(out["remember"])["ingested"] == len(ROWS)
    ask = _payload(out["ask"])
    assert "s2-t05" in ask["cited_ids"] and ask["answer"]
    assert _payload(out["search"])["hits"]
    assert all(r["owner"] == "Ben" for r in _payload(out["memory"])["records"])
    assert "tokens" in _payload(out["inject"])
    assert out["bad"].is_error and "invalid group id" in out["bad"].content[0].text


async def _http_run(url: str, key: str) -> dict:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    out: dict = {}
    with anyio.fail_after(240):
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            out["remember"] = await session.call_tool(
                "remember", {"group": "team", "messages": ROWS}
            )
            out["ask"] = await session.call_tool(
                "ask", {"group": "team", "question": "Where will the offsite be?"}
            )
            out["other"] = await session.call_tool("search", {"group": "other", "query": "offsite"})
    return out


def test_mcp_over_http_with_per_group_keys(tmp_path):
    import httpx

    from speakerflow.benchmarks.serve_server import Server

    with Server(tmp_path, {"key-team-000001": ["team"]}, embedder="hashing") as server:
        out = anyio.run(_http_run, server.url + "/mcp", "key-team-000001")
        assert httpx.post(server.url + "/mcp", json={}).status_code == 401
    assert out["tools"] == ["ask", "inject", "memory", "remember", "search"]
    assert _payload(out["remember"])["ingested"] == len(ROWS)
    assert "s2-t05" in _payload(out["ask"])["cited_ids"]
    assert out["other"].is_error and "may not use group 'other'" in out["other"].content[0].text

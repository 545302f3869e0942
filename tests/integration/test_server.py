"""``speakerflow serve``: the access matrix (TestClient over the real app and real stores)
and a real server process on 127.0.0.1 (ingest, background write, ask with cited ids)."""

from __future__ import annotations

import json
import socket
import sys
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from speakerflow.benchmarks.serve_server import Server
from speakerflow.cli import main
from speakerflow.memory import Memory
from speakerflow.server import Access, ConfigError, create_app
from speakerflow.settings import BUNDLED_SAMPLE

ROWS = [
    {k: v for k, v in json.loads(line).items() if k != "group_id"}
    for line in BUNDLED_SAMPLE.read_text().splitlines()
    if line.strip()
]
KEYS = {"key-alpha-0001": ["alpha"], "key-beta-00001": ["beta"], "key-admin-0001": ["*"]}
ALPHA, BETA, ADMIN = ({"Authorization": f"Bearer {k}"} for k in KEYS)

# every group endpoint: (method, path after /v1/groups/{group}, request kwargs)
ENDPOINTS = [
    ("POST", "messages", {"json": ROWS[:2]}),
    ("POST", "ask", {"json": {"question": "Where will the offsite be?"}}),
    ("GET", "search", {"params": {"q": "offsite"}}),
    ("GET", "memory", {}),
    ("POST", "inject", {"json": {"event": {"content": "offsite in Porto?"}}}),
    ("GET", "status", {}),
    ("GET", "stats", {}),
    ("GET", "wiki", {}),
    ("POST", "forget", {"json": {"speaker": "Dev", "dry_run": True}}),
    ("POST", "maintain", {"json": {"now": "2026-03-20T09:00:00Z"}}),
]
TRICKS = [
    "%2e%2e",
    "..%2Fbeta",
    "alpha%2F..%2Fbeta",
    ".hidden",
    "a%00b",
    "a%20b",
    "%2Fetc",
    "x" * 129,
]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    home = tmp_path_factory.mktemp("serve-home")
    app = create_app(
        Memory(home=home, embedder="hashing"),
        Access(KEYS),
        max_body=64 * 1024,
        max_messages=50,
        coalesce=0.0,
    )
    with TestClient(app) as c:
        for group, headers in (("alpha", ALPHA), ("beta", BETA)):
            assert (
                c.post(f"/v1/groups/{group}/messages", json=ROWS, headers=headers).status_code
                == 200
            )
        assert app.state.queue.wait_idle(120)
        c.home = home
        yield c


@pytest.mark.parametrize(("method", "path", "kw"), ENDPOINTS, ids=[e[1] for e in ENDPOINTS])
def test_key_for_alpha_gets_403_on_beta(client, method, path, kw):
    r = client.request(method, f"/v1/groups/beta/{path}", headers=ALPHA, **kw)
    assert r.status_code == 403, r.text
    assert r.json()["error"] == "forbidden" and "'beta'" in r.json()["message"]
    # and the key works on its own group; so does the admin key on both
    assert (
        client.request(method, f"/v1/groups/alpha/{path}", headers=ALPHA, **kw).status_code == 200
    )
    assert client.request(method, f"/v1/groups/beta/{path}", headers=ADMIN, **kw).status_code == 200


@pytest.mark.parametrize(("method", "path", "kw"), ENDPOINTS, ids=[e[1] for e in ENDPOINTS])
def test_no_key_or_unknown_key_gets_401(client, method, path, kw):
    for headers in (
        {},
        {"Authorization": "Bearer nope-nope-nope"},
        {"Authorization": "key-alpha-0001"},
        {"Authorization": "Basic a2V5LWFscGhhLTAwMDE="},
    ):
        r = client.request(method, f"/v1/groups/alpha/{path}", headers=headers, **kw)
        assert r.status_code == 401, (headers, r.text)
        assert r.headers["www-authenticate"] == "Bearer" and "Bearer KEY" in r.json()["message"]
    assert client.get("/v1/groups").status_code == 401
    for path in ("/nothing-here", "//v1/groups/alpha/status", "/v1", "/mcp"):
        assert client.get(path).status_code == 401, path
    assert client.get("/nothing-here", headers=ALPHA).json()["error"] == "not_found"


@pytest.mark.parametrize(("method", "path", "kw"), ENDPOINTS, ids=[e[1] for e in ENDPOINTS])
def test_path_tricks_get_400(client, method, path, kw):
    for trick in TRICKS:
        r = client.request(method, f"/v1/groups/{trick}/{path}", headers=ADMIN, **kw)
        assert r.status_code == 400, (trick, r.status_code, r.text)
        assert r.json()["error"] == "bad_group"
    assert sorted(p.name for p in (client.home / "groups").iterdir()) == ["alpha", "beta"]
    assert not (client.home.parent / "etc").exists()


def test_group_listing_is_scoped_to_the_key(client):
    assert client.get("/v1/groups", headers=ALPHA).json() == {"groups": ["alpha"]}
    assert client.get("/v1/groups", headers=ADMIN).json() == {"groups": ["alpha", "beta"]}


def test_errors_are_json_with_a_message(client):
    big = b"[" + b" " * (65 * 1024) + b"]"
    r = client.post(
        "/v1/groups/alpha/messages",
        content=big,
        headers={**ALPHA, "content-type": "application/json"},
    )
    assert r.status_code == 413 and "bytes" in r.json()["message"]
    r = client.post("/v1/groups/alpha/messages", json=[ROWS[0]] * 51, headers=ALPHA)
    assert r.status_code == 413 and "at most 50" in r.json()["message"]
    r = client.post(
        "/v1/groups/alpha/messages",
        json=[{"msg_id": "x", "ts": "yesterday", "speaker": "A", "text": "t"}],
        headers=ALPHA,
    )
    assert r.status_code == 400 and "'ts'" in r.json()["message"]
    r = client.post(
        "/v1/groups/alpha/messages", json=[{**ROWS[0], "group_id": "beta"}], headers=ALPHA
    )
    assert r.status_code == 400 and "other group" in r.json()["message"]
    r = client.get("/v1/groups/alpha/search", params={"q": "x", "speaker": "Zed"}, headers=ALPHA)
    assert r.status_code == 400 and "Ana" in r.json()["message"]
    r = client.post("/v1/groups/alpha/ask", json={}, headers=ALPHA)
    assert r.status_code == 422 and "question" in r.json()["message"]
    r = client.post("/v1/groups/gamma/ask", json={"question": "q?"}, headers=ADMIN)
    assert r.status_code == 404 and "no store" in r.json()["message"]
    from speakerflow.graphs import Home

    with Home(client.home).open("held", writable=True):  # another writer holds the group
        r = client.post("/v1/groups/held/messages", json=ROWS[:1], headers=ADMIN)
    assert r.status_code == 409 and "another process" in r.json()["message"]
    assert client.get("/openapi.json").json()["info"]["title"] == "speakerflow"
    assert client.get("/docs").status_code == 200


def test_refuses_unsafe_configurations(monkeypatch, tmp_path):
    monkeypatch.delenv("SPEAKERFLOW_API_KEYS", raising=False)
    assert main(["serve", "--home", str(tmp_path), "--host", "0.0.0.0", "--no-auth"]) == 2
    assert main(["serve", "--home", str(tmp_path), "--port", "1"]) == 2  # no keys configured
    with pytest.raises(ConfigError, match="at least 8"):
        Access({"short": ["a"]})
    with pytest.raises(ConfigError, match="valid group id"):
        Access({"long-enough-key": ["../x"]})
    monkeypatch.setenv("SPEAKERFLOW_API_KEYS", "[1, 2]")
    with pytest.raises(ConfigError, match="JSON object"):
        Access.from_env()


def test_real_server_ingest_then_ask_cites_messages(tmp_path):
    keys = {"key-team-000001": ["team"]}
    with (
        Server(tmp_path, keys, embedder="hashing") as server,
        httpx.Client(base_url=server.url, timeout=60) as c,
    ):
        auth = {"Authorization": "Bearer key-team-000001"}
        assert c.get("/healthz").json()["status"] == "ok"
        r = c.post("/v1/groups/team/messages", json=ROWS, headers=auth)
        assert (
            r.status_code == 200
            and r.json()["ingested"] == len(ROWS)
            and r.json()["already_stored"] == 0
        )
        assert (
            c.post("/v1/groups/team/messages", json=ROWS[:3], headers=auth).json()["already_stored"]
            == 3
        )
        for _ in range(600):  # the Writer runs after the response; bounded wait for it
            status = c.get("/v1/groups/team/status", headers=auth).json()
            if status["write"]["state"] == "idle" and status["write"]["writes"]:
                break
            time.sleep(0.1)
        assert status["write"]["last_error"] is None and status["stats"]["records"] > 0
        body = c.post(
            "/v1/groups/team/ask", json={"question": "Where will the offsite be?"}, headers=auth
        ).json()
        assert "s2-t05" in body["cited_ids"] and body["answer"]
        assert "said" in body  # the day said, beside a date answer (None here)
        assert body["evidence"] and body["latency_ms"] >= 0
        assert any(m["msg_id"] == "s2-t05" for m in body["cited"])
        assert c.get("/v1/groups/other/status", headers=auth).status_code == 403
        # literal dot segments (clients such as httpx and curl squash them; a raw request does not)
        for raw in (
            "/v1/groups/../team/status",
            "/v1/groups/team/../other/status",
            "/v1/groups/./status",
        ):
            with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
                sock.sendall(
                    f"GET {raw} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer key-team-000001\r\n"
                    "Connection: close\r\n\r\n".encode()
                )
                reply = b"".join(iter(lambda: sock.recv(65536), b""))
            assert reply.split(b"\r\n", 1)[0].split(b" ")[1] in (b"400", b"403", b"404"), (
                raw,
                reply[:200],
            )
            assert b"Porto" not in reply
    assert server.proc.returncode is not None


def test_bench_serve_tiny_has_no_errors():
    from speakerflow.benchmarks.serve import run

    report = run(clients=3, seconds=2, groups=2, embedder="hashing", progress=False)
    assert report["errors"] == 0, report["error_samples"]
    assert report["ask"]["count"] > 0 and report["ask"]["p50_ms"] is not None
    assert report["server_rss_mb"] and report["requests_per_s"]
    assert report["reads"] == "snapshot" and report["query_batching"] is True
    assert report["server_cpu_s"] is not None and report["server_cpu_s"] > 0
    # Little's law over the run: clients in asks + in ingests <= clients (the rest is the
    # client's own time between requests)
    busy = report["clients_asking_mean"] + report["clients_ingesting_mean"]
    assert 0 < report["clients_asking_mean"] and busy <= 3 + 0.1
    assert report["server_cpu_ms_per_request"] > 0
    from speakerflow.benchmarks.serve import format_report

    assert "asking and" in format_report(report)


def test_asks_over_http_do_not_wait_for_a_write_of_their_group(tmp_path):
    """While the group's lock is held (as by a background write), an ask and a search answer
    from the group's snapshot at once; an append waits for the lock, and its messages are
    read once its queued write has landed."""
    import threading

    mem = Memory(home=tmp_path, embedder="hashing")
    app = create_app(mem, Access(KEYS), coalesce=0.0)
    with TestClient(app) as c:
        assert c.post("/v1/groups/alpha/messages", json=ROWS, headers=ALPHA).status_code == 200
        assert app.state.queue.wait_idle(120)
        held, release = threading.Event(), threading.Event()

        def hold():
            with mem.use("alpha"):
                held.set()
                release.wait(60)

        t = threading.Thread(target=hold)
        t.start()
        try:
            assert held.wait(10)
            start = time.perf_counter()
            r = c.post(
                "/v1/groups/alpha/ask",
                json={"question": "Where will the offsite be?"},
                headers=ALPHA,
            )
            hits = c.get("/v1/groups/alpha/search", params={"q": "offsite"}, headers=ALPHA)
            took = time.perf_counter() - start
        finally:
            release.set()
            t.join()
        assert (
            r.status_code == 200
            and "s2-t05" in r.json()["cited_ids"]
            and r.json()["wait_ms"] < 1000
        )
        assert hits.status_code == 200 and hits.json()["hits"] and took < 10
        late = [
            {
                "msg_id": "late-1",
                "ts": "2026-03-20T10:00:00Z",
                "speaker": "Ana",
                "text": "Zanzibar replaces Porto as the offsite venue.",
            }
        ]
        assert c.post("/v1/groups/alpha/messages", json=late, headers=ALPHA).json()["ingested"] == 1
        assert app.state.queue.wait_idle(120)
        hits = c.get("/v1/groups/alpha/search", params={"q": "zanzibar"}, headers=ALPHA).json()[
            "hits"
        ]
        assert [h["msg_id"] for h in hits] == ["late-1"]


def test_forget_over_http(client):
    r = client.post("/v1/groups/alpha/forget", json={"message_ids": ["s2-t05"]}, headers=ALPHA)
    assert r.status_code == 200 and r.json()["messages"] == 1
    hits = client.get(
        "/v1/groups/alpha/search", params={"q": "settled Porto"}, headers=ALPHA
    ).json()["hits"]
    assert "s2-t05" not in [h["msg_id"] for h in hits]
    body = client.post(
        "/v1/groups/alpha/ask", json={"question": "Where will the offsite be?"}, headers=ALPHA
    ).json()
    assert "s2-t05" not in body["cited_ids"]
    r = client.post("/v1/groups/alpha/forget", json={"speaker": "Zed"}, headers=ALPHA)
    assert r.status_code == 400 and "roster" in r.json()["message"]
    r = client.post("/v1/groups/alpha/forget", json={}, headers=ALPHA)
    assert r.status_code == 400 and "exactly one" in r.json()["message"]


def test_no_auth_serves_loopback_host_names_only(tmp_path):
    app = create_app(
        Memory(home=tmp_path, embedder="none"), Access(None, open_access=True), coalesce=0.0
    )
    with TestClient(app) as c:
        for host in ("127.0.0.1:8750", "localhost:8750", "[::1]:8750"):
            r = c.post("/v1/groups/team/messages", json=ROWS[:2], headers={"host": host})
            assert r.status_code == 200, (host, r.text)
        for host in ("testserver", "evil.example:8750", "127.0.0.1.evil.example"):
            r = c.get("/v1/groups/team/status", headers={"host": host})
            assert r.status_code == 403 and r.json()["error"] == "forbidden_host"


def test_write_queue_coalesces_and_serialises_per_group():
    from speakerflow.server import WriteQueue

    class Fake:
        def __init__(self):
            self.calls, self.running, self.overlap = [], set(), False

        def write(self, group, progress=None):
            if group in self.running:
                self.overlap = True
            self.running.add(group)
            time.sleep(0.05)
            self.calls.append(group)
            self.running.discard(group)
            return None

    fake = Fake()
    queue = WriteQueue(fake, workers=2, coalesce=0.2)
    for _ in range(5):
        queue.submit("a", 1)
        queue.submit("b", 1)
    assert queue.status("a")["state"] == "queued" and queue.status("a")["pending_messages"] == 5
    assert queue.wait_idle(30)
    assert sorted(fake.calls) == ["a", "b"] and not fake.overlap  # a burst is one write per group
    queue.submit("a", 1)
    queue.close()  # a queued write still runs on close
    assert fake.calls.count("a") == 2 and queue.status("a")["writes"] == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux only")
def test_background_writes_run_at_a_lower_priority_than_asks():
    import os
    import threading

    from speakerflow.server import WriteQueue

    seen: list[tuple[int, int]] = []

    class Fake:
        def write(self, group, progress=None):
            seen.append((os.getpriority(os.PRIO_PROCESS, threading.get_native_id()), os.nice(0)))

    base = os.nice(0)
    queue = WriteQueue(Fake(), workers=1, coalesce=0, nice=5)
    queue.submit("a", 1)
    assert queue.wait_idle(30)
    queue.close()
    # the write thread runs 5 nicer; the process's other threads (the asks') keep their value
    assert seen == [(base + 5, base + 5)] and os.nice(0) == base

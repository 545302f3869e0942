"""The openai backend against a local HTTP server on 127.0.0.1 that speaks the protocol."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from speakerflow.ops.backends import make_backend
from speakerflow.ops.backends.errors import (
    BackendConfigError,
    BackendRequestError,
    BackendResponseError,
    BackendUnavailableError,
)
from speakerflow.ops.write.interfaces import Segment
from speakerflow.ops.write.writer.chat import make_chat_writer

pytestmark = pytest.mark.timeout(60)

HELLO = [{"role": "user", "content": "Say hello"}]


def completion(text: str, usage: dict | None = None) -> dict:
    body = {
        "id": "cmpl-1",
        "object": "chat.completion",
        "model": "tiny",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


class FakeServer:
    """Replays a script of replies; each item is (status, body dict/str, headers, delay_s).
    The last item repeats once the script runs out. Requests are recorded."""

    def __init__(self):
        self.script: list[tuple[int, object, dict, float]] = []
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                server.requests.append(
                    {
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": json.loads(self.rfile.read(length)),
                    }
                )
                status, body, headers, delay = (
                    server.script.pop(0) if len(server.script) > 1 else server.script[0]
                )
                time.sleep(delay)
                raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout case)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def reply(self, status=200, body=None, headers=None, delay=0.0):
        self.script.append(
            (status, body if body is not None else completion("hi"), headers or {}, delay)
        )
        return self


@pytest.fixture
def server():
    srv = FakeServer()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in (
        "SPEAKERFLOW_OPENAI_API_KEY",
        "OPENAI_API_KEY",
        "SPEAKERFLOW_OPENAI_BASE_URL",
        "OPENAI_BASE_URL",
        "SPEAKERFLOW_OPENAI_MODEL",
        "OPENAI_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)


def _backend(server, **cfg):
    cfg = {"base_url": server.url, "model": "tiny-chat", "backoff_s": 0.01, **cfg}
    return make_backend("openai", **cfg)


def test_completion_with_usage_and_key_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("SPEAKERFLOW_OPENAI_API_KEY", "sk-local-test")
    server.reply(
        body=completion("Hello!", {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12})
    )
    result = _backend(server).chat(HELLO, max_tokens=16, temperature=0.2)
    assert result.text == "Hello!"
    assert (result.prompt_tokens, result.completion_tokens, result.tokens) == (9, 3, 12)
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert {k.lower(): v for k, v in request["headers"].items()}[
        "authorization"
    ] == "Bearer sk-local-test"
    assert request["body"] == {
        "model": "tiny-chat",
        "messages": HELLO,
        "max_tokens": 16,
        "temperature": 0.2,
    }


def test_no_key_means_no_authorization_header_and_usage_is_estimated(server):
    server.reply(body=completion("x" * 40))
    result = _backend(server, json_mode=True, seed=7).chat(HELLO)
    assert "authorization" not in {k.lower() for k in server.requests[0]["headers"]}
    assert server.requests[0]["body"]["response_format"] == {"type": "json_object"}
    assert server.requests[0]["body"]["seed"] == 7
    assert result.completion_tokens == 10 and result.prompt_tokens >= 1


def test_reasoning_model_switches_shape_the_request(server):
    server.reply()
    _backend(
        server,
        max_tokens_field="max_completion_tokens",
        send_temperature=False,
        extra_body={"reasoning_effort": "low"},
    ).chat(HELLO, max_tokens=33)
    assert server.requests[0]["body"] == {
        "model": "tiny-chat",
        "messages": HELLO,
        "max_completion_tokens": 33,
        "reasoning_effort": "low",
    }


def test_500_then_200_is_retried(server):
    server.reply(500, {"error": "overloaded"}).reply(body=completion("second time lucky"))
    backend = _backend(server)
    assert backend.chat(HELLO).text == "second time lucky"
    assert len(server.requests) == 2 and backend.retries == 1


def test_429_honours_retry_after(server):
    server.reply(429, {"error": "slow down"}, headers={"Retry-After": "0"}).reply()
    backend = _backend(server, backoff_s=5.0)  # Retry-After: 0 overrides the 5 s schedule
    start = time.perf_counter()
    assert backend.chat(HELLO).text == "hi"
    assert time.perf_counter() - start < 4.0 and len(server.requests) == 2


def test_persistent_5xx_gives_up_after_a_bounded_number_of_tries(server):
    server.reply(503, {"error": "down"})
    backend = _backend(server, max_retries=2)
    with pytest.raises(BackendUnavailableError, match=r"failed 3 time\(s\).*HTTP 503"):
        backend.chat(HELLO)
    assert len(server.requests) == 3 and backend.retries == 2


def test_timeout_is_retried_then_reported(server):
    server.reply(delay=1.5)
    backend = _backend(server, timeout_s=0.2, max_retries=1)
    start = time.perf_counter()
    with pytest.raises(BackendUnavailableError, match="timed out"):
        backend.chat(HELLO)
    assert time.perf_counter() - start < 1.4  # two 0.2 s attempts, not the server's 1.5 s
    assert len(server.requests) == 2


def test_timeout_then_success(server):
    server.reply(delay=1.0).reply(body=completion("on time"))
    assert _backend(server, timeout_s=0.3, max_retries=2).chat(HELLO).text == "on time"


def test_client_errors_are_not_retried(server):
    server.reply(400, {"error": {"message": "context length exceeded"}})
    with pytest.raises(BackendRequestError, match="HTTP 400.*context length"):
        _backend(server).chat(HELLO)
    assert len(server.requests) == 1


def test_auth_and_not_found_are_configuration_errors(server):
    server.reply(401, {"error": "bad key"})
    with pytest.raises(BackendConfigError, match="HTTP 401: the API key was refused"):
        _backend(server).chat(HELLO)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "body", ["<html>proxy error</html>", {"unexpected": True}, {"choices": []}]
)
def test_malformed_replies_raise_response_errors(server, body):
    server.reply(body=body)
    with pytest.raises(BackendResponseError):
        _backend(server).chat(HELLO)


def test_connection_refused_is_retried_then_reported(server):
    url = server.url
    server.httpd.shutdown()
    server.httpd.server_close()
    backend = make_backend("openai", base_url=url, model="m", max_retries=1, backoff_s=0.01)
    with pytest.raises(BackendUnavailableError, match="connection failed"):
        backend.chat(HELLO)
    assert backend.retries == 1


def test_chat_writer_over_the_local_server(server):
    actions = {
        "actions": [
            {
                "action": "ADD",
                "owner": "GROUP",
                "source": "Ana",
                "layer": "group_interaction",
                "utype": "decision",
                "content": "the offsite will be in Porto",
                "from_ids": ["m1"],
            }
        ]
    }
    server.reply(500, {"error": "warming up"}).reply(
        body=completion(
            "Sure!\n```json\n" + json.dumps(actions) + "\n```",
            {"prompt_tokens": 700, "completion_tokens": 60},
        )
    )
    segment = Segment(
        "s1#0",
        "team",
        ("Ana", "Ben"),
        (
            {
                "msg_id": "m1",
                "speaker": "Ana",
                "text": "Final call: we go with Porto.",
                "ts": "2026-03-02T09:00:00Z",
                "session_id": "s1",
                "turn": 0,
            },
        ),
    )
    writer = make_chat_writer(
        "openai", base_url=server.url, model="tiny-chat", backoff_s=0.01, max_tokens=256
    )
    out = writer.propose(segment)
    assert out.parse_error is None and out.actions == actions["actions"]
    assert out.tokens == 760 and out.model_calls == 1
    sent = server.requests[-1]["body"]
    assert sent["messages"][0]["role"] == "system" and "[m1]" in sent["messages"][1]["content"]
    assert sent["max_tokens"] == 640  # 80 tokens x max(8, 2 x 1) actions beats 256

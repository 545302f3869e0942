"""A chat backend for any OpenAI-compatible ``/v1/chat/completions`` endpoint.

Works with api.openai.com and with local servers (vLLM, llama.cpp, Ollama, LM Studio,
SGLang) that speak the same protocol. The HTTP client, its connection pool and its retries
are the official ``openai`` SDK's; this module builds the request body (so any
server-specific field can be sent), reads the reply and maps failures to
:mod:`.errors`.

Settings come from :class:`OpenAIConfig`, falling back to the environment:

- base URL: ``base_url`` or ``$SPEAKERFLOW_OPENAI_BASE_URL`` / ``$OPENAI_BASE_URL``
  (default ``https://api.openai.com/v1``);
- model: ``model`` or ``$SPEAKERFLOW_OPENAI_MODEL`` / ``$OPENAI_MODEL``;
- key: only from the environment (``$SPEAKERFLOW_OPENAI_API_KEY`` then ``$OPENAI_API_KEY``);
  required for api.openai.com, optional for other hosts (no ``Authorization`` header is
  sent without one).

Retryable failures (the SDK's: HTTP 408/409/429/5xx, timeouts, refused or dropped
connections) are retried ``max_retries`` times by the SDK; the wait before retry ``n`` is
``backoff_s * 2**n`` capped at ``backoff_max_s``, or the server's ``Retry-After`` within
the same cap.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from speakerflow.ops.backends.base import ChatMessage, ChatResult
from speakerflow.ops.backends.errors import (
    BackendConfigError,
    BackendRequestError,
    BackendResponseError,
    BackendUnavailableError,
)
from speakerflow.settings import setting

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRY_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))  # what the SDK retries
CONFIG_STATUS = {
    401: "the API key was refused",
    403: "the API key may not use this model",
    404: "the URL or model name is wrong",
}


class OpenAIConfig(BaseModel):
    """Settings of :class:`OpenAIChat` (unset values come from the environment).

    ``timeout_s`` bounds one HTTP attempt (seconds); ``max_retries`` is the number of
    retries after the first attempt; ``json_mode`` asks the endpoint for a JSON object
    (``response_format``), which not every server supports; ``extra_body`` is merged
    into each request (e.g. ``{"top_p": 0.95}`` or server-specific switches);
    ``max_tokens_field`` names the length limit (OpenAI's reasoning models want
    ``max_completion_tokens``) and ``send_temperature=False`` leaves the temperature out
    (for models that accept only their default).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str | None = None
    model: str | None = None
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=20)
    backoff_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    json_mode: bool = False
    seed: int | None = None
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    send_temperature: bool = True
    extra_body: dict[str, Any] = Field(default_factory=dict)


def estimate_tokens(text: str) -> int:
    """A rough token count (about four characters per token) when ``usage`` is missing."""
    return (len(text) + 3) // 4


class OpenAIChat:
    """Chat completions over HTTP; see the module docstring for settings and retries.

    ``retries`` counts retried attempts over the backend's life (a health signal).
    """

    name = "openai"
    Config = OpenAIConfig

    def __init__(self, config: OpenAIConfig | None = None, **overrides: Any):
        base_cfg = config.model_dump() if config is not None else {}
        self.config = OpenAIConfig(**{**base_cfg, **overrides})
        base = (self.config.base_url or setting("openai_base_url") or DEFAULT_BASE_URL).rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise BackendConfigError(
                f"openai backend: base URL {base!r} must start with http:// "
                "or https:// (set base_url or $SPEAKERFLOW_OPENAI_BASE_URL)"
            )
        self.base_url = base
        self.model = self.config.model or setting("openai_model")
        if not self.model:
            raise BackendConfigError(
                "openai backend: no model name; pass model=... or set $SPEAKERFLOW_OPENAI_MODEL"
            )
        key = setting("openai_api_key")
        self._key = key.get_secret_value() if key is not None else None
        if self._key is None and base == DEFAULT_BASE_URL:
            raise BackendConfigError(
                "openai backend: api.openai.com needs a key; set "
                "$SPEAKERFLOW_OPENAI_API_KEY (or $OPENAI_API_KEY)"
            )
        self.retries = 0
        self._sdk = None

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIChat(base_url={self.base_url!r}, model={self.model!r})"

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> ChatResult:
        """One completion for ``messages``; tokens from ``usage`` (else estimated)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            self.config.max_tokens_field: max_tokens,
        }
        if self.config.send_temperature:
            body["temperature"] = temperature
        body.update(self.config.extra_body)
        if self.config.json_mode:
            body["response_format"] = {"type": "json_object"}
        if self.config.seed is not None:
            body["seed"] = self.config.seed
        reply = self._post("/chat/completions", body)
        try:
            message = reply["choices"][0]["message"]
            text = message.get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise BackendResponseError(
                f"openai backend: {self.base_url}/chat/completions answered without "
                f"choices[0].message: {json.dumps(reply)[:300]}"
            ) from None
        usage = reply.get("usage") or {}
        prompt = usage.get("prompt_tokens")
        completion = usage.get("completion_tokens")
        if not isinstance(prompt, int):
            prompt = estimate_tokens("".join(m.get("content", "") for m in messages))
        if not isinstance(completion, int):
            completion = estimate_tokens(text)
        return ChatResult(text, prompt_tokens=prompt, completion_tokens=completion)

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        cap = self.config.backoff_max_s
        if retry_after:
            try:
                return min(cap, max(0.0, float(retry_after)))
            except ValueError:
                pass  # an HTTP date: fall back to the exponential schedule
        return min(cap, self.config.backoff_s * (2**attempt))

    def _client(self):
        """The SDK client (built once): its pool, timeout and retries; our backoff schedule."""
        if self._sdk is None:
            import openai

            backend = self

            class Client(openai.OpenAI):
                def _calculate_retry_timeout(
                    self, remaining_retries, options, response_headers=None
                ):
                    attempt = options.get_max_retries(self.max_retries) - remaining_retries
                    backend.retries += 1
                    headers = response_headers or {}
                    return backend._delay(attempt, headers.get("retry-after"))

            self._sdk = Client(
                api_key=self._key or "no-key",
                base_url=self.base_url,
                timeout=self.config.timeout_s,
                max_retries=self.config.max_retries,
            )
        return self._sdk

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        import httpx2
        import openai

        url = self.base_url + path
        headers: dict[str, Any] = {"Accept": "application/json"}
        if not self._key:
            headers["Authorization"] = openai.Omit()  # a local server without keys: send none
        tries = self.config.max_retries + 1
        try:
            resp = self._client().post(
                path, cast_to=httpx2.Response, body=body, options={"headers": headers}
            )
        except openai.APIStatusError as exc:
            status, detail = exc.status_code, exc.response.text[:300]
            if status in CONFIG_STATUS:
                raise BackendConfigError(
                    f"openai backend: {url} -> HTTP {status}: {CONFIG_STATUS[status]} "
                    f"(model {self.model!r}): {detail}"
                ) from None
            if status not in RETRY_STATUS:
                raise BackendRequestError(
                    f"openai backend: {url} -> HTTP {status}: {detail}"
                ) from None
            last = f"HTTP {status}: {detail}"
        except openai.APITimeoutError:
            last = f"timed out after {self.config.timeout_s:g} s"
        except openai.APIConnectionError as exc:
            last = f"connection failed: {exc.__cause__ or exc}"
        else:
            try:
                return resp.json()
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise BackendResponseError(
                    f"openai backend: {url} answered with non-JSON: {resp.content[:200]!r}"
                ) from None
        raise BackendUnavailableError(
            f"openai backend: {url} failed {tries} time(s); last error: {last}. Is the server up? "
            "(base URL from base_url / $SPEAKERFLOW_OPENAI_BASE_URL)"
        )

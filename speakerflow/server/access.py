"""Who may use which groups: API keys (``SPEAKERFLOW_API_KEYS``) and the ASGI guard in front
of every route (401 / 400 / 403 / 413 answered as JSON before any handler runs)."""

from __future__ import annotations

import hmac
import ipaddress
import json
from urllib.parse import unquote

from speakerflow.graphs import check_group_id
from speakerflow.settings import env_name, setting

KEYS_ENV = env_name("api_keys")


def is_group_id(name: str) -> bool:
    """Whether ``name`` is a valid group id (a plain folder name)."""
    try:
        check_group_id(name)
    except ValueError:
        return False
    return True


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
                if g != "*" and not is_group_id(g):
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
        secret = setting("api_keys")
        if secret is None:
            return cls(None, open_access)
        raw = secret.get_secret_value()
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


def error_body(status: int, kind: str, message: str) -> dict:
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
        body = json.dumps(error_body(status, kind, message)).encode()
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
        refusal = _group_refusal(raw_path, path, grant)
        if refusal is not None:
            return await self._reply(send, *refusal)
        if scope["method"] in ("POST", "PUT", "PATCH"):
            return await self._with_body(scope, receive, send, headers.get("content-length"))
        return await self.app(scope, receive, send)

    async def _with_body(self, scope, receive, send, length: str | None):
        """Read the whole request body (413 when it is over ``max_body``, by its
        ``content-length`` or by what arrives), then run the app on it."""
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


def _group_refusal(raw_path: str, path: str, grant: frozenset[str]) -> tuple[int, str, str] | None:
    """For a ``/<version>/groups/<group>...`` path: 400 when the group named (raw or
    decoded, they must agree) is not a valid group id, 403 when ``grant`` may not use it;
    None when the request may go on."""
    parts = raw_path.split("/")
    decoded = path.split("/")
    if not (
        (len(parts) > 2 and parts[2] == "groups") or (len(decoded) > 2 and decoded[2] == "groups")
    ):
        return None
    names = {
        unquote(parts[3]) if len(parts) > 3 else "",
        decoded[3] if len(decoded) > 3 else "",
    }
    names.discard("")
    if (len(parts) > 3 or len(decoded) > 3) and (
        len(names) != 1 or not all(is_group_id(n) for n in names)
    ):
        shown = unquote(parts[3]) if len(parts) > 3 else (decoded[3] if len(decoded) > 3 else "")
        return (
            400,
            "bad_group",
            f"invalid group id {shown!r}: use letters, digits, '.', '_' or '-' "
            "(max 128), starting with a letter or digit",
        )
    if names and not Access.allows(grant, next(iter(names))):
        return 403, "forbidden", f"this key may not use group {next(iter(names))!r}"
    return None

"""Errors raised by chat backends.

Configuration problems (no API key, no model folder, a 401/404 from the endpoint) raise
:class:`BackendConfigError` at once: retrying cannot fix them. Per-call failures
(retries exhausted, a refused request, a malformed reply) raise the other subclasses of
:class:`BackendError`; the chat Writer reports those per segment instead of stopping.
"""

from __future__ import annotations


class BackendError(RuntimeError):
    """Base of every chat-backend failure."""


class BackendConfigError(BackendError, ValueError):
    """The backend is mis-configured (missing key, model folder, model name, bad URL)."""


class BackendRequestError(BackendError):
    """The endpoint refused this request (a 4xx other than 401/403/404/408/429)."""


class BackendUnavailableError(BackendError):
    """Every attempt failed with a retryable error (429, 5xx, timeout, connection)."""


class BackendResponseError(BackendError):
    """The endpoint answered, but not in the chat-completions shape."""

"""One JSON POST with a deadline, its latency, and a typed failure: what every HTTP subject shares.

httpx is imported on first use (it comes with the ``service`` or ``live`` extra). Nothing here
retries: a retry is the runner's decision, so that each failed try is kept in the trial's trace
and counted, instead of being hidden inside the transport. Header values and the URL are
registered as secrets, so no error sentence written to a run can carry them.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from vitrine._redact import register_secret, sanitize_text
from vitrine.errors import InvalidArgumentError
from vitrine.subjects._errors import (
    EndpointTimeoutError,
    PermanentEndpointError,
    TransientEndpointError,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["EndpointReply", "HttpEndpoint"]

_EXCERPT_LIMIT = 160
# Headers that describe the request rather than authorise it; every other value is a secret.
_PLAIN_HEADERS = frozenset(
    {"accept", "accept-encoding", "accept-language", "cache-control", "content-type", "user-agent"}
)
_HTTPX_MISSING = (
    "HTTP subjects need httpx, which is not installed: pip install 'vitrine[service]' "
    "(or 'vitrine[live]')"
)


@dataclass(frozen=True, slots=True)
class EndpointReply:
    """A parsed JSON reply and how long the request took."""

    data: Any
    status: int
    latency_ms: float


class HttpEndpoint:
    """A URL, its headers and a timeout; :meth:`post` sends one JSON request to it.

    One connection pool is kept per event loop (``vitrine.evaluate`` runs each evaluation on a
    loop of its own); :meth:`aclose` closes the current one.
    """

    def __init__(
        self, url: str, *, headers: Mapping[str, str] | None = None, timeout_s: float = 60.0
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise InvalidArgumentError("an HTTP subject needs an http:// or https:// URL")
        if not timeout_s > 0:
            raise InvalidArgumentError(
                f"timeout_s must be a positive number of seconds, got {timeout_s}"
            )
        self.url = url
        self.headers: Mapping[str, str] = MappingProxyType(dict(headers or {}))
        self.timeout_s = float(timeout_s)
        register_secret(url)
        for name, value in self.headers.items():
            if name.lower() in _PLAIN_HEADERS:
                continue  # "application/json" is no secret, and redacting it would garble text
            register_secret(value)
            # "Bearer sk-..." is registered whole and by its token, which is what leaks alone.
            register_secret(value.partition(" ")[2] or None)
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        # The URL and headers may hold credentials: a repr ends up in logs and tracebacks.
        return f"{type(self).__name__}(<url>, {len(self.headers)} header(s))"

    def _pool(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            try:
                import httpx
            except ImportError:
                raise ImportError(_HTTPX_MISSING) from None
            self._client = httpx.AsyncClient(headers=dict(self.headers))
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the connection pool of the current event loop."""
        client, self._client = self._client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.aclose()

    async def post(self, payload: Any) -> EndpointReply:
        """POST ``payload`` as JSON; a 2xx JSON reply, or a typed error with a safe sentence."""
        import httpx

        client = self._pool()
        started = time.perf_counter()
        try:
            response = await client.post(self.url, json=payload, timeout=self.timeout_s)
        except httpx.TimeoutException as exc:
            raise EndpointTimeoutError(
                f"the endpoint did not answer within {self.timeout_s:g} s ({type(exc).__name__})"
            ) from exc
        except httpx.TransportError as exc:
            raise TransientEndpointError(
                f"the endpoint could not be reached or dropped the connection "
                f"({type(exc).__name__})"
            ) from exc
        latency_ms = round((time.perf_counter() - started) * 1000.0, 3)
        status = response.status_code
        if status == 429 or status >= 500:
            raise TransientEndpointError(_status_sentence(response), status)
        if not 200 <= status < 300:
            raise PermanentEndpointError(_status_sentence(response), status)
        try:
            data = response.json()
        except (ValueError, UnicodeDecodeError) as exc:
            raise PermanentEndpointError(
                f"the endpoint answered HTTP {status} with a body that is not JSON: "
                f"{_excerpt(response.text)!r}",
                status,
            ) from exc
        return EndpointReply(data, status, latency_ms)


def _status_sentence(response: httpx.Response) -> str:
    status = response.status_code
    phrase = response.reason_phrase or "error"
    why = {
        429: "rate limited; may pass on a later try",
        401: "the credentials were refused",
        403: "the credentials were refused",
        404: "no such route or model",
    }.get(status, "a server error; may pass on a later try" if status >= 500 else "refused")
    detail = _error_detail(response)
    return f"the endpoint answered HTTP {status} {phrase} ({why})" + (
        f": {detail!r}" if detail else ""
    )


def _error_detail(response: httpx.Response) -> str:
    """The message of an error envelope (``{"error": {"message": ...}}``), else the body text."""
    text = response.text
    try:
        body = json.loads(text)
    except ValueError:
        return _excerpt(text)
    if isinstance(body, Mapping):
        error = body.get("error", body.get("detail", body.get("message")))
        if isinstance(error, Mapping):
            error = error.get("message")
        if isinstance(error, str):
            return _excerpt(error)
    return _excerpt(text)


def _excerpt(text: str) -> str:
    return sanitize_text(text, _EXCERPT_LIMIT) if text.strip() else ""

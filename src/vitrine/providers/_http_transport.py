"""JSON over pooled HTTP/1.1 connections, for model endpoints that vitrine calls by hand.

:class:`PooledJsonClient` posts a JSON body to one fixed URL and returns the decoded JSON reply,
or the ``data`` of each server-sent event of a streamed reply. It sits on aiohttp: one
``ClientSession`` per event loop, whose connection pool (up to ``max_connections`` keep-alive
connections) is shared by every concurrent call on that loop.

Why not the OpenAI SDK's own stack: its HTTP client re-scans the whole connection pool, polling
every idle socket, each time a request is queued or a response closes, and builds several
pydantic objects per request. At 50 and 200 concurrent requests that was 3 to 17 ms of client
CPU per request (1.5 ms with the SDK's aiohttp transport), enough to hold a two-core machine
far below the endpoint's own throughput; aiohttp alone needs 0.3 to 0.5 ms
(``benchmarks/live_concurrency.py`` measures the whole trial).

Failures come out typed and sanitized, never chained to the exception that caused them: an HTTP
status keeps only its number, the standard phrase for it and, from a fixed allow-list, the
provider's error code; a transport failure keeps only its exception class name. The URL, the
headers and the server's own words stay out of every message.

A session nobody closes is closed when ``asyncio.run`` shuts its loop down (its async
generators are finalised then), so a forgotten :meth:`PooledJsonClient.aclose` leaves neither
sockets nor "unclosed session" warnings behind.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import urllib.request
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from vitrine.errors import InvalidArgumentError
from vitrine.providers._base import ProviderError, ProviderFailure
from vitrine.providers._retry import RetryAfterError

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "SAFE_ERROR_CODES",
    "PooledJsonClient",
    "environment_proxy",
    "failure_for_status",
    "retry_after_s",
    "safe_error_code",
    "status_error",
]

# Provider error codes that are safe and useful to keep: fixed identifiers, never free text.
SAFE_ERROR_CODES = frozenset(
    {
        "content_filter",
        "context_length_exceeded",
        "rate_limit_exceeded",
        "insufficient_quota",
        "invalid_api_key",
        "model_not_found",
        "DeploymentNotFound",
        "invalid_request_error",
        "server_error",
        "timeout",
    }
)
# Error bodies are read only for their code; a larger one is not worth buffering.
_MAX_ERROR_BODY = 64 * 1024
# A streamed event arrives as one line; tool-call arguments can make it long.
_READ_BUFFER = 1024 * 1024


@dataclass(slots=True)
class _LoopSession:
    session: aiohttp.ClientSession
    # Suspended inside a try/finally until the loop finalises its async generators.
    closer: AsyncGenerator[None, None]


class PooledJsonClient:
    """POSTs JSON to ``url`` with ``headers`` over a per-event-loop pool of connections.

    ``timeout_s`` bounds each request as a whole, from connecting to the last byte of the reply
    (a stream included), so a server that trickles bytes cannot hold a call open longer.
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        *,
        timeout_s: float,
        max_connections: int = 1000,
    ) -> None:
        if timeout_s <= 0:
            raise InvalidArgumentError(f"timeout_s must be positive, got {timeout_s}")
        if max_connections < 1:
            raise InvalidArgumentError(f"max_connections must be at least 1, got {max_connections}")
        self._url = url
        self._proxy = environment_proxy(url)
        self._headers = dict(headers)
        self._timeout_s = timeout_s
        self._max_connections = max_connections
        self._lock = threading.Lock()
        self._sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopSession] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        # The URL and the headers (a key among them) stay out of every repr.
        return f"PooledJsonClient(max_connections={self._max_connections})"

    async def post(self, body: Mapping[str, Any]) -> Any:
        """The decoded JSON reply to ``body``; a failure is a :class:`ProviderError`."""
        payload = _encode(body)
        mapped: ProviderError
        try:
            session = await self._session()
            async with session.post(self._url, data=payload, proxy=self._proxy) as response:
                if response.status < 400:
                    return _decode(await response.read())
                mapped = await _read_status_error(response)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            mapped = transport_error(exc)
        # Raised outside the except block, so the transport's exception (which may quote the
        # URL) is not attached as __context__.
        raise mapped

    async def stream(self, body: Mapping[str, Any]) -> AsyncIterator[Any]:
        """The decoded ``data`` of each server-sent event of the reply, up to ``[DONE]``.

        The connection is closed, not returned to the pool, when the stream is left early (an
        error, a timeout, a cancelled task): the server sees the client gone and stops
        generating, which it cannot learn from a non-streamed request.
        """
        payload = _encode(body)
        mapped: ProviderError | None = None
        response: aiohttp.ClientResponse | None = None
        try:
            session = await self._session()
            response = await session.post(
                self._url,
                data=payload,
                headers={"Accept": "text/event-stream"},
                proxy=self._proxy,
            )
            if response.status >= 400:
                mapped = await _read_status_error(response)
            else:
                async for data in _events(response):
                    if isinstance(data, Mapping) and data.get("error"):
                        # An error event mid-stream: its message is the provider's free text.
                        mapped = ProviderError(
                            ProviderFailure.BAD_RESPONSE, "the stream carried an error event"
                        )
                        break
                    yield data
                else:
                    response.release()
                    return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            mapped = transport_error(exc)
        finally:
            if response is not None and not response.closed:
                response.close()
        if mapped is not None:
            raise mapped

    async def aclose(self) -> None:
        """Close the connections opened on the running event loop."""
        with self._lock:
            entry = self._sessions.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry.closer.aclose()

    async def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._sessions.get(loop)
            if entry is not None and not entry.session.closed:
                return entry.session
            # A session holds its loop, so the weak keys alone would never let go of a loop
            # that has ended; its session was closed when the loop shut down.
            for ended in [known for known in self._sessions if known.is_closed()]:
                del self._sessions[ended]
            entry = self._new_session()
            self._sessions[loop] = entry
        # Started while the loop runs, so the loop tracks it and finalises it at shutdown.
        await anext(entry.closer)
        return entry.session

    def _new_session(self) -> _LoopSession:
        import aiohttp

        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=0),
            headers={"Content-Type": "application/json", **self._headers},
            timeout=aiohttp.ClientTimeout(total=self._timeout_s),
            read_bufsize=_READ_BUFFER,
            # Cookies mean nothing to an API call, and a real jar costs a lookup per request.
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        return _LoopSession(session, _close_at_loop_shutdown(session))


def environment_proxy(url: str) -> str | None:
    """The proxy that ``HTTPS_PROXY``/``HTTP_PROXY`` name for ``url``, unless ``NO_PROXY``
    exempts its host: what the SDKs' HTTP client honours, decided once per client because
    aiohttp's own ``trust_env`` looks it up again on a worker thread for every request."""
    parts = urlsplit(url)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme) or None


async def _close_at_loop_shutdown(session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await session.close()


def _json_codec() -> tuple[Callable[[Any], bytes], Callable[[bytes | str], Any]]:
    # orjson, where installed, encodes a request body about ten times faster; it is optional.
    try:
        import orjson
    except ImportError:
        return (
            lambda value: json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode(),
            json.loads,
        )
    return orjson.dumps, orjson.loads


_encode, _decode = _json_codec()


async def _events(response: aiohttp.ClientResponse) -> AsyncIterator[Any]:
    """The decoded ``data`` field of each event, as the server-sent-events format defines it."""
    data: list[str] = []
    async for raw in response.content:
        line = raw.decode().rstrip("\r\n")
        if line:
            field, _, value = line.partition(":")
            if field == "data":
                data.append(value.removeprefix(" "))
            continue  # comments (":..."), "event", "id" and "retry" lines carry nothing here
        if not data:
            continue
        text = "\n".join(data)
        data.clear()
        if text.startswith("[DONE]"):
            return
        yield _decode(text)
    if data and not "\n".join(data).startswith("[DONE]"):
        yield _decode("\n".join(data))


# -- failures ---------------------------------------------------------------------------------


def transport_error(exc: BaseException) -> ProviderError:
    """The typed, sanitized account of a failure below HTTP (or of an undecodable body)."""
    import aiohttp

    name = type(exc).__name__
    if isinstance(exc, TimeoutError):
        return ProviderError(ProviderFailure.TIMEOUT, f"no response within the timeout ({name})")
    if isinstance(exc, aiohttp.ClientConnectionError | aiohttp.ClientPayloadError):
        return ProviderError(ProviderFailure.UNAVAILABLE, f"could not reach the endpoint ({name})")
    if isinstance(exc, ValueError | UnicodeError):
        # ValueError covers a body that is not JSON (json.JSONDecodeError) and an over-long line.
        return ProviderError(ProviderFailure.BAD_RESPONSE, f"malformed response body ({name})")
    # Anything else from the HTTP stack is still a failure of the call, not of the caller; it
    # stays typed so that one trial cannot crash a run.
    return ProviderError(ProviderFailure.BAD_RESPONSE, f"unexpected transport failure ({name})")


async def _read_status_error(response: aiohttp.ClientResponse) -> ProviderError:
    body = await response.content.read(_MAX_ERROR_BODY)
    return status_error(response.status, body, response.headers)


def status_error(status: int, body: bytes, headers: Mapping[str, str]) -> ProviderError:
    """The typed, sanitized error for an HTTP error ``status``; ``body`` is read for its code."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "non-standard status"
    detail = f"HTTP {status} ({phrase}{safe_error_code(_error_code(body))})"
    failure = failure_for_status(status)
    advice = retry_after_s(headers)
    if advice is not None and failure.retryable:
        return RetryAfterError(failure, detail, retry_after_s=advice)
    return ProviderError(failure, detail)


def _error_code(body: bytes) -> object:
    try:
        decoded = json.loads(body)
    except ValueError:
        return None
    if not isinstance(decoded, Mapping):
        return None
    # OpenAI-style {"error": {"code": ...}}; some servers put the code at the top.
    envelope = decoded.get("error", decoded)
    return envelope.get("code") if isinstance(envelope, Mapping) else None


def failure_for_status(status: int) -> ProviderFailure:
    """The failure an HTTP error status means for a model call."""
    if status == 429:
        return ProviderFailure.RATE_LIMITED
    if status in (401, 403):
        return ProviderFailure.AUTHENTICATION
    if status == 408:
        return ProviderFailure.TIMEOUT
    if status >= 500:
        return ProviderFailure.SERVER_ERROR
    return ProviderFailure.BAD_REQUEST


def safe_error_code(code: object) -> str:
    """``", code X"`` when ``code`` is an allow-listed identifier, else nothing."""
    return f", code {code}" if isinstance(code, str) and code in SAFE_ERROR_CODES else ""


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """The provider's advice on when to retry, from ``retry-after-ms`` or ``retry-after``."""
    if headers is None:
        return None
    for header, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(header)
        try:
            seconds = float(value) * scale if value is not None else None
        except ValueError:
            continue  # an HTTP date: rare for model APIs, and the backoff covers it
        if seconds is not None and math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None

"""A fault-injecting OpenAI-compatible HTTP server for tests and benchmarks.

:class:`FakeOpenAIServer` listens on 127.0.0.1 (a free port) and answers
``POST .../chat/completions`` in the OpenAI chat-completions shape, including the Azure OpenAI
path ``/openai/deployments/{deployment}/chat/completions?api-version=...``. It is a real socket
server, so a client under test goes through its real HTTP stack (connection pool, timeouts,
status-code handling), which an in-process mock of the SDK would skip.

Each request is answered by a script:

- a sequence of :class:`FakeReply` objects, used in order, one per request;
- a callable ``(FakeRequest) -> FakeReply``, asked once per request (it runs on the server's
  thread, so keep it quick and thread-safe);
- a single :class:`FakeReply`, used for every request.

When a sequence runs out, ``fallback`` answers (by default a plain ``"ok"`` text reply).
Every request is recorded, body included, before it is answered::

    from vitrine.testing import FakeOpenAIServer, FakeReply, FakeToolCall

    script = [
        FakeReply.error(429, "slow down"),
        FakeReply.tools(FakeToolCall("search_products", {"query": "tent"})),
        FakeReply.text("Try the GLX-0001 tent."),
    ]
    with FakeOpenAIServer(script) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        ...
        assert server.request_count == 3
        assert server.requests[1].body["tools"][0]["function"]["name"] == "search_products"

Faults a reply can inject: any HTTP status with any body (``FakeReply.error``,
``FakeReply.raw``), latency before the reply (``delay_s``), a connection dropped without a
reply (``FakeReply.dropped``), tool calls whose argument text is not JSON, and usage numbers.

A request with ``"stream": true`` is answered as server-sent events, the way OpenAI streams:
the content in ``stream_chunks`` pieces (``chunk_delay_s`` apart), tool calls as deltas, a
finishing chunk, a usage chunk, then ``[DONE]``. A client that goes away mid-stream is counted
in :attr:`FakeOpenAIServer.abandoned_streams`, so a test can see that a cancelled or
timed-out request really closed its connection.

The server runs its own event loop on a background thread, so it serves synchronous and
asynchronous tests alike, and many slow requests at once: a delayed reply sleeps on that loop
without holding up other connections. Counters are guarded by a lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from types import MappingProxyType, TracebackType
from typing import Any, Self
from urllib.parse import parse_qsl, unquote, urlsplit

from vitrine.errors import InvalidArgumentError

__all__ = ["FakeOpenAIServer", "FakeReply", "FakeRequest", "FakeToolCall", "Script"]

_EMPTY: Mapping[str, str] = MappingProxyType({})
_AZURE_PATH = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)/chat/completions/?$")
_MAX_HEAD_BYTES = 64 * 1024
_MAX_BODY_BYTES = 32 * 1024 * 1024
_READ_LIMIT = 1024 * 1024


@dataclass(frozen=True, slots=True)
class FakeToolCall:
    """A tool call in a scripted reply.

    ``arguments`` given as a string is sent verbatim, so a test can send argument text that is
    not valid JSON; a mapping is encoded as JSON. ``id`` defaults to a generated one.
    """

    name: str
    arguments: str | Mapping[str, Any] = "{}"
    id: str | None = None

    def to_openai(self, fallback_id: str) -> dict[str, Any]:
        arguments = (
            self.arguments
            if isinstance(self.arguments, str)
            else json.dumps(dict(self.arguments), ensure_ascii=False)
        )
        return {
            "id": self.id or fallback_id,
            "type": "function",
            "function": {"name": self.name, "arguments": arguments},
        }


@dataclass(frozen=True, slots=True)
class FakeReply:
    """How the server answers one request.

    With ``status`` 200 and no ``body``, a chat completion is generated from ``content``,
    ``tool_calls``, the token counts and ``finish_reason``. ``body`` replaces the generated
    body entirely: a ``str`` or ``bytes`` is sent verbatim, anything else as JSON. Token counts
    of ``None`` (both) leave ``usage`` out; ``extra_usage`` adds fields such as a reported
    ``cost``. ``delay_s`` sleeps before replying; ``drop`` closes the connection instead of
    replying (after the delay).
    """

    content: str | None = "ok"
    tool_calls: tuple[FakeToolCall, ...] = ()
    prompt_tokens: int | None = 10
    completion_tokens: int | None = 5
    finish_reason: str | None = None
    model: str | None = None
    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    delay_s: float = 0.0
    drop: bool = False
    extra_usage: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    stream_chunks: int = 4
    chunk_delay_s: float = 0.0

    def __post_init__(self) -> None:
        if self.stream_chunks < 1 or self.chunk_delay_s < 0:
            raise InvalidArgumentError(
                "stream_chunks must be at least 1 and chunk_delay_s not negative"
            )
        if self.delay_s < 0:
            raise InvalidArgumentError(f"delay_s cannot be negative, got {self.delay_s}")
        if not 100 <= self.status <= 599:
            raise InvalidArgumentError(f"status must be an HTTP status code, got {self.status}")

    @classmethod
    def text(cls, content: str, **options: Any) -> FakeReply:
        """A plain assistant message."""
        return cls(content=content, **options)

    @classmethod
    def tools(cls, *calls: FakeToolCall, content: str | None = None, **options: Any) -> FakeReply:
        """An assistant message that asks for tool calls (``finish_reason`` ``tool_calls``)."""
        return cls(content=content, tool_calls=calls, **options)

    @classmethod
    def structured(cls, value: Any, **options: Any) -> FakeReply:
        """An assistant message whose content is ``value`` encoded as JSON."""
        return cls(content=json.dumps(value, ensure_ascii=False), **options)

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "",
        *,
        error_type: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> FakeReply:
        """An error in the OpenAI error envelope: ``{"error": {"message", "type", "code"}}``."""
        envelope = {
            "error": {
                "message": message or HTTPStatus(status).phrase,
                "type": error_type or ("server_error" if status >= 500 else "invalid_request"),
                "code": code,
            }
        }
        return cls(
            status=status, body=envelope, headers=headers or _EMPTY, delay_s=delay_s, content=None
        )

    @classmethod
    def raw(
        cls, status: int, body: Any, *, headers: Mapping[str, str] | None = None, delay_s: float = 0
    ) -> FakeReply:
        """Any status with any body: for malformed responses the SDK must survive."""
        return cls(status=status, body=body, headers=headers or _EMPTY, delay_s=delay_s)

    @classmethod
    def dropped(cls, *, delay_s: float = 0.0) -> FakeReply:
        """Close the connection without sending a response."""
        return cls(drop=True, delay_s=delay_s)


@dataclass(frozen=True, slots=True)
class FakeRequest:
    """One request as the server received it. ``headers`` keys are lower-case."""

    index: int
    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    raw_body: bytes
    body: Any  # the parsed JSON body, or None when it was empty or not JSON
    received_at: float  # time.monotonic() on arrival

    @property
    def deployment(self) -> str | None:
        """The Azure deployment named in the path, or None for the OpenAI path."""
        match = _AZURE_PATH.match(self.path)
        return unquote(match.group("deployment")) if match else None

    @property
    def api_version(self) -> str | None:
        return self.query.get("api-version")

    @property
    def model(self) -> str | None:
        """The model the request asked for: the body's ``model``, else the Azure deployment."""
        if isinstance(self.body, Mapping) and isinstance(self.body.get("model"), str):
            return str(self.body["model"])
        return self.deployment

    @property
    def is_chat_completion(self) -> bool:
        return self.method == "POST" and self.path.rstrip("/").endswith("/chat/completions")


Script = Callable[[FakeRequest], FakeReply] | Iterable[FakeReply] | FakeReply | None


class FakeOpenAIServer:
    """A scripted OpenAI-compatible server on 127.0.0.1; see the module docstring.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`. ``base_url`` is the
    OpenAI-style base (``http://127.0.0.1:PORT/v1``); ``endpoint`` is the bare origin an Azure
    client takes. Any path prefix before ``/chat/completions`` is accepted, so a test may put
    a marker string into the base URL and check that it never leaks.
    """

    def __init__(
        self,
        script: Script = None,
        *,
        fallback: FakeReply | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        backlog: int = 1024,
    ) -> None:
        self._lock = threading.Lock()
        self._responder: Callable[[FakeRequest], FakeReply] | None = None
        self._queue: deque[FakeReply] = deque()
        self.fallback = fallback or FakeReply()
        self.set_script(script)
        self._host = host
        self._port = port
        self._backlog = backlog
        self._requests: list[FakeRequest] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._dropped = 0
        self._abandoned = 0
        self._script_errors: list[str] = []
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._handlers: set[asyncio.Task[Any]] = set()
        self._bound_port: int | None = None

    # -- scripting ---------------------------------------------------------------------------

    def set_script(self, script: Script) -> None:
        """Replace the script; queued replies not yet used are discarded."""
        with self._lock:
            self._queue.clear()
            self._responder = None
            if isinstance(script, FakeReply):
                self.fallback = script
            elif callable(script):
                self._responder = script
            elif script is not None:
                self._queue.extend(script)

    def push(self, *replies: FakeReply) -> None:
        """Append replies to the queue, to be used before the fallback."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending_replies(self) -> int:
        with self._lock:
            return len(self._queue)

    # -- what happened -----------------------------------------------------------------------

    @property
    def requests(self) -> list[FakeRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def in_flight(self) -> int:
        """Requests received and not yet answered."""
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """The most requests that were ever being answered at once."""
        with self._lock:
            return self._max_in_flight

    @property
    def abandoned_streams(self) -> int:
        """Streams the client closed before the last event was sent."""
        with self._lock:
            return self._abandoned

    @property
    def dropped_connections(self) -> int:
        with self._lock:
            return self._dropped

    @property
    def script_errors(self) -> list[str]:
        """Exceptions raised by a callable script (each one answered with HTTP 500)."""
        with self._lock:
            return list(self._script_errors)

    def reset(self) -> None:
        """Forget recorded requests and counters; the script is kept."""
        with self._lock:
            self._requests.clear()
            self._max_in_flight = self._in_flight
            self._dropped = 0
            self._abandoned = 0
            self._script_errors.clear()

    # -- addresses ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._bound_port is None:
            raise RuntimeError("the fake server is not running: use it as a context manager")
        return self._bound_port

    @property
    def endpoint(self) -> str:
        """The origin, ``http://127.0.0.1:PORT``: what an Azure client takes as its endpoint."""
        return f"http://{self._host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"{self.endpoint}/v1"

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("the fake server is already running")
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(
                        self._connection,
                        self._host,
                        self._port,
                        backlog=self._backlog,
                        limit=_READ_LIMIT,
                    )
                )
                self._bound_port = int(self._server.sockets[0].getsockname()[1])
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self._shutdown())
                loop.close()

        self._thread = threading.Thread(target=serve, name="fake-openai-server", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]

    def stop(self) -> None:
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        self._thread = None
        self._loop = None
        self._bound_port = None

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._handlers):
            task.cancel()
        if self._handlers:
            await asyncio.gather(*self._handlers, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    # -- serving -----------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            # HTTP/1.1 keep-alive: a pooled client sends many requests on one connection.
            while await self._one_exchange(reader, writer):
                pass
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass  # the client went away mid-request; nothing to answer
        except asyncio.CancelledError:
            # Only stop() cancels a handler, and its loop is ending: finishing quietly keeps
            # asyncio's stream callback from logging every idle keep-alive connection.
            pass
        finally:
            if task is not None:
                self._handlers.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _one_exchange(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Read one request and answer it; False when the connection should close."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                raise
            return False  # a clean close between requests
        if len(head) > _MAX_HEAD_BYTES:
            await self._send(writer, 431, {"error": {"message": "headers too large"}}, _EMPTY)
            return False
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = [*lines[0].split(" ", 2), "", ""][:3]
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        body = await self._read_body(reader, headers)
        parts = urlsplit(target)
        request = self._record(method, parts.path, dict(parse_qsl(parts.query)), headers, body)
        connection = headers.get("connection", "").lower()
        keep_alive = version == "HTTP/1.1" and connection != "close"
        try:
            reply = self._reply_for(request)
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            if reply.drop:
                with self._lock:
                    self._dropped += 1
                writer.transport.abort()
                return False
            status, payload, extra = self._response(request, reply)
            if status == 200 and reply.body is None and _wants_stream(request):
                return await self._stream(writer, payload, reply)
            await self._send(writer, status, payload, extra, keep_alive=keep_alive)
        finally:
            with self._lock:
                self._in_flight -= 1
        return keep_alive

    @staticmethod
    async def _read_body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size_line = await reader.readuntil(b"\r\n")
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    await reader.readuntil(b"\r\n")  # the blank line after the last chunk
                    return b"".join(chunks)
                chunks.append(await reader.readexactly(size))
                await reader.readexactly(2)
        length = int(headers.get("content-length", "0") or 0)
        if length > _MAX_BODY_BYTES:
            raise ConnectionError("request body too large for the fake server")
        return await reader.readexactly(length) if length else b""

    def _record(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        headers: dict[str, str],
        raw_body: bytes,
    ) -> FakeRequest:
        try:
            body: Any = json.loads(raw_body) if raw_body else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        with self._lock:
            request = FakeRequest(
                len(self._requests),
                method,
                path,
                MappingProxyType(query),
                MappingProxyType(headers),
                raw_body,
                body,
                time.monotonic(),
            )
            self._requests.append(request)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        return request

    def _accepts(self, request: FakeRequest) -> bool:
        """Whether the request is for the API this server fakes (others get a 404)."""
        return request.is_chat_completion

    def _reply_for(self, request: FakeRequest) -> FakeReply:
        if not self._accepts(request):
            return FakeReply.error(404, f"no route for {request.method} {request.path}")
        with self._lock:
            responder = self._responder
            queued = self._queue.popleft() if responder is None and self._queue else None
        if queued is not None:
            return queued
        if responder is None:
            return self.fallback
        try:
            return responder(request)
        except Exception as exc:
            with self._lock:
                self._script_errors.append(f"{type(exc).__name__}: {exc}")
            return FakeReply.error(500, "the fake server's script raised an exception")

    def _response(
        self, request: FakeRequest, reply: FakeReply
    ) -> tuple[int, Any, Mapping[str, str]]:
        if reply.body is not None or reply.status != 200:
            return reply.status, reply.body, reply.headers
        number = next(self._ids)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                call.to_openai(f"call_{number}_{index}")
                for index, call in enumerate(reply.tool_calls)
            ]
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        completion: dict[str, Any] = {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model or request.model or "fake-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if reply.prompt_tokens is not None or reply.completion_tokens is not None:
            prompt, output = reply.prompt_tokens or 0, reply.completion_tokens or 0
            completion["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": output,
                "total_tokens": prompt + output,
                **reply.extra_usage,
            }
        return 200, completion, reply.headers

    async def _stream(
        self, writer: asyncio.StreamWriter, completion: Mapping[str, Any], reply: FakeReply
    ) -> bool:
        """Send ``completion`` as server-sent events; False, as the connection then closes."""
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            "Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
        )
        try:
            writer.write(head.encode("latin-1"))
            for event in _stream_events(completion, reply.stream_chunks):
                if reply.chunk_delay_s:
                    await asyncio.sleep(reply.chunk_delay_s)
                if writer.is_closing():
                    raise ConnectionResetError
                writer.write(f"data: {event}\n\n".encode())
                await writer.drain()
        except (ConnectionError, OSError):
            with self._lock:
                self._abandoned += 1
            return False
        writer.close()
        return False

    @staticmethod
    async def _send(
        writer: asyncio.StreamWriter,
        status: int,
        payload: Any,
        headers: Mapping[str, str],
        *,
        keep_alive: bool = False,
    ) -> None:
        if isinstance(payload, bytes):
            data = payload
        elif isinstance(payload, str):
            data = payload.encode()
        elif payload is None:
            data = b""
        else:
            data = json.dumps(payload, ensure_ascii=False).encode()
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Status"
        lines = [
            f"HTTP/1.1 {status} {phrase}",
            "Content-Type: application/json",
            f"Content-Length: {len(data)}",
            f"Connection: {'keep-alive' if keep_alive else 'close'}",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data)
        await writer.drain()


def _wants_stream(request: FakeRequest) -> bool:
    return isinstance(request.body, Mapping) and request.body.get("stream") is True


def _stream_events(completion: Mapping[str, Any], pieces: int) -> list[str]:
    """A completion as OpenAI's chunk sequence, ending with usage and ``[DONE]``."""
    choice = completion["choices"][0]
    message = choice["message"]
    base = {k: completion[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        body = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return json.dumps(body, ensure_ascii=False)

    events = [chunk({"role": "assistant", "content": ""})]
    content = message.get("content") or ""
    size = max(1, -(-len(content) // pieces))
    events.extend(chunk({"content": content[i : i + size]}) for i in range(0, len(content), size))
    for index, call in enumerate(message.get("tool_calls") or ()):
        function = call["function"]
        head = {"index": index, "id": call["id"], "type": "function"}
        events.append(chunk({"tool_calls": [{**head, "function": {"name": function["name"]}}]}))
        arguments = function["arguments"]
        half = len(arguments) // 2
        for part in (arguments[:half], arguments[half:]):
            events.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            )
    events.append(chunk({}, choice["finish_reason"]))
    if "usage" in completion:
        events.append(json.dumps({**base, "choices": [], "usage": completion["usage"]}))
    events.append("[DONE]")
    return events

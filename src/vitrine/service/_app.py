"""The HTTP app: ``POST /v1/chat`` streams server-sent events; ``GET /health`` says if it is ready.

Events of one chat turn, in order: ``tool.call`` (name and status of each tool the assistant
used, allow-listed and bounded), ``message.delta`` (chunks of the answer), ``message.final``
(the answer, its SKUs, the abstention flag, the session id, and the ``layer`` that produced the
answer, e.g. ``front-desk``, ``agent`` or ``workflow``). A turn that fails ends with one
``error`` event whose message is fixed text: nothing an exception says reaches a client.

What the service exposes and trusts is set by :class:`ServiceConfig`, safe by default: no
schema pages, a bare /health, unknown-persona errors that list nothing, sessions usable only
by the client address that opened them. Client addresses come from the socket; forwarded
headers are the server's business (``vitrine serve --forwarded-allow-ips``).

Everything refused before a stream starts is an ``application/problem+json`` document (RFC
9457) with a 4xx status: bad input (400, 422), an unknown persona or session (404), a body
over the size limit (413), a client over its rate (429). The request id of every response is
in ``X-Request-ID`` and in the service log, so a client and an operator can point at the same
request.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.exceptions import HTTPException

from vitrine._redact import describe_exception, sanitize_text
from vitrine.errors import ProblemError
from vitrine.service import _logsafe as logsafe
from vitrine.service._limits import Session, SessionStore, TokenBuckets
from vitrine.service._protocol import (
    Assistant,
    AssistantReply,
    AssistantUnavailable,
    UnknownPersonaError,
)

__all__ = [
    "EVENT_TYPES",
    "MAX_MESSAGE_CHARS",
    "ServiceApp",
    "ServiceConfig",
    "create_app",
]

MAX_MESSAGE_CHARS = 2000
EVENT_TYPES = ("tool.call", "message.delta", "message.final", "error")
_PROBLEM = "application/problem+json"
_TOOL_STATUSES = frozenset({"ok", "error", "refused"})
_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
_SAFE_FAILURE = "The assistant could not answer this time. Please try again in a moment."
_SAFE_TIMEOUT = "The assistant took too long to answer. Please try again."

log = logging.getLogger("vitrine.service")
logsafe.install(log)
_MAX_LOGGED_PATH = 200

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    max_body_bytes: int = 16 * 1024
    rate_capacity: float = 30.0  # burst per client
    rate_per_s: float = 10.0  # sustained requests per second per client
    max_sessions: int = 1000
    session_ttl_s: float = 1800.0
    max_turns: int = 20
    reply_timeout_s: float = 60.0
    max_tool_events: int = 32
    delta_chars: int = 48
    docs: bool = False  # serve /docs, /redoc and /openapi.json
    health_details: bool = False  # /health also reports session and request counts
    bind_sessions: bool = True  # a session answers only the client address that opened it
    sessions_per_client: int | None = 50  # one client's load evicts its own sessions first


# --- request and response documents (they are also the OpenAPI schema) ----------------------


class ChatBody(BaseModel):
    """One customer message. The first message of a session has no ``session_id``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    # The pattern puts "not blank" into the published schema, so a client generating requests
    # from it (schemathesis, a typed SDK) never sends a schema-valid message the service refuses.
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS, pattern=r"\S")
    session_id: str | None = Field(default=None, pattern=_ID_PATTERN)
    persona_id: str | None = Field(default=None, pattern=_ID_PATTERN)

    # Before the field's own constraints, so a blank message gets this sentence rather than a
    # regular-expression error. A ValueError, pydantic's contract: it answers 422 naming the field.
    @field_validator("message", mode="before")
    @classmethod
    def _not_blank(cls, value: object) -> object:
        if isinstance(value, str) and value and not value.strip():
            raise ValueError("the message is blank: say something for the assistant to answer")
        return value


class Problem(BaseModel):
    type: str
    title: str
    status: int
    detail: str
    errors: list[dict[str, str]] | None = None


class Health(BaseModel):
    status: Literal["ready", "not_ready"]
    reason: str | None = None
    assistant: dict[str, str]
    sessions: int | None = None
    requests_served: int | None = None


def _problem_body(
    status: int, kind: str, title: str, detail: str, errors: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": f"urn:vitrine:problem:{kind}",
        "title": title,
        "status": status,
        "detail": detail,
    }
    if errors is not None:
        body["errors"] = errors
    return body


def _problem_response(error: ProblemError) -> JSONResponse:
    return JSONResponse(
        _problem_body(error.status, error.kind, error.title, error.detail),
        status_code=error.status,
        media_type=_PROBLEM,
        headers=error.headers,
    )


_EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "enum": list(EVENT_TYPES)},
        "data": {"type": "string", "description": "one JSON object"},
    },
    "required": ["event", "data"],
}

_PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "description": text, "content": {_PROBLEM: {}}}
    for status, text in (
        (400, "the body cannot be read (not UTF-8 JSON)"),
        (404, "unknown persona, or unknown or expired session"),
        (409, "the session belongs to another persona"),
        (413, "request body over the size limit"),
        (422, "invalid request: wrong types, a blank or too long message"),
        (429, "rate limit exceeded; see Retry-After"),
        (503, "the assistant is not ready yet; see Retry-After"),
    )
}


# --- the app ---------------------------------------------------------------------------------


class _State:
    def __init__(self, assistant: Assistant, config: ServiceConfig) -> None:
        self.assistant = assistant
        self.config = config
        self.sessions = SessionStore(
            max_sessions=config.max_sessions,
            ttl_s=config.session_ttl_s,
            max_turns=config.max_turns,
            per_owner=config.sessions_per_client,
        )
        self.buckets = TokenBuckets(capacity=config.rate_capacity, rate=config.rate_per_s)
        self.ready = False
        self.reason: str | None = "warming up"
        self.counter = itertools.count(1)
        self.served = 0


def create_app(assistant: Assistant, config: ServiceConfig | None = None) -> ServiceApp:
    """Build the service app around one assistant; warm-up starts when the app starts."""
    state = _State(assistant, config or ServiceConfig())

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(_warm_up(state))
        try:
            yield
        finally:
            task.cancel()

    app = FastAPI(
        title="vitrine assistant service",
        version="1",
        description="A conversational assistant over server-sent events.",
        lifespan=lifespan,
        # The schema pages describe every route and field: an operator opts in to publish them.
        docs_url="/docs" if state.config.docs else None,
        redoc_url="/redoc" if state.config.docs else None,
        openapi_url="/openapi.json" if state.config.docs else None,
    )
    app.state.vitrine = state

    @app.exception_handler(ProblemError)
    async def _on_problem(_: Request, exc: ProblemError) -> JSONResponse:
        return _problem_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _on_invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {
                "field": ".".join(str(part) for part in error.get("loc", ()) if part != "body")
                or "body",
                # The message only: pydantic's error also echoes the input, which may be huge.
                "message": sanitize_text(str(error.get("msg", "invalid")), 160),
            }
            for error in exc.errors()[:10]
        ]
        return JSONResponse(
            _problem_body(
                422,
                "invalid-request",
                "Invalid request",
                "the request body does not match the chat schema",
                errors,
            ),
            status_code=422,
            media_type=_PROBLEM,
        )

    @app.exception_handler(HTTPException)
    async def _on_http(_: Request, exc: HTTPException) -> JSONResponse:
        # Starlette's own refusals (an unreadable body, a wrong method) as problem details too.
        title = "Unreadable body" if exc.status_code == 400 else "Request refused"
        return JSONResponse(
            _problem_body(exc.status_code, "http", title, sanitize_text(str(exc.detail), 160)),
            status_code=exc.status_code,
            media_type=_PROBLEM,
            headers=exc.headers,
        )

    @app.exception_handler(Exception)
    async def _on_unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected error: %s", describe_exception(exc))
        return JSONResponse(
            _problem_body(500, "internal", "Internal error", "the service failed unexpectedly"),
            status_code=500,
            media_type=_PROBLEM,
        )

    @app.get(
        "/health",
        response_model=Health,
        responses={503: {"model": Health, "description": "not ready, with the reason"}},
    )
    async def health() -> JSONResponse:
        counts: dict[str, Any] = {}
        if state.config.health_details:
            counts = {"sessions": len(state.sessions), "requests_served": state.served}
        body = Health(
            status="ready" if state.ready else "not_ready",
            reason=state.reason,
            assistant=dict(state.assistant.description),
            **counts,
        )
        # Unset fields stay out: without details the document has no counts, not nulls.
        return JSONResponse(
            body.model_dump(exclude_unset=True), status_code=200 if state.ready else 503
        )

    @app.post(
        "/v1/chat",
        response_class=StreamingResponse,
        responses={
            200: {
                "description": "server-sent events: tool.call, message.delta, message.final "
                "or error",
                # One schema per event: schema tools validate each event of the stream.
                "content": {"text/event-stream": {"schema": _EVENT_SCHEMA}},
            },
            **_PROBLEM_RESPONSES,
        },
    )
    async def chat(body: ChatBody, request: Request) -> StreamingResponse:
        if not state.ready:
            raise ProblemError(
                503,
                "not-ready",
                "Not ready",
                f"the assistant is not ready: {state.reason}",
                {"Retry-After": "2"},
            )
        session = _session_for(state, body, _client_key(request.scope))
        request_id = str(request.scope.get("state", {}).get("request_id", ""))
        return StreamingResponse(
            _events(state, session, body.message, request_id),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    return ServiceApp(app, state)


async def _warm_up(state: _State) -> None:
    try:
        reason = await state.assistant.warm_up()
    except Exception as exc:
        log.error("warm-up failed: %s", describe_exception(exc))
        reason = "the assistant failed to start; see the service log"
    state.ready = reason is None
    state.reason = reason
    log.info("service %s", "ready" if state.ready else f"not ready: {reason}")


def _session_for(state: _State, body: ChatBody, client: str) -> Session:
    if body.session_id is not None:
        # Another client's session is reported exactly like a missing one: whether an id
        # exists is not something a stranger may learn.
        session = state.sessions.get(
            body.session_id, client if state.config.bind_sessions else None
        )
        if session is None:
            raise ProblemError(
                404,
                "unknown-session",
                "Unknown session",
                "no such session: it never existed or it expired; start a new one without "
                "session_id",
            )
        if body.persona_id is not None and body.persona_id != session.persona_id:
            raise ProblemError(
                409,
                "persona-mismatch",
                "Persona mismatch",
                "a session keeps the persona it was opened with; start a new session to "
                "change persona",
            )
        return session
    try:
        state.assistant.check_persona(body.persona_id)
    except UnknownPersonaError as exc:
        detail = f"unknown persona {exc.persona_id!r}"
        if exc.known:  # the assistant lists them only when its operator allowed it
            detail += "; known personas: " + ", ".join(exc.known[:20])
        # 404, like an unknown session: the request is well formed but names nothing we have.
        raise ProblemError(404, "unknown-persona", "Unknown persona", detail) from None
    return state.sessions.create(body.persona_id, client)


def _client_key(scope: Scope) -> str:
    client = scope.get("client") or ("unknown", 0)
    return str(client[0])


def _sse(event: str, data: dict[str, Any]) -> bytes:
    # One JSON line per event: JSON never contains a raw newline, so the framing holds.
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


async def _events(
    state: _State, session: Session, message: str, request_id: str
) -> AsyncIterator[bytes]:
    config = state.config
    # One turn at a time per session: a second concurrent turn would see half a conversation.
    async with session.lock:
        # The message joins the conversation only once it is answered: a failed turn, or one
        # whose client went away (the stream is cancelled), leaves the session as it was.
        turns = state.sessions.conversation(session, message)
        started = time.perf_counter()
        try:
            reply = await asyncio.wait_for(
                state.assistant.reply(session.persona_id, turns), config.reply_timeout_s
            )
        except Exception as exc:
            safe = _safe_message(exc)
            log.warning(
                "request %s session %s turn failed: %s", request_id, session.id, _log_reason(exc)
            )
            yield _sse("error", {"message": safe, "session_id": session.id})
            return
        elapsed_ms = round((time.perf_counter() - started) * 1000, 1)
        for event in _tool_events(state, reply):
            yield _sse("tool.call", event)
        for chunk in _chunks(reply.answer, config.delta_chars):
            yield _sse("message.delta", {"text": chunk})
        state.sessions.add_turn(session, message)
        yield _sse(
            "message.final",
            {
                **reply.facts,
                "answer": reply.answer,
                "skus": list(reply.items),
                "abstained": reply.abstained,
                "layer": reply.layer,
                "session_id": session.id,
                "persona_id": session.persona_id,
                "turn": len(turns),
                "request_id": request_id,
                "tool_calls": len(reply.tool_calls),
                "elapsed_ms": elapsed_ms,
            },
        )


def _tool_events(state: _State, reply: AssistantReply) -> list[dict[str, Any]]:
    allowed = state.assistant.tool_names
    shown = reply.tool_calls[: state.config.max_tool_events]
    events: list[dict[str, Any]] = [
        {
            "name": call.name if call.name in allowed else "other",
            "status": call.status if call.status in _TOOL_STATUSES else "other",
            "index": index,
        }
        for index, call in enumerate(shown)
    ]
    if len(reply.tool_calls) > len(shown) and events:
        events[-1]["truncated"] = len(reply.tool_calls) - len(shown)
    return events


def _chunks(text: str, size: int) -> list[str]:
    """Split at whitespace into pieces of about ``size`` characters; joined, they are ``text``."""
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            space = text.rfind(" ", start + 1, end)
            end = space + 1 if space > start else end
        pieces.append(text[start:end])
        start = end
    return pieces


def _safe_message(exc: BaseException) -> str:
    if isinstance(exc, AssistantUnavailable):
        return sanitize_text(exc.safe_message, 200)
    if isinstance(exc, TimeoutError):
        return _SAFE_TIMEOUT
    return _SAFE_FAILURE


def _log_reason(exc: BaseException) -> str:
    return "timed out" if isinstance(exc, TimeoutError) else describe_exception(exc)


# --- the served app: request ids, the access log, body size and rate limits -----------------


class ServiceApp:
    """The served ASGI app: the FastAPI routes behind a guard.

    The guard is pure ASGI, so streaming responses pass through untouched (no buffering).

    It reads a bounded request body before the app sees it: a body over the limit is refused
    with 413 whether or not the client declared its length.
    """

    def __init__(self, app: FastAPI, state: _State) -> None:
        self.app = app
        self.state = state

    @property
    def ready(self) -> bool:
        return self.state.ready

    async def warm_up(self) -> None:
        """Make the assistant ready now; in-process clients call it because they run no lifespan."""
        await _warm_up(self.state)

    def openapi(self) -> dict[str, Any]:
        return self.app.openapi()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        number = next(self.state.counter)
        request_id = f"r{number:06d}-{secrets.token_hex(3)}"
        scope.setdefault("state", {})["request_id"] = request_id
        status: list[int] = []

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode()))
                message["headers"] = headers
            await send(message)

        refusal = self._refusal(scope, _client_key(scope))
        started = time.perf_counter()
        try:
            if refusal is not None:
                await _problem_response(refusal)(scope, receive, send_with_id)
                return
            body = await _read_bounded(receive, self.state.config.max_body_bytes)
            if body is None:
                too_big = ProblemError(
                    413,
                    "body-too-large",
                    "Request body too large",
                    f"the body is over {self.state.config.max_body_bytes} bytes",
                )
                await _problem_response(too_big)(scope, receive, send_with_id)
                return
            await self.app(scope, _replay(body, receive), send_with_id)
        finally:
            self.state.served += 1
            log.info(
                "request %s %s %s -> %s in %.1f ms",
                request_id,
                scope.get("method", ""),
                str(scope.get("path", ""))[:_MAX_LOGGED_PATH],
                status[0] if status else "-",
                (time.perf_counter() - started) * 1000,
            )

    def _refusal(self, scope: Scope, client: str) -> ProblemError | None:
        if scope.get("path") == "/health":
            return None  # readiness probes must not be throttled into "not ready"
        declared = _content_length(scope)
        if declared is not None and declared > self.state.config.max_body_bytes:
            return ProblemError(
                413,
                "body-too-large",
                "Request body too large",
                f"the body is over {self.state.config.max_body_bytes} bytes",
            )
        wait = self.state.buckets.take(client)
        if wait > 0:
            seconds = TokenBuckets.retry_after(wait)
            return ProblemError(
                429,
                "rate-limited",
                "Too many requests",
                f"this client is over its request rate; retry in {seconds} s",
                {"Retry-After": str(seconds)},
            )
        return None


def _content_length(scope: Scope) -> int | None:
    headers: Sequence[tuple[bytes, bytes]] = scope.get("headers", ())
    for key, value in headers:
        if key.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _read_bounded(receive: Receive, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = bytes(message.get("body", b""))
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: the disconnect notice, when it comes

    return replay

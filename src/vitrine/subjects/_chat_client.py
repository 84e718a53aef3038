"""A synchronous client for chat endpoints over HTTP, for tests: sessions, turns, transcripts.

The client speaks to any endpoint through a :class:`ChatAdapter`, which says where to POST,
what body a turn sends, and how a plain JSON reply reads as events. Whatever the endpoint, a
:class:`Turn` holds the same vocabulary of events: ``message.final`` (its ``answer``, and
whatever else the endpoint reports), ``message.delta``, ``tool.call`` and ``error``.

- :class:`ServiceChatAdapter` (the default) speaks the protocol of ``vitrine serve``:
  ``POST /v1/chat`` streaming server-sent events, ``persona_id`` in the first request, then
  the ``session_id`` from ``message.final``; ``GET /health`` says whether it is ready.
- :class:`JsonChatAdapter` speaks to an endpoint that answers each POST with one JSON object:
  the answer (and, optionally, a session id) are read from it by JSON pointer.

Only the standard library is imported here; httpx is imported when a client is made.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from vitrine.errors import InvalidArgumentError, NotFoundError, ServiceUnavailable

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ChatAdapter",
    "ChatClient",
    "ChatSession",
    "Event",
    "JsonChatAdapter",
    "ServiceChatAdapter",
    "ServiceUnavailable",
    "Transcript",
    "Turn",
    "parse_sse",
]

DEFAULT_TIMEOUT_S = 60.0
_MAX_RATE_RETRIES = 3
_MAX_RETRY_WAIT_S = 5.0
_DETAIL_LIMIT = 400
FINAL_EVENT = "message.final"


@dataclass(frozen=True, slots=True)
class Event:
    type: str
    data: dict[str, Any]


@dataclass(slots=True)
class Turn:
    """One request and what came back: the events of a stream, or a problem document."""

    message: str
    status_code: int
    request_id: str | None
    events: list[Event] = field(default_factory=list)
    problem: dict[str, Any] | None = None

    @property
    def final(self) -> dict[str, Any] | None:
        finals = [e.data for e in self.events if e.type == FINAL_EVENT]
        return finals[-1] if finals else None

    @property
    def answer(self) -> str:
        return str((self.final or {}).get("answer", ""))

    @property
    def skus(self) -> list[str]:
        """The catalogue items the final answer names (``skus``), when the endpoint reports them."""
        return [str(s) for s in (self.final or {}).get("skus", [])]

    @property
    def abstained(self) -> bool:
        return bool((self.final or {}).get("abstained", False))

    @property
    def layer(self) -> str | None:
        """Which layer of the service produced the answer (``front-desk``, ``agent``...)."""
        value = (self.final or {}).get("layer")
        return None if value is None else str(value)

    @property
    def session_id(self) -> str | None:
        final = self.final or next((e.data for e in self.events if e.type == "error"), {})
        value = final.get("session_id")
        return None if value is None else str(value)

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return [e.data for e in self.events if e.type == "tool.call"]

    @property
    def deltas(self) -> str:
        return "".join(
            str(e.data.get("text", "")) for e in self.events if e.type == "message.delta"
        )

    @property
    def errors(self) -> list[str]:
        return [str(e.data.get("message", "")) for e in self.events if e.type == "error"]


@dataclass(slots=True)
class Transcript:
    persona_id: str | None
    turns: list[Turn] = field(default_factory=list)

    @property
    def last(self) -> Turn:
        if not self.turns:
            raise NotFoundError("the transcript has no turns: nothing was sent")
        return self.turns[-1]

    @property
    def answer(self) -> str:
        return self.last.answer

    @property
    def skus(self) -> list[str]:
        return self.last.skus

    @property
    def all_skus(self) -> list[str]:
        return list(dict.fromkeys(s for turn in self.turns for s in turn.skus))

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return [call for turn in self.turns for call in turn.tool_calls]


@runtime_checkable
class ChatAdapter(Protocol):
    """How one kind of chat endpoint is spoken to. ``health_path`` None: it has no health check."""

    @property
    def path(self) -> str: ...

    @property
    def health_path(self) -> str | None: ...

    def request_body(self, message: str, context: str | None, session_id: str | None) -> Any:
        """The JSON body of one turn: ``context`` opens a conversation, ``session_id`` continues
        one (at most one of them is given)."""
        ...

    def json_events(self, data: Any) -> list[Event] | None:
        """The events a plain JSON 200 reply stands for; None: it is a problem document."""
        ...


@dataclass(frozen=True, slots=True)
class ServiceChatAdapter:
    """The protocol of ``vitrine serve``: SSE on ``POST /v1/chat``, sessions by id."""

    path: str = "/v1/chat"
    health_path: str | None = "/health"

    def request_body(self, message: str, context: str | None, session_id: str | None) -> Any:
        body: dict[str, Any] = {"message": message}
        if session_id is not None:
            body["session_id"] = session_id
        elif context is not None:
            body["persona_id"] = context
        return body

    def json_events(self, data: Any) -> list[Event] | None:
        return None  # the service answers a turn only with a stream


@dataclass(frozen=True, slots=True)
class JsonChatAdapter:
    """An endpoint answering each POST with one JSON object, e.g. ``{"reply": {"text": ...}}``.

    The request is ``{message_key: message}``, plus ``{context_key: context}`` on the first turn
    and ``{session_key: id}`` on later ones (each only when its key is set). The answer is read
    at the JSON pointer ``answer`` and the session id at ``session``; the whole reply is kept in
    the final event under ``reply``.
    """

    path: str = "/chat"
    message_key: str = "message"
    answer: str = "/answer"
    context_key: str | None = None
    session_key: str | None = None
    session: str | None = None
    health_path: str | None = None

    def request_body(self, message: str, context: str | None, session_id: str | None) -> Any:
        body: dict[str, Any] = {self.message_key: message}
        if session_id is not None and self.session_key:
            body[self.session_key] = session_id
        elif context is not None and self.context_key:
            body[self.context_key] = context
        return body

    def json_events(self, data: Any) -> list[Event] | None:
        final: dict[str, Any] = {"reply": data}
        answer = _pointer(data, self.answer)
        if answer is not None:
            final["answer"] = answer if isinstance(answer, str) else json.dumps(answer)
        if self.session:
            session = _pointer(data, self.session)
            if session is not None:
                final["session_id"] = str(session)
        return [Event(FINAL_EVENT, final)]


def _pointer(document: Any, pointer: str) -> Any:
    """The value at a JSON pointer (RFC 6901), or None when nothing is there."""
    value = document
    for raw in pointer[1:].split("/") if pointer else ():
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, Mapping):
            value = value.get(token)
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            return None
    return value


def parse_sse(lines: Iterator[str]) -> Iterator[Event]:
    """Events from server-sent-event lines; an event without JSON data keeps its raw text."""
    name = "message"
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                raw = "\n".join(data)
                try:
                    payload = json.loads(raw)
                except json.JSONDecodeError:
                    payload = {"raw": raw}
                yield Event(name, payload if isinstance(payload, dict) else {"value": payload})
            name, data = "message", []
        elif line.startswith(":"):
            continue  # a comment line (keep-alive)
        else:
            key, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
    if data:
        yield Event(name, {"raw": "\n".join(data), "incomplete": True})


class ChatSession:
    """A conversation with the service; the first send opens it, later sends continue it."""

    def __init__(self, client: ChatClient, persona_id: str | None) -> None:
        self._client = client
        self.transcript = Transcript(persona_id)
        self.session_id: str | None = None

    def send(self, message: str) -> Turn:
        opening = self.transcript.persona_id if self.session_id is None else None
        body = self._client.adapter.request_body(message, opening, self.session_id)
        turn = self._client.post_chat(body, message=message)
        self.transcript.turns.append(turn)
        if self.session_id is None:
            self.session_id = turn.session_id
        return turn


class ChatClient:
    """Real HTTP to a chat endpoint, through httpx; ``chat(context, *messages)`` runs a session.

    ``context`` opens the conversation (a persona id for ``vitrine serve``); the adapter
    (default :class:`ServiceChatAdapter`) says how the endpoint is spoken to.
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        adapter: ChatAdapter | None = None,
    ) -> None:
        import httpx

        self.base_url = base_url.rstrip("/")
        self.adapter: ChatAdapter = adapter or ServiceChatAdapter()
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout_s)
        self._log: list[Turn] | None = None

    def record_into(self, log: list[Turn] | None) -> None:
        """Append every turn sent from now on to ``log`` (None: stop recording)."""
        self._log = log

    def close(self) -> None:
        self._http.close()

    def __call__(self, persona_id: str | None, *messages: str) -> Transcript:
        if not messages:
            raise InvalidArgumentError(
                "send at least one message: an empty conversation tests nothing"
            )
        session = self.session(persona_id)
        for message in messages:
            session.send(message)
        return session.transcript

    def session(self, persona_id: str | None) -> ChatSession:
        return ChatSession(self, persona_id)

    def health(self) -> tuple[int, dict[str, Any]]:
        """The health check's status and body; (200, {}) for an endpoint that has none."""
        import httpx

        if self.adapter.health_path is None:
            return 200, {}
        try:
            response = self._http.get(self.adapter.health_path, timeout=5.0)
        except httpx.HTTPError as exc:
            raise ServiceUnavailable(f"{type(exc).__name__}") from exc
        try:
            body = response.json()
        except ValueError:
            body = {}
        return response.status_code, body if isinstance(body, dict) else {}

    def post_chat(self, body: Any, *, message: str | None = None) -> Turn:
        """POST one turn and capture what came back; a raw string body is sent as given.

        ``message`` is the user's text the turn records (by default the body's ``message``).
        """
        if message is None:
            message = str(body.get("message", "")) if isinstance(body, dict) else str(body)
        for attempt in range(_MAX_RATE_RETRIES + 1):
            turn, retry_after = self._post_once(body, message)
            if turn.status_code != 429 or attempt == _MAX_RATE_RETRIES:
                if self._log is not None:
                    self._log.append(turn)
                return turn
            # A polite client waits as told; the limit protects the service, not the test.
            time.sleep(min(_MAX_RETRY_WAIT_S, retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    def _post_once(self, body: Any, message: str) -> tuple[Turn, float]:
        kwargs: dict[str, Any] = (
            {"content": body, "headers": {"content-type": "application/json"}}
            if isinstance(body, str)
            else {"json": body}
        )
        with self._http.stream("POST", self.adapter.path, **kwargs) as response:
            turn = Turn(message, response.status_code, response.headers.get("x-request-id"))
            content_type = response.headers.get("content-type", "")
            if response.status_code == 200 and content_type.startswith("text/event-stream"):
                turn.events.extend(parse_sse(response.iter_lines()))
            else:
                response.read()
                self._read_document(turn, response)
            retry = _retry_after(response)
        return turn, retry

    def _read_document(self, turn: Turn, response: httpx.Response) -> None:
        """A JSON 200 the adapter understands becomes events; anything else is the problem."""
        try:
            data = response.json()
        except ValueError:
            turn.problem = {"text": response.text[:_DETAIL_LIMIT]}
            return
        events = self.adapter.json_events(data) if response.status_code == 200 else None
        if events is None:
            turn.problem = data if isinstance(data, dict) else {"value": data}
        else:
            turn.events.extend(events)


def _retry_after(response: httpx.Response) -> float:
    try:
        return max(0.0, float(response.headers.get("retry-after", "1")))
    except ValueError:
        return 1.0

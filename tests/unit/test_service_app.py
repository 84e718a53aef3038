"""The service app in-process: events, sessions, problem details, limits and a schema fuzz."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import httpx
import pytest

from vitrine.pytest_plugin import parse_sse
from vitrine.service._app import ServiceApp, ServiceConfig, create_app
from vitrine.service._protocol import AssistantReply, ToolEvent, UnknownPersonaError

LEAKY = "boom at https://api.example.com/v1 with api_key=sk-abcdefghijklmnopqrstuvwx"


class FakeAssistant:
    """Echoes the conversation so a test can see what the service handed over."""

    def __init__(
        self, *, tools: int = 2, fail: BaseException | None = None, list_personas: bool = False
    ) -> None:
        self.tools = tools
        self.fail = fail
        self.list_personas = list_personas
        self.seen: list[tuple[str | None, tuple[str, ...]]] = []

    @property
    def description(self) -> dict[str, str]:
        return {"subject": "fake"}

    @property
    def tool_names(self) -> frozenset[str]:
        return frozenset({"search"})

    def check_persona(self, persona_id: str | None) -> None:
        if persona_id not in (None, "ann", "bob"):
            raise UnknownPersonaError(str(persona_id), ["ann", "bob"] if self.list_personas else [])

    async def warm_up(self) -> str | None:
        return None

    async def reply(self, persona_id: str | None, user_turns: Sequence[str]) -> AssistantReply:
        self.seen.append((persona_id, tuple(user_turns)))
        if self.fail is not None:
            raise self.fail
        calls = tuple(
            ToolEvent("search" if i % 2 == 0 else "secret_tool", "ok" if i % 3 else "weird")
            for i in range(self.tools)
        )
        answer = f"turn {len(user_turns)}: " + " | ".join(user_turns) + " GLX-0001"
        return AssistantReply(answer, ("GLX-0001",), False, calls, layer="fake-layer")


async def _ready(assistant: FakeAssistant, **config: float) -> ServiceApp:
    app = create_app(assistant, ServiceConfig(**config))  # type: ignore[arg-type]
    await app.warm_up()
    return app


async def _post(app: ServiceApp, body: object, **kwargs: object) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://service") as client:
        if isinstance(body, bytes):
            return await client.post("/v1/chat", content=body, **kwargs)  # type: ignore[arg-type]
        return await client.post("/v1/chat", json=body, **kwargs)  # type: ignore[arg-type]


def _events(response: httpx.Response) -> list[tuple[str, dict[str, object]]]:
    return [(e.type, e.data) for e in parse_sse(iter(response.text.split("\n")))]


async def test_a_turn_streams_tool_calls_then_deltas_then_the_final_message() -> None:
    app = await _ready(FakeAssistant())
    response = await _post(app, {"message": "hello there", "persona_id": "ann"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = _events(response)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "tool.call" and kinds[-1] == "message.final"
    final = events[-1][1]
    deltas = "".join(str(data["text"]) for kind, data in events if kind == "message.delta")
    assert deltas == final["answer"]
    assert final["skus"] == ["GLX-0001"] and final["abstained"] is False
    assert final["request_id"] == response.headers["x-request-id"]


async def test_the_final_message_names_the_layer_that_answered() -> None:
    app = await _ready(FakeAssistant())
    final = _events(await _post(app, {"message": "hello there"}))[-1][1]
    assert final["layer"] == "fake-layer"


async def test_a_later_turn_sees_the_earlier_turns_of_its_session() -> None:
    assistant = FakeAssistant()
    app = await _ready(assistant)
    first = _events(await _post(app, {"message": "budget CHF 250", "persona_id": "bob"}))[-1][1]
    second = await _post(app, {"message": "and now?", "session_id": first["session_id"]})
    assert _events(second)[-1][1]["turn"] == 2
    assert assistant.seen[-1] == ("bob", ("budget CHF 250", "and now?"))


async def test_tool_events_are_allow_listed_and_bounded() -> None:
    app = await _ready(FakeAssistant(tools=40), max_tool_events=32)
    calls = [d for k, d in _events(await _post(app, {"message": "hi"})) if k == "tool.call"]
    assert len(calls) == 32
    assert {c["name"] for c in calls} == {"search", "other"}
    assert {c["status"] for c in calls} == {"ok", "other"}
    assert calls[-1]["truncated"] == 8


async def test_a_failing_assistant_ends_the_stream_with_a_safe_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assistant = FakeAssistant(fail=RuntimeError(LEAKY))
    app = await _ready(assistant)
    with caplog.at_level(logging.WARNING, logger="vitrine.service"):
        response = await _post(app, {"message": "hello", "persona_id": "ann"})
    events = _events(response)
    assert [kind for kind, _ in events] == ["error"]
    message = str(events[0][1]["message"])
    assert "example.com" not in message and "sk-" not in message and "Traceback" not in message
    assert "example.com" not in caplog.text and "sk-abc" not in caplog.text
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize(
    ("body", "status", "kind"),
    [
        ({"message": "hi", "persona_id": "zed"}, 404, "unknown-persona"),
        ({"message": "   "}, 422, "invalid-request"),
        ({"message": 5}, 422, "invalid-request"),
        ({"message": "hi", "extra": True}, 422, "invalid-request"),
        ({"message": "x" * 2001}, 422, "invalid-request"),
        ({"message": "hi", "session_id": "s-nope"}, 404, "unknown-session"),
        (b"{not json", 422, "invalid-request"),
    ],
)
async def test_bad_requests_get_problem_details(body: object, status: int, kind: str) -> None:
    app = await _ready(FakeAssistant())
    response = await _post(app, body)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["type"] == f"urn:vitrine:problem:{kind}" and problem["status"] == status
    assert "Traceback" not in response.text


async def test_a_session_keeps_its_persona() -> None:
    app = await _ready(FakeAssistant())
    first = _events(await _post(app, {"message": "hi", "persona_id": "ann"}))[-1][1]
    response = await _post(
        app, {"message": "hi", "session_id": first["session_id"], "persona_id": "bob"}
    )
    assert response.status_code == 409


@pytest.mark.parametrize("declared", [True, False])
async def test_a_body_over_the_limit_is_refused(declared: bool) -> None:
    app = await _ready(FakeAssistant(), max_body_bytes=1024)
    body = json.dumps({"message": "x" * 1500}).encode()

    async def chunks():  # no Content-Length: the limit must hold on the bytes read
        yield body[:700]
        yield body[700:]

    content: object = body if declared else chunks()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://service") as client:
        response = await client.post("/v1/chat", content=content)  # type: ignore[arg-type]
    assert response.status_code == 413
    assert response.json()["type"] == "urn:vitrine:problem:body-too-large"


async def test_a_client_over_its_rate_gets_429_with_retry_after() -> None:
    app = await _ready(FakeAssistant(), rate_capacity=2, rate_per_s=0.5)
    statuses = [(await _post(app, {"message": "hi"})).status_code for _ in range(2)]
    refused = await _post(app, {"message": "hi"})
    assert statuses == [200, 200]
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1


async def test_chat_before_warm_up_is_503_and_health_says_why() -> None:
    app = create_app(FakeAssistant())
    response = await _post(app, {"message": "hi"})
    assert response.status_code == 503 and "retry-after" in response.headers
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://service") as client:
        health = await client.get("/health")
    assert health.status_code == 503 and health.json()["reason"] == "warming up"


async def test_a_blank_message_is_refused_in_words_not_as_a_regex_error() -> None:
    app = await _ready(FakeAssistant())
    response = await _post(app, {"message": " \t "})
    assert response.status_code == 422
    assert "the message is blank" in response.text
    assert "pattern" not in response.text


def test_the_repeat_owned_regression_is_refused_for_the_workflow_with_a_reason() -> None:
    from vitrine.service._protocol import ServiceOptions
    from vitrine_shop.served_assistant import create_assistant

    with pytest.raises(ValueError, match="--architecture agent"):
        create_assistant(
            ServiceOptions(suite_options={"architecture": "workflow", "regress": "repeat-owned"})
        )
    options = ServiceOptions(suite_options={"regress": "broken-model", "front_desk": False})
    assert create_assistant(options).description["front_desk"] == "off"
    with pytest.raises(ValueError, match="has no option frontdesk"):
        create_assistant(ServiceOptions(suite_options={"frontdesk": False}))

"""AnthropicModel through the official SDK against a local fake of the Messages API."""

from __future__ import annotations

import json
import traceback

import pytest

from vitrine._redact import forget_secrets
from vitrine.providers._base import (
    ChatMessage,
    ChatRequest,
    Provenance,
    ProviderError,
    ProviderFailure,
    ResponseFormat,
    ToolCallRequest,
    ToolSpec,
)
from vitrine.providers._config import ProviderConfig, create_chat_model, readiness
from vitrine.providers._retry import ProviderBackoff, record_attempts
from vitrine.testing import FakeReply, FakeToolCall
from vitrine.testing._anthropic_server import FakeAnthropicServer

pytest.importorskip("anthropic")

_KEY = "sk-ant-canary-0a1b2c3d4e5f"
_BODY = "CANARY-ANTHROPIC-BODY-4410"
_TOOL = ToolSpec(
    "search_products",
    "Search the catalogue.",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


@pytest.fixture(autouse=True)
def _no_leftover_secrets():
    yield
    forget_secrets()


def _model(server, **env):
    environ = {"ANTHROPIC_API_KEY": _KEY, "ANTHROPIC_BASE_URL": server.endpoint, **env}
    config = ProviderConfig.from_env("anthropic", environ=environ)
    assert readiness(config).ready
    return create_chat_model(config)


def test_anthropic_without_a_key_is_not_ready_and_names_the_variable():
    state = readiness(ProviderConfig.from_env("anthropic", environ={}))
    assert not state.ready
    assert state.missing == ("ANTHROPIC_API_KEY",)
    assert state.paid


async def test_a_conversation_with_tools_is_translated_both_ways():
    reply = FakeReply.tools(
        FakeToolCall("search_products", {"query": "rain jacket"}, id="toolu_1"),
        content="Looking.",
        prompt_tokens=210,
        completion_tokens=33,
    )
    with FakeAnthropicServer(reply) as server:
        model = _model(server, ANTHROPIC_MODEL="claude-test")
        request = ChatRequest(
            (
                ChatMessage("system", "You are a shop assistant."),
                ChatMessage("user", "A jacket?"),
                ChatMessage("assistant", None, (ToolCallRequest("t0", "get_profile", "{}"),)),
                ChatMessage("tool", '{"name": "Nadia"}', tool_call_id="t0", name="get_profile"),
            ),
            tools=(_TOOL,),
            max_output_tokens=300,
        )
        completion = await model.complete(request)
        sent = server.requests[0]
    body = sent.body
    assert any(_KEY in value for value in sent.headers.values())  # the SDK's own auth header
    assert body["model"] == "claude-test" and body["max_tokens"] == 300
    assert body["system"] == "You are a shop assistant."
    assert body["tool_choice"] == {"type": "auto"}
    assert body["tools"][0]["input_schema"]["required"] == ["query"]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"][0] == {
        "type": "tool_use",
        "id": "t0",
        "name": "get_profile",
        "input": {},
    }
    assert body["messages"][2]["content"][0]["type"] == "tool_result"
    assert completion.content == "Looking."
    assert [(c.id, c.name, c.parsed_arguments()) for c in completion.tool_calls] == [
        ("toolu_1", "search_products", {"query": "rain jacket"})
    ]
    assert completion.finish_reason == "tool_calls"
    assert completion.usage is not None
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (210, 33)
    assert model.provenance is Provenance.PAID


async def test_a_structured_request_carries_its_schema_as_an_instruction():
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    with FakeAnthropicServer(FakeReply.structured({"ok": True})) as server:
        request = ChatRequest(
            (ChatMessage("user", "ok?"),), response_format=ResponseFormat("probe", schema)
        )
        completion = await _model(server).complete(request)
        body = server.requests[0].body
    assert "response_format" not in body
    assert json.dumps(schema, separators=(",", ":")) in body["system"]
    assert json.loads(completion.content or "") == {"ok": True}


async def test_an_overload_is_retried_and_recorded_then_recovers():
    overloaded = FakeReply.error(529, _BODY, headers={"retry-after": "0"})
    with FakeAnthropicServer([overloaded, FakeReply.text("fine")]) as server:
        model = _model(server, VITRINE_PROVIDER_MAX_RETRIES="2")
        with record_attempts() as attempts:
            completion = await model.complete(ChatRequest((ChatMessage("user", "hi"),)))
        assert server.request_count == 2
    assert completion.content == "fine"
    assert [a.outcome.value for a in attempts] == ["provider_failure", "usable"]
    assert attempts[0].failure is ProviderFailure.SERVER_ERROR


async def test_a_rejected_key_is_a_typed_failure_that_quotes_nothing():
    with FakeAnthropicServer(FakeReply.error(401, _BODY)) as server:
        model = _model(server)
        with pytest.raises(ProviderError) as caught:
            await model.complete(ChatRequest((ChatMessage("user", "hi"),)))
        assert server.request_count == 1  # authentication is not retried
        port = str(server.port)
    error = caught.value
    assert error.failure is ProviderFailure.AUTHENTICATION
    rendered = "".join(traceback.format_exception(error)) + repr(model)
    for canary in (_BODY, _KEY, port):
        assert canary not in rendered


async def test_a_reply_without_text_or_tool_use_is_a_bad_response():
    with FakeAnthropicServer(FakeReply.raw(200, {"content": [], "stop_reason": "end_turn"})) as s:
        model = create_chat_model(
            ProviderConfig.from_env(
                "anthropic",
                environ={
                    "ANTHROPIC_API_KEY": _KEY,
                    "ANTHROPIC_BASE_URL": s.endpoint,
                    "VITRINE_PROVIDER_MAX_RETRIES": "0",
                },
            )
        )
        with pytest.raises(ProviderError) as caught:
            await model.complete(ChatRequest((ChatMessage("user", "hi"),)))
    assert caught.value.failure is ProviderFailure.BAD_RESPONSE
    assert ProviderBackoff().max_retries == 3  # the default policy is untouched by the config

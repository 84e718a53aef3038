"""OpenAICompatibleModel against a real HTTP server: parsing, retries, failures, secrecy."""

from __future__ import annotations

import asyncio
import json
import logging
import traceback

import pytest

from vitrine._bench.response import AttemptOutcome, StageStatus, TokenUsage
from vitrine._redact import describe_exception, forget_secrets, sanitize_text
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
from vitrine.providers._openai_compat import OpenAICompatibleModel
from vitrine.providers._retry import (
    ProviderAttempt,
    ProviderBackoff,
    attempt_census,
    record_attempts,
)
from vitrine.testing import FakeOpenAIServer, FakeReply, FakeToolCall

_FAST = ProviderBackoff(max_retries=3, base_delay_s=0.01, max_delay_s=0.05)
_CANARY_KEY = "sk-canary-7f3e9a1c2b4d6e8f0a1b"
_CANARY_PATH = "canarypath5d1e"
_CANARY_BODY = "CANARY-BODY-91b7 internal upstream detail"
_TOOL = ToolSpec(
    "search_products",
    "Search the catalogue.",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


@pytest.fixture(autouse=True)
def _no_leftover_secrets():
    yield
    forget_secrets()


def _model(server: FakeOpenAIServer, **options) -> OpenAICompatibleModel:
    options.setdefault("retry", _FAST)
    options.setdefault("timeout_s", 5.0)
    return OpenAICompatibleModel(
        "gpt-test", api_key="sk-test-key-0000", base_url=server.base_url, **options
    )


async def _until_received(server: FakeOpenAIServer) -> None:
    # The server runs on its own thread; polling its counter is the simplest cross-thread wait.
    for _ in range(500):
        if server.request_count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the server never received the request")


def _ask(text: str = "hi", **options) -> ChatRequest:
    return ChatRequest((ChatMessage("user", text),), **options)


async def test_text_completion_carries_content_usage_and_model():
    with FakeOpenAIServer(FakeReply.text("hello", prompt_tokens=12, completion_tokens=4)) as s:
        completion = await _model(s).complete(_ask())
    assert completion.content == "hello"
    assert completion.tool_calls == ()
    assert completion.usage == TokenUsage(12, 4, None)
    assert completion.finish_reason == "stop"
    assert completion.model == "gpt-test"


async def test_a_reported_cost_is_kept_and_none_is_never_estimated():
    script = [
        FakeReply.text("a", extra_usage={"cost": 0.0042}),
        FakeReply.text("b", prompt_tokens=None, completion_tokens=None),
    ]
    with FakeOpenAIServer(script) as s:
        model = _model(s)
        reported = await model.complete(_ask())
        absent = await model.complete(_ask())
    assert reported.usage == TokenUsage(10, 5, 0.0042)
    assert absent.usage is None


async def test_tool_calls_are_parsed_and_malformed_arguments_pass_through_as_text():
    reply = FakeReply.tools(
        FakeToolCall("search_products", {"query": "tent"}, id="call-a"),
        FakeToolCall("search_products", '{"query": "tent', id="call-b"),
    )
    with FakeOpenAIServer([reply]) as s:
        completion = await _model(s).complete(_ask(tools=(_TOOL,), purpose="agent"))
        sent = s.requests[0].body
    assert sent["tools"] == [_TOOL.to_openai()]
    first, second = completion.tool_calls
    assert first == ToolCallRequest("call-a", "search_products", '{"query": "tent"}')
    assert first.parsed_arguments() == {"query": "tent"}
    assert second.arguments == '{"query": "tent'
    assert completion.finish_reason == "tool_calls"


async def test_the_conversation_is_sent_in_openai_shape():
    call = ToolCallRequest("call-1", "search_products", '{"query": "x"}')
    messages = (
        ChatMessage("system", "be brief"),
        ChatMessage("user", "find x"),
        ChatMessage("assistant", None, (call,)),
        ChatMessage("tool", '{"status": "ok"}', tool_call_id="call-1", name="search_products"),
    )
    with FakeOpenAIServer() as s:
        await _model(s).complete(ChatRequest(messages, temperature=0.0))
        body = s.requests[0].body
    assert body["messages"] == [m.to_openai() for m in messages]
    assert body["temperature"] == 0.0
    assert body["model"] == "gpt-test"


async def test_structured_output_sends_the_schema_and_returns_the_json():
    strict = {
        "type": "object",
        "properties": {"covered": {"type": "boolean"}},
        "required": ["covered"],
        "additionalProperties": False,
    }
    loose = {"type": "object", "properties": {"covered": {"type": "boolean"}}}
    script = [FakeReply.structured({"covered": True}), FakeReply.structured({"covered": False})]
    with FakeOpenAIServer(script) as s:
        model = _model(s)
        first = await model.complete(_ask(response_format=ResponseFormat("Review", strict)))
        await model.complete(_ask(response_format=ResponseFormat("Review", loose)))
        strict_sent, loose_sent = (r.body["response_format"] for r in s.requests)
    assert json.loads(first.content or "") == {"covered": True}
    assert strict_sent == {
        "type": "json_schema",
        "json_schema": {"name": "Review", "schema": strict, "strict": True},
    }
    # Strict mode would reject optional properties with HTTP 400; the schema still goes along.
    assert loose_sent["json_schema"]["strict"] is False
    assert loose_sent["json_schema"]["schema"] == loose


async def test_the_output_ceiling_caps_the_request_and_uses_the_configured_field():
    with FakeOpenAIServer() as s:
        capped = _model(s, max_output_tokens=1200)
        await capped.complete(_ask(max_output_tokens=4000))
        await capped.complete(_ask(max_output_tokens=50))
        legacy = _model(s, token_limit_parameter="max_tokens")
        await legacy.complete(_ask(max_output_tokens=300))
        bodies = [r.body for r in s.requests]
    assert bodies[0]["max_completion_tokens"] == 1200
    assert bodies[1]["max_completion_tokens"] == 50
    assert bodies[2]["max_tokens"] == 300
    assert "max_completion_tokens" not in bodies[2]


async def test_a_rate_limit_then_success_is_recovered_and_every_attempt_recorded():
    seen: list[ProviderAttempt] = []
    with FakeOpenAIServer([FakeReply.error(429, "slow down"), FakeReply.text("fine")]) as s:
        model = _model(s, on_attempt=seen.append)
        with record_attempts() as attempts:
            completion = await model.complete(_ask(purpose="Ranker"))
        assert s.request_count == 2
    assert completion.content == "fine"
    assert [a.outcome for a in attempts] == [AttemptOutcome.PROVIDER_FAILURE, AttemptOutcome.USABLE]
    assert attempts[0].failure is ProviderFailure.RATE_LIMITED
    assert attempts[0].retry_delay_s is not None
    assert attempts[1].retry_delay_s is None
    assert {a.purpose for a in attempts} == {"Ranker"}
    assert seen == attempts
    assert attempt_census("Ranker", attempts).status is StageStatus.RECOVERED


async def test_retry_after_advice_is_honoured_up_to_the_policy_cap():
    policy = ProviderBackoff(max_retries=1, base_delay_s=0.0, max_delay_s=0.15, jitter=0.0)
    script = [FakeReply.error(429, headers={"Retry-After": "30"}), FakeReply.text("ok")]
    with FakeOpenAIServer(script) as s, record_attempts() as attempts:
        await _model(s, retry=policy).complete(_ask())
    assert attempts[0].retry_delay_s == pytest.approx(0.15)


async def test_repeated_server_errors_end_in_server_error_after_max_retries():
    with FakeOpenAIServer(FakeReply.error(500, "boom")) as s:
        with record_attempts() as attempts, pytest.raises(ProviderError) as caught:
            await _model(s).complete(_ask())
        assert s.request_count == _FAST.max_retries + 1
    assert caught.value.failure is ProviderFailure.SERVER_ERROR
    assert caught.value.retryable
    assert "HTTP 500" in str(caught.value)
    assert len(attempts) == 4
    assert all(a.outcome is AttemptOutcome.PROVIDER_FAILURE for a in attempts)
    assert attempts[-1].retry_delay_s is None
    assert attempt_census("s", attempts).status is StageStatus.UNRECOVERED


@pytest.mark.parametrize(
    ("status", "failure"),
    [
        (400, ProviderFailure.BAD_REQUEST),
        (401, ProviderFailure.AUTHENTICATION),
        (403, ProviderFailure.AUTHENTICATION),
        (404, ProviderFailure.BAD_REQUEST),
        (422, ProviderFailure.BAD_REQUEST),
    ],
)
async def test_client_errors_are_typed_and_never_retried(status, failure):
    with FakeOpenAIServer(FakeReply.error(status)) as s:
        with pytest.raises(ProviderError) as caught:
            await _model(s).complete(_ask())
        assert s.request_count == 1
    assert caught.value.failure is failure
    assert f"HTTP {status}" in caught.value.safe_detail


async def test_an_allow_listed_error_code_is_kept():
    reply = FakeReply.error(400, "filtered", code="content_filter")
    with FakeOpenAIServer([reply]) as s, pytest.raises(ProviderError) as caught:
        await _model(s).complete(_ask())
    assert "code content_filter" in str(caught.value)


async def test_a_slow_endpoint_times_out_as_timeout():
    with FakeOpenAIServer(FakeReply.text("late", delay_s=2.0)) as s:
        model = _model(s, timeout_s=0.2, retry=ProviderBackoff(max_retries=0))
        with pytest.raises(ProviderError) as caught:
            await model.complete(_ask())
    assert caught.value.failure is ProviderFailure.TIMEOUT
    assert caught.value.retryable


async def test_a_dropped_connection_is_unavailable_and_retried():
    script = [FakeReply.dropped(), FakeReply.text("back")]
    with FakeOpenAIServer(script) as s, record_attempts() as attempts:
        completion = await _model(s).complete(_ask())
    assert completion.content == "back"
    assert attempts[0].failure is ProviderFailure.UNAVAILABLE


@pytest.mark.parametrize(
    "reply",
    [
        FakeReply.raw(200, {"id": "x", "object": "chat.completion", "model": "m", "choices": []}),
        FakeReply(content=None),
        FakeReply.raw(200, "this is not json"),
    ],
    ids=["empty-choices", "no-content-no-tools", "not-json"],
)
async def test_unusable_responses_are_bad_response_and_not_retried(reply):
    with FakeOpenAIServer(reply) as s:
        with pytest.raises(ProviderError) as caught:
            await _model(s).complete(_ask())
        assert s.request_count == 1
    assert caught.value.failure is ProviderFailure.BAD_RESPONSE
    assert not caught.value.retryable


async def test_cancellation_propagates_and_is_recorded():
    with FakeOpenAIServer(FakeReply.text("never", delay_s=5.0)) as s:
        model = _model(s)

        async def call() -> list[ProviderAttempt]:
            with record_attempts() as attempts:
                try:
                    await model.complete(_ask())
                finally:
                    recorded.extend(attempts)
            return attempts

        recorded: list[ProviderAttempt] = []
        task = asyncio.create_task(call())
        await _until_received(s)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert [a.outcome for a in recorded] == [AttemptOutcome.CANCELLED]


async def test_cancellation_during_backoff_propagates():
    policy = ProviderBackoff(max_retries=2, base_delay_s=5.0, max_delay_s=5.0)
    with FakeOpenAIServer(FakeReply.error(503)) as s:
        task = asyncio.create_task(_model(s, retry=policy).complete(_ask()))
        await _until_received(s)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert s.request_count == 1


async def test_concurrent_calls_on_one_model_each_record_only_their_own_attempts():
    def script(request):
        text = request.body["messages"][0]["content"]
        if text.startswith("flaky") and "retried" not in flaky_seen:
            flaky_seen.add("retried")
            return FakeReply.error(429)
        return FakeReply.text(text, delay_s=0.05)

    flaky_seen: set[str] = set()
    with FakeOpenAIServer(script) as s:
        model = _model(s)

        async def one(text: str) -> int:
            with record_attempts() as attempts:
                completion = await model.complete(_ask(text))
            assert completion.content == text
            return len(attempts)

        counts = await asyncio.gather(one("flaky"), *(one(f"plain-{i}") for i in range(20)))
    assert counts == [2] + [1] * 20


async def test_azure_requests_use_the_deployment_path_api_version_and_api_key_header():
    with FakeOpenAIServer(FakeReply.text("azure ok")) as s:
        model = OpenAICompatibleModel(
            "shop-deployment",
            api_key="azure-key-123456",
            azure_endpoint=s.endpoint,
            api_version="2024-10-21",
            retry=_FAST,
        )
        completion = await model.complete(_ask())
        request = s.requests[0]
    assert completion.content == "azure ok"
    assert request.deployment == "shop-deployment"
    assert request.api_version == "2024-10-21"
    assert request.headers["api-key"] == "azure-key-123456"
    assert model.model_id == "azure:shop-deployment"


async def test_a_canary_key_endpoint_and_error_body_never_surface(caplog):
    caplog.set_level(logging.DEBUG)
    script = [
        FakeReply.error(500, _CANARY_BODY, code=_CANARY_BODY),
        FakeReply.error(400, _CANARY_BODY),
    ]
    with FakeOpenAIServer(script) as s:
        base_url = f"{s.endpoint}/{_CANARY_PATH}/v1"
        model = OpenAICompatibleModel(
            "gpt-test",
            api_key=_CANARY_KEY,
            base_url=base_url,
            retry=ProviderBackoff(max_retries=1, base_delay_s=0.0),
        )
        with record_attempts() as attempts, pytest.raises(ProviderError) as caught:
            await model.complete(_ask())
        assert s.request_count == 2
        assert s.requests[0].path == f"/{_CANARY_PATH}/v1/chat/completions"
        host = s.endpoint.removeprefix("http://")
    error = caught.value
    assert error.failure is ProviderFailure.BAD_REQUEST
    # No chained SDK exception: a printed traceback must not carry the raw body either.
    assert error.__cause__ is None and error.__context__ is None
    surfaces = [
        str(error),
        repr(error),
        error.safe_detail,
        describe_exception(error),
        "".join(traceback.format_exception(error)),
        repr(model),
        model.model_id,
        json.dumps([a.to_dict() for a in attempts]),
        caplog.text,
        sanitize_text(f"{_CANARY_KEY} at {base_url}"),
    ]
    for text in surfaces:
        for canary in (_CANARY_KEY, _CANARY_PATH, "CANARY-BODY", host):
            assert canary not in text, (canary, text)


async def test_an_unreachable_canary_host_never_surfaces(caplog):
    caplog.set_level(logging.DEBUG)
    host = "canary-host-3c9d.invalid"
    model = OpenAICompatibleModel(
        "gpt-test",
        api_key=_CANARY_KEY,
        base_url=f"http://{host}/v1",
        timeout_s=2.0,
        retry=ProviderBackoff(max_retries=0),
    )
    with pytest.raises(ProviderError) as caught:
        await model.complete(_ask())
    assert caught.value.failure in (ProviderFailure.UNAVAILABLE, ProviderFailure.TIMEOUT)
    for text in (str(caught.value), describe_exception(caught.value), caplog.text):
        assert "canary-host" not in text
        assert _CANARY_KEY not in text


def test_model_identity_and_provenance_follow_the_configuration():
    paid = OpenAICompatibleModel("gpt-x", api_key="sk-test-key-0000")
    free = OpenAICompatibleModel(
        "llama", api_key="none", base_url="http://127.0.0.1:1/v1", provenance=Provenance.LOCAL
    )
    assert (paid.model_id, paid.provenance) == ("openai:gpt-x", Provenance.PAID)
    assert free.provenance is Provenance.LOCAL
    assert "sk-test" not in repr(paid)


async def test_the_key_travels_as_a_bearer_token_and_never_as_an_azure_header():
    with FakeOpenAIServer(FakeReply.text("ok")) as s:
        model = _model(s)
        for _ in range(3):
            await model.complete(_ask())
        await model.aclose()
        headers = [r.headers for r in s.requests]
    assert {h["authorization"] for h in headers} == {"Bearer sk-test-key-0000"}
    assert all("api-key" not in h for h in headers)


def test_contradictory_or_empty_settings_are_refused():
    with pytest.raises(ValueError, match="either base_url"):
        OpenAICompatibleModel("m", api_key="k", base_url="http://a/v1", azure_endpoint="http://b")
    with pytest.raises(ValueError, match="api_version"):
        OpenAICompatibleModel("deployment", api_key="k", azure_endpoint="https://r.example")
    with pytest.raises(ValueError, match="model"):
        OpenAICompatibleModel("", api_key="k")
    with pytest.raises(ValueError, match="timeout"):
        OpenAICompatibleModel("m", api_key="k", timeout_s=0)


def test_the_backoff_grows_exponentially_within_the_jitter_band_and_the_cap():
    policy = ProviderBackoff(base_delay_s=1.0, max_delay_s=6.0, jitter=0.5)
    for retry, ceiling in ((1, 1.0), (2, 2.0), (3, 4.0), (4, 6.0), (9, 6.0)):
        for _ in range(50):
            assert ceiling * 0.5 <= policy.delay_s(retry) <= ceiling
    with pytest.raises(ValueError):
        ProviderBackoff(jitter=2.0)
    with pytest.raises(ValueError):
        policy.delay_s(0)

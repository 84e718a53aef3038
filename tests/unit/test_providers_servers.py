"""OpenAI-compatible servers as users run them: tool_choice, the structured-output ladder and
its probe, and streaming that closes an abandoned request."""

from __future__ import annotations

import asyncio
import json

import pytest

from vitrine._redact import forget_secrets
from vitrine.providers._base import (
    ChatMessage,
    ChatRequest,
    Provenance,
    ProviderError,
    ProviderFailure,
    ResponseFormat,
    ToolSpec,
)
from vitrine.providers._capabilities import probe_structured_output
from vitrine.providers._openai_compat import OpenAICompatibleModel
from vitrine.providers._retry import ProviderBackoff, record_attempts
from vitrine.testing import FakeOpenAIServer, FakeReply, FakeToolCall

_TOOL = ToolSpec(
    "search_products",
    "Search the catalogue.",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)
_SCHEMA = {
    "type": "object",
    "properties": {"pick": {"type": "string"}},
    "required": ["pick"],
    "additionalProperties": False,
}
_STRUCTURED = ChatRequest(
    (ChatMessage("user", "pick one"),), response_format=ResponseFormat("ranker", _SCHEMA)
)


@pytest.fixture(autouse=True)
def _no_leftover_secrets():
    yield
    forget_secrets()


def _model(server: FakeOpenAIServer, **options) -> OpenAICompatibleModel:
    options.setdefault("retry", ProviderBackoff(max_retries=2, base_delay_s=0.01, max_delay_s=0.02))
    options.setdefault("timeout_s", 5.0)
    return OpenAICompatibleModel(
        "small-model",
        api_key="not-needed",
        base_url=server.base_url,
        provenance=Provenance.LOCAL,
        **options,
    )


async def test_offered_tools_always_come_with_tool_choice_auto():
    with FakeOpenAIServer(FakeReply.tools(FakeToolCall("search_products", {"query": "tent"}))) as s:
        request = ChatRequest((ChatMessage("user", "tent?"),), tools=(_TOOL,))
        completion = await _model(s).complete(request)
        assert s.requests[0].body["tool_choice"] == "auto"
    assert completion.tool_calls[0].name == "search_products"


async def test_a_request_without_tools_sends_no_tool_choice():
    with FakeOpenAIServer(FakeReply.text("hi")) as s:
        await _model(s).complete(ChatRequest((ChatMessage("user", "hi"),)))
        assert "tool_choice" not in s.requests[0].body


async def test_json_object_mode_carries_the_schema_and_instructs_the_model():
    with FakeOpenAIServer(FakeReply.structured({"pick": "a"})) as s:
        await _model(s, structured_output="json_object").complete(_STRUCTURED)
        body = s.requests[0].body
    assert body["response_format"] == {"type": "json_object", "schema": _SCHEMA}
    assert body["messages"][0]["role"] == "system"
    assert json.dumps(_SCHEMA, separators=(",", ":")) in body["messages"][0]["content"]


async def test_prompt_mode_sends_no_response_format_but_the_schema_as_an_instruction():
    with FakeOpenAIServer(FakeReply.structured({"pick": "a"})) as s:
        completion = await _model(s, structured_output="prompt").complete(_STRUCTURED)
        body = s.requests[0].body
    assert "response_format" not in body
    assert '"pick"' in body["messages"][0]["content"]
    assert json.loads(completion.content or "") == {"pick": "a"}


async def test_the_probe_climbs_down_once_per_rung_and_never_retries_an_unsupported_shape():
    def server_like_llama_cpp(request):
        kind = (request.body.get("response_format") or {}).get("type")
        if kind == "json_schema":
            return FakeReply.error(500, "Input should be 'text' or 'json_object'")
        return FakeReply.structured({"ok": True})

    with FakeOpenAIServer(server_like_llama_cpp) as s:
        model = _model(s)
        with record_attempts() as attempts:
            probe = await probe_structured_output(model)
        kinds = [(r.body.get("response_format") or {}).get("type") for r in s.requests]
    assert kinds == ["json_schema", "json_object"]
    assert probe.mode == "json_object" == model.structured_output
    assert probe.to_dict()["refused"] == [{"mode": "json_schema", "failure": "server_error"}]
    assert [a.retry_delay_s for a in attempts] == [None, None]


async def test_the_probe_falls_back_to_the_prompt_rung_when_no_response_format_is_taken():
    def strict_server(request):
        if "response_format" in request.body:
            return FakeReply.error(400, "response_format is not supported")
        return FakeReply.text('{"ok": true}')

    with FakeOpenAIServer(strict_server) as s:
        probe = await probe_structured_output(_model(s))
        assert s.request_count == 3
    assert probe.mode == "prompt"
    assert [mode for mode, _ in probe.refused] == ["json_schema", "json_object"]


async def test_the_probe_reports_an_unreachable_server_instead_of_choosing_a_mode():
    with FakeOpenAIServer(FakeReply.error(401, "bad key")) as s:
        model = _model(s)
        with pytest.raises(ProviderError) as caught:
            await probe_structured_output(model)
        assert s.request_count == 1
    assert caught.value.failure is ProviderFailure.AUTHENTICATION
    assert model.structured_output == "json_schema"


async def test_a_request_offering_tools_is_not_streamed_because_servers_cannot_choose_then():
    reply = FakeReply.tools(FakeToolCall("search_products", {"query": "tent"}))
    with FakeOpenAIServer(reply) as s:
        request = ChatRequest((ChatMessage("user", "tent?"),), tools=(_TOOL,))
        completion = await _model(s, stream=True).complete(request)
        body = s.requests[0].body
    assert "stream" not in body
    assert completion.tool_calls[0].name == "search_products"


async def test_streamed_tool_call_deltas_are_assembled_with_the_content_and_usage():
    reply = FakeReply.tools(
        FakeToolCall("search_products", {"query": "rain jacket"}),
        content="Let me look.",
        prompt_tokens=120,
        completion_tokens=17,
    )
    with FakeOpenAIServer(reply) as s:
        # Straight to the streamed path: servers that stream tool calls (vLLM, OpenAI) send
        # them as deltas split across chunks.
        model = _model(s, stream=True)
        request = ChatRequest((ChatMessage("user", "jacket?"),), tools=(_TOOL,))
        arguments = model._arguments(request, "json_schema")
        completion = await model._streamed_attempt(arguments)
        body = s.requests[0].body
    assert body["stream"] is True
    assert completion.content == "Let me look."
    assert [(c.name, c.parsed_arguments()) for c in completion.tool_calls] == [
        ("search_products", {"query": "rain jacket"})
    ]
    assert completion.finish_reason == "tool_calls"
    assert completion.usage is not None
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (120, 17)


async def test_a_timed_out_stream_closes_its_connection_so_the_server_stops_generating():
    slow = FakeReply.text("x" * 200, stream_chunks=200, chunk_delay_s=0.05)
    with FakeOpenAIServer(slow) as s:
        model = _model(s, stream=True, timeout_s=0.3, retry=ProviderBackoff(max_retries=0))
        with pytest.raises(ProviderError) as caught:
            await model.complete(ChatRequest((ChatMessage("user", "go"),)))
        for _ in range(500):  # the server notices at its next write, one chunk later
            if s.abandoned_streams:
                break
            await asyncio.sleep(0.02)
        assert s.abandoned_streams == 1
    assert caught.value.failure is ProviderFailure.TIMEOUT


async def test_a_cancelled_stream_closes_its_connection():
    slow = FakeReply.text("y" * 200, stream_chunks=200, chunk_delay_s=0.05)
    with FakeOpenAIServer(slow) as s:
        model = _model(s, stream=True)
        task = asyncio.create_task(model.complete(ChatRequest((ChatMessage("user", "go"),))))
        for _ in range(500):  # until the server is streaming to us
            if s.request_count:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(500):  # the server notices at its next write, one chunk later
            if s.abandoned_streams:
                break
            await asyncio.sleep(0.02)
        assert s.abandoned_streams == 1


async def test_a_stream_that_finishes_without_any_content_delta_is_an_empty_answer():
    events = [
        {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant"}}]},
        {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    reply = FakeReply.raw(200, body, headers={"Content-Type": "text/event-stream"})
    with FakeOpenAIServer(reply) as s:
        completion = await _model(s, stream=True).complete(ChatRequest((ChatMessage("user", "x"),)))
    assert completion.content == ""
    assert completion.tool_calls == ()
    assert completion.usage is None  # not reported, so not invented


async def test_a_stream_that_ends_without_finishing_is_a_bad_response():
    chunk = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}
    body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n"
    reply = FakeReply.raw(200, body, headers={"Content-Type": "text/event-stream"})
    with FakeOpenAIServer(reply) as s:
        model = _model(s, stream=True, retry=ProviderBackoff(max_retries=0))
        with pytest.raises(ProviderError) as caught:
            await model.complete(ChatRequest((ChatMessage("user", "x"),)))
    assert caught.value.failure is ProviderFailure.BAD_RESPONSE


async def test_tool_parameters_sent_to_a_free_server_carry_no_regex_its_grammar_cannot_compile():
    patterned = ToolSpec(
        "get_product",
        "Look up one product.",
        {
            "type": "object",
            "properties": {"sku": {"type": "string", "pattern": "^GLX-\\d{4}$"}},
            "required": ["sku"],
        },
    )
    request = ChatRequest((ChatMessage("user", "GLX-2005?"),), tools=(patterned,))
    with FakeOpenAIServer(FakeReply.text("ok")) as s:
        await _model(s).complete(request)
        free = s.requests[0].body["tools"][0]["function"]["parameters"]
        paid = OpenAICompatibleModel(
            "m", api_key="k", base_url=s.base_url, retry=ProviderBackoff(max_retries=0)
        )
        await paid.complete(request)
        kept = s.requests[1].body["tools"][0]["function"]["parameters"]
    assert free["properties"]["sku"] == {"type": "string"}
    assert kept["properties"]["sku"]["pattern"] == "^GLX-\\d{4}$"


async def test_a_tool_only_assistant_turn_reaches_a_free_server_with_empty_text_not_null():
    from vitrine.providers._base import ToolCallRequest

    turn = ChatMessage("assistant", None, (ToolCallRequest("c1", "search_products", "{}"),))
    result = ChatMessage("tool", "[]", tool_call_id="c1", name="search_products")
    request = ChatRequest((ChatMessage("user", "tent?"), turn, result), tools=(_TOOL,))
    with FakeOpenAIServer(FakeReply.text("ok")) as s:
        await _model(s).complete(request)
        sent = s.requests[0].body["messages"][1]
    assert sent["content"] == ""
    assert sent["tool_calls"][0]["function"]["name"] == "search_products"

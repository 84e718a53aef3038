"""instrument_openai: an agent on the raw OpenAI SDK, evaluated with no hand instrumentation.

Every test drives a real ``openai.OpenAI`` or ``openai.AsyncOpenAI`` client against the
loopback FakeOpenAIServer, so the SDK's own HTTP stack, retries and stream parsing run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest

import vitrine
from vitrine import (
    Arm,
    BenchmarkDefinition,
    Case,
    ChanceFloor,
    Observation,
    SubjectResponse,
    admit,
    check,
    tracing,
)
from vitrine.adapters import instrument_openai, recorded_tool
from vitrine.store import load_run
from vitrine.testing import FakeOpenAIServer, FakeReply, FakeRequest, FakeToolCall

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
CITIES = {"paris": "Paris", "rome": "Rome"}


@check("answered")
def answered(case, response):
    return Observation.measured(bool(response.answer), passed=bool(response.answer))


def definition(*case_ids: str) -> BenchmarkDefinition:
    return BenchmarkDefinition(
        "weather",
        "1.0.0",
        cases=[Case(case_id, CITIES.get(case_id, case_id)) for case_id in case_ids or CITIES],
        checks=[admit(answered, ChanceFloor.not_derivable("a deterministic predicate"))],
    )


def weather_script(request: FakeRequest) -> FakeReply:
    """Ask for the weather of the user's city, then answer with what the tool said."""
    messages = request.body["messages"]
    if messages[-1]["role"] == "tool":
        return FakeReply.text(f"Forecast: {messages[-1]['content']}")
    city = messages[0]["content"]
    return FakeReply.tools(FakeToolCall("weather", {"city": city}, id=f"call-{city}"))


def forecast(city: str) -> str:
    return f"sunny in {city}"


def sync_agent(client: openai.OpenAI) -> Callable[[Case], SubjectResponse]:
    def agent(case: Case) -> SubjectResponse:
        messages: list[Any] = [{"role": "user", "content": case.input}]
        while True:
            reply = client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS)
            message = reply.choices[0].message
            if not message.tool_calls:
                return SubjectResponse(answer=message.content)
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                result = forecast(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

    return agent


def async_agent(client: openai.AsyncOpenAI) -> Callable[[Case], Any]:
    async def agent(case: Case) -> SubjectResponse:
        messages: list[Any] = [{"role": "user", "content": case.input}]
        while True:
            reply = await client.chat.completions.create(
                model="gpt-test", messages=messages, tools=TOOLS
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return SubjectResponse(answer=message.content)
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                result = forecast(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

    return agent


def stored(result: Any, case_id: str) -> dict[str, Any]:
    """The response of ``case_id`` as the sealed run on disk holds it."""
    (run,) = result.runs
    return dict(load_run(run.run_dir).responses[case_id])


def assert_paired(response: dict[str, Any], city: str) -> None:
    """The tool call of ``city`` carries its own arguments and its own result."""
    (call,) = [c for c in response["tool_calls"] if c["arguments"] == {"city": city}]
    assert call["name"] == "weather"
    assert call["status"] == "ok"
    assert call["result_summary"] == f"sunny in {city}"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(weather_script) as fake:
        yield fake


@pytest.fixture
def exported():
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    assert tracing.setup(tracing.TraceSettings("http://127.0.0.1:9/v1/traces"), exporter=exporter)
    yield exporter
    tracing.shutdown()


# -- the agent loop, with nothing instrumented by hand ---------------------------------------


def test_a_sync_agent_loop_yields_tool_calls_and_model_calls_in_the_stored_rows(server, tmp_path):
    client = instrument_openai(openai.OpenAI(base_url=server.base_url, api_key="test"))
    result = vitrine.evaluate(definition(), Arm("agent", sync_agent(client)), store=tmp_path)

    for case_id, city in CITIES.items():
        response = stored(result, case_id)
        assert response["answer_preview"] == f"Forecast: sunny in {city}"
        assert_paired(response, city)
        calls = response["model_calls"]
        assert [c["finish_reason"] for c in calls] == ["tool_calls", "stop"]
        assert {c["model"] for c in calls} == {"gpt-test"}
        assert all(c["sdk_retries"] == 0 and c["error"] is None for c in calls)
        assert all(c["input_tokens"] == 10 and c["output_tokens"] == 5 for c in calls)
        assert all(c["latency_ms"] > 0 for c in calls)
        assert response["usage"]["input_tokens"] == 20
        assert response["provenance"] == "offline-deterministic"
    assert server.request_count == 4


def test_an_async_agent_loop_yields_the_same_rows(server, tmp_path):
    client = instrument_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="test"))
    result = vitrine.evaluate(definition(), Arm("agent", async_agent(client)), store=tmp_path)

    for case_id, city in CITIES.items():
        response = stored(result, case_id)
        assert_paired(response, city)
        assert [c["finish_reason"] for c in response["model_calls"]] == ["tool_calls", "stop"]


def test_concurrent_trials_never_mix_their_journals(server):
    client = instrument_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="test"))
    cases = {f"city-{n}": f"City{n}" for n in range(12)}
    CITIES.update(cases)
    try:
        result = vitrine.evaluate(
            definition(*cases), Arm("agent", async_agent(client)), concurrency=12
        )
    finally:
        for key in cases:
            del CITIES[key]
    (run,) = result.runs
    for case_id, city in cases.items():
        assert_paired(dict(run.responses[case_id]), city)
        assert len(run.responses[case_id]["model_calls"]) == 2


def test_outside_a_trial_the_client_records_nothing_and_works_as_before(server):
    client = instrument_openai(openai.OpenAI(base_url=server.base_url, api_key="test"))
    reply = client.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "Oslo"}]
    )
    assert reply.choices[0].message.tool_calls[0].function.name == "weather"
    assert vitrine.adapters.current_journal() is None


def test_instrumenting_twice_changes_nothing_and_copies_share_the_instrumentation(server):
    client = openai.OpenAI(base_url=server.base_url, api_key="test")
    assert instrument_openai(client) is client
    transport = client._client._transport
    instrument_openai(client)
    assert client._client._transport is transport
    copy = client.with_options(timeout=5.0)
    result = vitrine.evaluate(definition("paris"), Arm("agent", sync_agent(copy)))
    assert len(result.runs[0].responses["paris"]["model_calls"]) == 2


def test_instrument_openai_refuses_what_is_not_an_openai_client():
    with pytest.raises(vitrine.errors.WrongTypeError, match=r"openai\.OpenAI"):
        instrument_openai(object())  # type: ignore[type-var]


# -- the SDK's own retries ----------------------------------------------------------------


def _one_call_arm(client: Any) -> Arm:
    async def one(case: Case) -> SubjectResponse:
        reply = client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": case.input}]
        )
        if asyncio.iscoroutine(reply):
            reply = await reply
        return SubjectResponse(answer=reply.choices[0].message.content)

    return Arm("one", one)


@pytest.mark.parametrize("kind", [openai.OpenAI, openai.AsyncOpenAI])
def test_a_500_absorbed_by_max_retries_shows_one_sdk_retry(kind):
    with FakeOpenAIServer([FakeReply.error(500)], fallback=FakeReply.text("fine")) as server:
        client = instrument_openai(kind(base_url=server.base_url, api_key="t", max_retries=2))
        result = vitrine.evaluate(definition("paris"), _one_call_arm(client), retries=0)
        assert server.request_count == 2
    response = result.runs[0].responses["paris"]
    (call,) = response["model_calls"]
    assert call["sdk_retries"] == 1
    assert call["error"] is None
    assert call["finish_reason"] == "stop"
    assert response["answer_preview"] == "fine"


def test_a_500_the_sdk_gives_up_on_is_one_failed_call():
    with FakeOpenAIServer(FakeReply.error(500)) as server:
        client = instrument_openai(openai.OpenAI(base_url=server.base_url, api_key="t"))
        client = client.with_options(max_retries=1)
        journal_seen: list[Any] = []

        def one(case: Case) -> SubjectResponse:
            try:
                client.chat.completions.create(model="gpt-test", messages=[])
            except openai.InternalServerError:
                journal_seen.extend(vitrine.adapters.current_journal().model_calls)
            return SubjectResponse(answer="gave up")

        vitrine.evaluate(definition("paris"), Arm("one", one), retries=0)
        assert server.request_count == 2
    (call,) = journal_seen
    assert call.error == "HTTP 500"
    assert call.sdk_retries == 1
    assert call.input_tokens is None


# -- the Responses API ----------------------------------------------------------------------


class FakeResponsesServer(FakeOpenAIServer):
    """The fake server, also answering ``POST /v1/responses`` (replies given as raw bodies)."""

    def _accepts(self, request: FakeRequest) -> bool:
        return request.path.rstrip("/").endswith(("/chat/completions", "/responses"))


def responses_script(request: FakeRequest) -> FakeReply:
    items = request.body["input"]
    usage = {"input_tokens": 12, "output_tokens": 4, "total_tokens": 16}
    base = {"id": "resp-1", "object": "response", "model": "gpt-test", "usage": usage}
    if isinstance(items, list) and items[-1].get("type") == "function_call_output":
        text = {"type": "output_text", "text": f"Forecast: {items[-1]['output']}"}
        message = {"type": "message", "role": "assistant", "content": [text]}
        return FakeReply.raw(200, {**base, "status": "completed", "output": [message]})
    call = {
        "type": "function_call",
        "call_id": "fc-1",
        "name": "weather",
        "arguments": json.dumps({"city": items[0]["content"]}),
    }
    return FakeReply.raw(200, {**base, "status": "completed", "output": [call]})


def test_the_responses_api_is_recorded_and_its_tool_outputs_paired():
    with FakeResponsesServer(responses_script) as server:
        client = instrument_openai(openai.OpenAI(base_url=server.base_url, api_key="t"))

        def agent(case: Case) -> SubjectResponse:
            items: list[Any] = [{"role": "user", "content": case.input}]
            while True:
                reply = client.responses.create(model="gpt-test", input=items, tools=[])
                calls = [item for item in reply.output if item.type == "function_call"]
                if not calls:
                    return SubjectResponse(answer=reply.output_text)
                for call in calls:
                    items.append(call.model_dump(exclude_none=True))
                    result = forecast(**json.loads(call.arguments))
                    items.append(
                        {"type": "function_call_output", "call_id": call.call_id, "output": result}
                    )

        result = vitrine.evaluate(definition("paris"), Arm("agent", agent))
    response = dict(result.runs[0].responses["paris"])
    assert response["answer_preview"] == "Forecast: sunny in Paris"
    assert_paired(response, "Paris")
    calls = response["model_calls"]
    assert [c["finish_reason"] for c in calls] == ["completed", "completed"]
    assert [c["input_tokens"] for c in calls] == [12, 12]


def test_a_streamed_responses_call_is_read_from_its_final_event():
    call = {"type": "function_call", "call_id": "fc-9", "name": "weather"}
    call["arguments"] = json.dumps({"city": "Paris"})
    final = {"id": "r-1", "object": "response", "model": "gpt-test-2026", "status": "completed"}
    final.update(output=[call], usage={"input_tokens": 3, "output_tokens": 2})
    events = [
        {"type": "response.created", "response": {**final, "status": "in_progress"}},
        {"type": "response.completed", "response": final},
    ]
    sse = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    with FakeResponsesServer(FakeReply.raw(200, sse)) as server:
        client = instrument_openai(openai.OpenAI(base_url=server.base_url, api_key="t"))

        def agent(case: Case) -> SubjectResponse:
            kinds = [
                e.type for e in client.responses.create(model="gpt-test", input="hi", stream=True)
            ]
            return SubjectResponse(answer=" ".join(kinds))

        result = vitrine.evaluate(definition("paris"), Arm("agent", agent))
    response = result.runs[0].responses["paris"]
    assert response["answer_preview"] == "response.created response.completed"
    (model_call,) = response["model_calls"]
    assert (model_call["input_tokens"], model_call["output_tokens"]) == (3, 2)
    assert model_call["finish_reason"] == "completed"
    (tool_call,) = response["tool_calls"]  # asked for, never answered before the trial ended
    assert (tool_call["name"], tool_call["status"]) == ("weather", "error")


# -- streaming ------------------------------------------------------------------------------


def test_a_streamed_call_records_model_latency_usage_and_its_tool_calls(server):
    client = instrument_openai(openai.OpenAI(base_url=server.base_url, api_key="t"))

    def agent(case: Case) -> SubjectResponse:
        messages: list[Any] = [{"role": "user", "content": case.input}]
        while True:
            stream = client.chat.completions.create(
                model="gpt-test", messages=messages, tools=TOOLS, stream=True
            )
            text, calls = "", {}
            for chunk in stream:
                for choice in chunk.choices:
                    text += choice.delta.content or ""
                    for part in choice.delta.tool_calls or ():
                        entry = calls.setdefault(part.index, {"id": "", "name": "", "args": ""})
                        entry["id"] = part.id or entry["id"]
                        entry["name"] += part.function.name or ""
                        entry["args"] += part.function.arguments or ""
            if not calls:
                return SubjectResponse(answer=text)
            messages.append(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": c["args"]},
                        }
                        for c in calls.values()
                    ],
                }
            )
            for c in calls.values():
                result = forecast(**json.loads(c["args"]))
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})

    result = vitrine.evaluate(definition("paris"), Arm("agent", agent))
    response = dict(result.runs[0].responses["paris"])
    assert response["answer_preview"] == "Forecast: sunny in Paris"
    assert_paired(response, "Paris")
    calls = response["model_calls"]
    assert [c["finish_reason"] for c in calls] == ["tool_calls", "stop"]
    assert all(c["input_tokens"] == 10 and c["latency_ms"] > 0 for c in calls)


def test_a_stream_closed_before_its_end_is_recorded_as_cut():
    reply = FakeReply.text("a long answer " * 20, stream_chunks=20, chunk_delay_s=0.01)
    with FakeOpenAIServer(reply) as server:
        client = instrument_openai(openai.OpenAI(base_url=server.base_url, api_key="t"))

        def agent(case: Case) -> SubjectResponse:
            stream = client.chat.completions.create(model="gpt-test", messages=[], stream=True)
            first = next(iter(stream))
            stream.close()
            return SubjectResponse(answer=first.id)

        result = vitrine.evaluate(definition("paris"), Arm("agent", agent))
    (call,) = result.runs[0].responses["paris"]["model_calls"]
    assert call["error"] == "the stream was closed before its end"
    assert call["input_tokens"] is None


# -- tool calls nobody answered, and decorated tools -----------------------------------------


def test_a_tool_call_never_answered_is_recorded_as_an_error(server):
    client = instrument_openai(openai.OpenAI(base_url=server.base_url, api_key="t"))

    def impatient(case: Case) -> SubjectResponse:
        reply = client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": case.input}], tools=TOOLS
        )
        return SubjectResponse(answer=reply.choices[0].message.content or "no answer")

    result = vitrine.evaluate(definition("paris"), Arm("impatient", impatient))
    (call,) = result.runs[0].responses["paris"]["tool_calls"]
    assert call["name"] == "weather"
    assert call["arguments"] == {"city": "Paris"}
    assert call["status"] == "error"
    assert "no result went back" in call["result_summary"]


def test_a_recorded_tool_records_sync_and_async_calls_and_errors():
    @recorded_tool
    def lookup(city: str, units: str = "metric") -> dict[str, str]:
        if city == "Atlantis":
            raise LookupError("no such city")
        return {"city": city, "forecast": "sunny"}

    @recorded_tool(name="async_lookup")
    async def slow_lookup(city: str) -> str:
        await asyncio.sleep(0.01)
        return f"rain in {city}"

    async def subject(case: Case) -> SubjectResponse:
        lookup(case.input)
        await slow_lookup(city=case.input)
        with pytest.raises(LookupError, match="no such city"):
            lookup("Atlantis")
        return SubjectResponse(answer="done")

    result = vitrine.evaluate(definition("paris"), Arm("tools", subject))
    first, second, third = result.runs[0].responses["paris"]["tool_calls"]
    assert first["name"] == "lookup"
    assert first["arguments"] == {"city": "Paris", "units": "metric"}
    assert first["status"] == "ok"
    size = len(json.dumps({"city": "Paris", "forecast": "sunny"}))
    assert first["result_summary"] == f"returned {size} characters as JSON"
    assert second["name"] == "async_lookup"
    assert second["status"] == "ok"
    assert second["duration_ms"] >= 10
    assert third["status"] == "error"
    assert third["result_summary"] == "LookupError: no such city"
    # Outside a trial the decorated function is the function.
    assert lookup("Oslo") == {"city": "Oslo", "forecast": "sunny"}


def test_a_decorated_tool_the_model_asked_for_is_recorded_once(server):
    client = instrument_openai(openai.OpenAI(base_url=server.base_url, api_key="t"))
    weather = recorded_tool(name="weather")(forecast)

    def agent(case: Case) -> SubjectResponse:
        messages: list[Any] = [{"role": "user", "content": case.input}]
        while True:
            reply = client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS)
            message = reply.choices[0].message
            if not message.tool_calls:
                return SubjectResponse(answer=message.content)
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                result = weather(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

    result = vitrine.evaluate(definition("paris"), Arm("agent", agent))
    (call,) = result.runs[0].responses["paris"]["tool_calls"]
    assert call["result_summary"] == "returned 14 characters"  # the decorator's record


# -- the pairing sees a planted bug ------------------------------------------------------


def two_calls_script(request: FakeRequest) -> FakeReply:
    """Ask for two calls at once; answer once both results came back."""
    messages = request.body["messages"]
    if messages[-1]["role"] == "tool":
        return FakeReply.text("both done")
    return FakeReply.tools(
        FakeToolCall("weather", {"city": "Paris"}, id="c-paris"),
        FakeToolCall("weather", {"city": "Rome"}, id="c-rome"),
    )


def _answer_in_reverse(client: openai.OpenAI) -> Callable[[Case], SubjectResponse]:
    def agent(case: Case) -> SubjectResponse:
        messages: list[Any] = [{"role": "user", "content": "two cities"}]
        reply = client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        for call in reversed(message.tool_calls):  # results go back in the other order
            result = forecast(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        reply = client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS)
        return SubjectResponse(answer=reply.choices[0].message.content)

    return agent


def _run_two_calls() -> dict[str, Any]:
    with FakeOpenAIServer(two_calls_script) as server:
        client = instrument_openai(openai.OpenAI(base_url=server.base_url, api_key="t"))
        result = vitrine.evaluate(definition("paris"), Arm("agent", _answer_in_reverse(client)))
    return dict(result.runs[0].responses["paris"])


def test_results_are_paired_by_call_id_not_by_position():
    response = _run_two_calls()
    assert len(response["tool_calls"]) == 2
    assert_paired(response, "Paris")
    assert_paired(response, "Rome")


def test_the_pairing_test_sees_a_planted_bug(monkeypatch):
    from vitrine.adapters import _tools

    honest = _tools.ToolLedger.answered_with

    def by_position(self: Any, call_id: str, result: object) -> None:
        # The planted bug: the answer is given to the oldest waiting call, whatever its id.
        oldest = next(iter(self.pending), call_id)
        honest(self, oldest, result)

    monkeypatch.setattr(_tools.ToolLedger, "answered_with", by_position)
    response = _run_two_calls()
    with pytest.raises(AssertionError):
        assert_paired(response, "Paris")


# -- traces -------------------------------------------------------------------------------


def test_traces_hold_chat_spans_with_attempts_and_execute_tool_spans(exported):
    script = [
        FakeReply.error(500),
        FakeReply.tools(FakeToolCall("weather", {"city": "Paris"}, id="c-1")),
        FakeReply.text("Forecast: sunny"),
    ]
    with FakeOpenAIServer(script) as server:
        client = instrument_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t"))
        vitrine.evaluate(definition("paris"), Arm("agent", async_agent(client)), retries=0)
    tracing.shutdown()
    spans = exported.get_finished_spans()
    chats = [s for s in spans if s.name == "chat gpt-test"]
    tools = [s for s in spans if s.name == "execute_tool weather"]
    (trial,) = [s for s in spans if s.name == "trial paris"]
    assert len(chats) == 2
    assert len(tools) == 1
    first = chats[0] if chats[0].start_time < chats[1].start_time else chats[1]
    attempts = [dict(e.attributes) for e in first.events if e.name == "vitrine.provider.attempt"]
    assert [a["vitrine.attempt.ordinal"] for a in attempts] == [1, 2]
    assert [a["vitrine.attempt.outcome"] for a in attempts] == ["provider_failure", "usable"]
    assert attempts[0]["vitrine.attempt.failure"] == "server_error"
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.provider.name"] == "openai"
    assert first.attributes["gen_ai.usage.input_tokens"] == 10
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert first.attributes["vitrine.model_call.sdk_retries"] == 1
    assert tools[0].attributes["gen_ai.tool.call.id"] == "c-1"
    assert tools[0].attributes["vitrine.tool.status"] == "ok"
    # Every model and tool span is a child of the trial's span, in the trial's trace.
    for span in (*chats, *tools):
        assert span.context.trace_id == trial.context.trace_id
        assert span.parent is not None


# -- a client built with the transport, and the options ------------------------------------


def test_a_client_built_on_the_transports_is_recorded(server):
    import httpx2

    from vitrine.adapters import AsyncOpenAITransport, OpenAITransport

    sync_client = openai.OpenAI(
        base_url=server.base_url,
        api_key="t",
        http_client=httpx2.Client(transport=OpenAITransport()),
    )
    async_client = openai.AsyncOpenAI(
        base_url=server.base_url,
        api_key="t",
        http_client=httpx2.AsyncClient(transport=AsyncOpenAITransport()),
    )
    for arm in (Arm("sync", sync_agent(sync_client)), Arm("async", async_agent(async_client))):
        result = vitrine.evaluate(definition("paris"), arm)
        response = dict(result.runs[0].responses["paris"])
        assert_paired(response, "Paris")
        assert len(response["model_calls"]) == 2


def test_record_tools_false_leaves_tool_calls_to_another_recorder(server):
    client = instrument_openai(
        openai.OpenAI(base_url=server.base_url, api_key="t"), record_tools=False
    )
    result = vitrine.evaluate(definition("paris"), Arm("agent", sync_agent(client)))
    response = result.runs[0].responses["paris"]
    assert response["tool_calls"] is None  # no journal of tools: not "no tool was called"
    assert len(response["model_calls"]) == 2


def test_a_client_on_legacy_httpx_is_refused_with_a_reason():
    httpx = pytest.importorskip("httpx")
    client = openai.OpenAI(
        base_url="http://127.0.0.1:1/v1", api_key="t", http_client=httpx.Client()
    )
    with pytest.raises(vitrine.errors.WrongTypeError, match="httpx2"):
        instrument_openai(client)

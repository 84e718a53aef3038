"""The span helpers: shared no-ops when off; GenAI spans, nesting and scrubbed content when on."""

from __future__ import annotations

import asyncio

import pytest
from tracing_support import needs_otel, start_receiver

from vitrine import tracing
from vitrine._bench.response import TokenUsage
from vitrine._redact import forget_secrets
from vitrine.providers._base import (
    ChatCompletion,
    ChatMessage,
    ChatRequest,
    Provenance,
    ProviderError,
    ProviderFailure,
)
from vitrine.providers._retry import ProviderBackoff, call_with_retry
from vitrine.tracing._langfuse import Score, ScoreSender
from vitrine.tracing._settings import LangfuseTarget, TraceSettings

SECRET = "sk-live-0123456789abcdefghijklmnopqrstuv"


class _Model:
    model_id = "openai:gpt-test"
    provenance = Provenance.PAID

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        return ChatCompletion(f"echo {SECRET}", usage=TokenUsage(12, 3, None), model="gpt-test-01")


def _request() -> ChatRequest:
    return ChatRequest(
        (ChatMessage("system", "be brief"), ChatMessage("user", f"my key is {SECRET}")),
        purpose="judge",
    )


@pytest.fixture(autouse=True)
def _no_configured_secrets():
    # Credentials other tests configured are redacted from every model answer, and these
    # tests look at the answers themselves.
    forget_secrets()
    yield
    forget_secrets()


@pytest.fixture
def exported():
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    def start(*, capture_content: bool = False) -> InMemorySpanExporter:
        exporter = InMemorySpanExporter()
        settings = TraceSettings("http://127.0.0.1:9/v1/traces", capture_content=capture_content)
        assert tracing.setup(settings, exporter=exporter)
        return exporter

    return start


def test_with_tracing_off_every_helper_is_the_shared_no_op():
    assert not tracing.enabled()
    scopes = [
        tracing.run_span("d", "a", 1, "r"),
        tracing.trial_span("r", "d", "a", "c", 1),
        tracing.agent_span("agent"),
        tracing.tool_span("tool", "id", "{}"),
        tracing.stage_attempt("ranker"),
        tracing.model_call("m"),
    ]
    assert all(scope is scopes[0] for scope in scopes)
    with scopes[0] as span:
        assert span is tracing.NULL_SPAN
        assert span.trace_id is None
    assert tracing.current_trace_id() is None
    tracing.evaluation("check", label="pass", score=1.0)  # nothing to record it on: no error


async def test_a_model_call_off_is_the_models_own_answer():
    completion = await tracing.complete(_Model(), _request())
    assert completion.content == f"echo {SECRET}"


@needs_otel
async def test_a_model_call_is_one_chat_span_with_genai_attributes(exported):
    exporter = exported()
    await tracing.complete(_Model(), _request())
    tracing.shutdown()
    (span,) = exporter.get_finished_spans()
    assert span.name == "chat openai:gpt-test"
    attrs = dict(span.attributes or {})
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == "openai:gpt-test"
    assert attrs["gen_ai.response.model"] == "gpt-test-01"
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (12, 3)
    assert attrs["vitrine.call.purpose"] == "judge"
    assert "gen_ai.input.messages" not in attrs


@needs_otel
async def test_captured_content_is_scrubbed_of_secrets(exported):
    exporter = exported(capture_content=True)
    await tracing.complete(_Model(), _request())
    with tracing.tool_span("lookup", "call-1", {"api_key": SECRET, "q": "boots"}) as span:
        tracing.record_tool_result(span, "ok", lambda: f"token={SECRET}")
    tracing.shutdown()
    chat, tool = exporter.get_finished_spans()
    chat_attrs, tool_attrs = dict(chat.attributes or {}), dict(tool.attributes or {})
    assert "my key is" in chat_attrs["gen_ai.input.messages"]
    assert "echo" in chat_attrs["gen_ai.output.messages"]
    assert "boots" in tool_attrs["gen_ai.tool.call.arguments"]
    for value in (*chat_attrs.values(), *tool_attrs.values()):
        assert SECRET not in str(value)


@needs_otel
async def test_retries_inside_a_traced_call_are_events_on_its_one_chat_span(exported):
    exporter = exported()
    failures = [ProviderError(ProviderFailure.RATE_LIMITED, "slow down")]

    class Flaky(_Model):
        async def complete(self, request: ChatRequest) -> ChatCompletion:
            async def attempt() -> ChatCompletion:
                if failures:
                    raise failures.pop()
                return await _Model.complete(self, request)

            policy = ProviderBackoff(max_retries=2, base_delay_s=0.0, max_delay_s=0.0)
            return await call_with_retry(attempt, policy, model_id=self.model_id)

    await tracing.complete(Flaky(), _request())
    tracing.shutdown()
    (span,) = exporter.get_finished_spans()
    attempts = [dict(e.attributes or {}) for e in span.events]
    assert [a["vitrine.attempt.outcome"] for a in attempts] == ["provider_failure", "usable"]
    assert attempts[0]["vitrine.attempt.failure"] == "rate_limited"


@needs_otel
async def test_the_retry_loop_alone_opens_the_chat_span_of_its_provider(exported):
    exporter = exported()

    async def attempt() -> ChatCompletion:
        return ChatCompletion("ok", model="claude-x")

    await call_with_retry(
        attempt, ProviderBackoff(), model_id="anthropic:claude-x", purpose="agent"
    )
    tracing.shutdown()
    (span,) = exporter.get_finished_spans()
    attrs = dict(span.attributes or {})
    assert span.name == "chat anthropic:claude-x"
    assert attrs["gen_ai.provider.name"] == "anthropic"
    assert attrs["gen_ai.response.model"] == "claude-x"


@needs_otel
async def test_spans_nest_across_asyncio_tasks(exported):
    exporter = exported()
    with tracing.trial_span("run-1", "bench@1", "arm", "case-1", 1):
        with tracing.agent_span("helper"):
            await asyncio.gather(
                asyncio.create_task(tracing.complete(_Model(), _request())),
                asyncio.create_task(tracing.complete(_Model(), _request())),
            )
        with tracing.stage_attempt("ranker", visit=2, attempt=3) as stage:
            stage.set("vitrine.stage.outcome", "usable")
    tracing.shutdown()
    spans = {s.name: s for s in exporter.get_finished_spans()}
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    agent, trial = spans["invoke_agent helper"], spans["trial case-1"]
    assert len(chats) == 2
    assert all(c.parent.span_id == agent.context.span_id for c in chats)
    assert agent.parent.span_id == trial.context.span_id
    stage_attrs = dict(spans["stage_attempt ranker"].attributes or {})
    assert (stage_attrs["vitrine.stage.visit"], stage_attrs["vitrine.stage.attempt"]) == (2, 3)
    assert spans["stage_attempt ranker"].parent.span_id == trial.context.span_id


@needs_otel
async def test_a_failing_block_marks_its_span_with_the_error_type_only(exported):
    exporter = exported()
    with pytest.raises(ValueError), tracing.agent_span("agent"):
        raise ValueError(f"leaked {SECRET}")
    tracing.shutdown()
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code.name == "ERROR"
    assert dict(span.attributes or {})["error.type"] == "ValueError"
    assert SECRET not in (span.status.description or "")


@needs_otel
def test_evaluation_results_are_events_and_absence_has_no_score(exported):
    exporter = exported()
    with tracing.trial_span("run-1", "bench@1", "arm", "case-1", 1):
        tracing.evaluation("recall", label="fail", score=0.0, explanation=f"key {SECRET}")
        tracing.evaluation("quality", label="not_measured", explanation="judge unavailable")
    tracing.shutdown()
    (span,) = exporter.get_finished_spans()
    failed, absent = (dict(e.attributes or {}) for e in span.events)
    assert {e.name for e in span.events} == {"gen_ai.evaluation.result"}
    assert failed["gen_ai.evaluation.score.value"] == 0.0
    assert SECRET not in failed["gen_ai.evaluation.explanation"]
    assert "gen_ai.evaluation.score.value" not in absent
    assert absent["gen_ai.evaluation.score.label"] == "not_measured"


def test_scores_the_scores_api_refuses_are_counted_and_never_raised():
    receiver = start_receiver(status=500)
    try:
        sender = ScoreSender(LangfuseTarget(receiver.url, "pk", "sk"))
        sender.add(Score("a" * 32, None, "recall", 1.0, None))
        sender.add(Score("a" * 32, None, "recall", "not_measured", None))
        sender.flush()
    finally:
        receiver.server.shutdown()
    assert (sender.sent, sender.failed) == (0, 2)
    assert len(receiver.score_bodies()) == 2


def test_an_unreachable_scores_api_is_counted_and_never_raised():
    sender = ScoreSender(LangfuseTarget("http://127.0.0.1:9", "pk", "sk"))
    sender.add(Score("a" * 32, None, "recall", 1.0, None))
    sender.flush()
    assert (sender.sent, sender.failed) == (0, 1)

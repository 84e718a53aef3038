"""A pydantic-ai agent as a vitrine subject, read from its own message history and hooks.

:func:`pydantic_ai_subject` turns a ``pydantic_ai.Agent`` into ``subject(case) ->
SubjectResponse``. What the agent did comes from pydantic-ai itself: the run's messages (each
``ToolCallPart`` and the ``ToolReturnPart`` that answered it, with its outcome; each
``ModelResponse`` with its model, usage and finish reason) and a capability vitrine adds to
the run for the timings (``wrap_model_request``, ``wrap_tool_execute``), which also opens
vitrine's ``chat`` and ``execute_tool`` spans. The capability lives on the run, not the agent,
so concurrent trials never share one.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from vitrine._bench.model import Case
from vitrine._bench.response import (
    ModelCallRecord,
    SubjectResponse,
    TokenUsage,
    ToolCallRecord,
    ToolCallStatus,
)
from vitrine._bench.retry import is_transient_sdk_error
from vitrine._journal import TrialJournal, current_journal
from vitrine.adapters._common import (
    answer_of,
    default_input,
    model_calls_seen,
    summary,
    tool_arguments,
)
from vitrine.adapters._tools import RequestedCall, ToolLedger
from vitrine.errors import DefinitionError, WrongTypeError
from vitrine.tracing import _semconv as sc
from vitrine.tracing._spans import agent_span, model_call, record_tool_result, tool_span

try:
    from pydantic_ai import (
        Agent,
        DeferredToolRequests,
        DeferredToolResults,
        ToolApproved,
        ToolDenied,
    )
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelAPIError
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        RetryPromptPart,
        ToolCallPart,
        ToolReturnPart,
    )
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        "vitrine.adapters.pydantic_ai_subject needs pydantic-ai: pip install 'vitrine[adapters]'"
    ) from exc

__all__ = ["pydantic_ai_subject"]

ApprovalPolicy = Callable[[str, Mapping[str, Any]], bool]
_DECLINED = "the evaluation's approval policy declined this call"
# A tool return's outcome as a journal status; "retried" means the model must call again.
_STATUS = {
    "success": ToolCallStatus.OK,
    "failed": ToolCallStatus.ERROR,
    "retried": ToolCallStatus.ERROR,
    "interrupted": ToolCallStatus.ERROR,
    "denied": ToolCallStatus.REFUSED,
}


@dataclass
class _Timings:
    """How long each model request and tool call took, as the run's own hooks saw them."""

    models_ms: list[float] = field(default_factory=list)
    tools_ms: dict[str, float] = field(default_factory=dict)
    # The calls of the agent's own tools; an output tool's call is how it answers, not a tool.
    tool_call_ids: set[str] = field(default_factory=set)


class _Watching(AbstractCapability[Any]):
    """Times each model request and tool call of one run, each inside a vitrine span."""

    def __init__(self, timings: _Timings) -> None:
        self._timings = timings

    async def wrap_model_request(
        self, ctx: Any, *, request_context: Any, handler: Any
    ) -> ModelResponse:
        model = getattr(ctx.model, "model_name", None) or "unknown"
        started = time.perf_counter()
        with model_call(str(model), provider=getattr(ctx.model, "system", None)) as span:
            try:
                response: ModelResponse = await handler(request_context)
            finally:
                self._timings.models_ms.append((time.perf_counter() - started) * 1000.0)
            span.set(sc.RESPONSE_MODEL, response.model_name)
            span.set(sc.INPUT_TOKENS, response.usage.input_tokens)
            span.set(sc.OUTPUT_TOKENS, response.usage.output_tokens)
        return response

    async def before_tool_validate(
        self, ctx: Any, *, call: ToolCallPart, tool_def: Any, args: Any
    ) -> Any:
        if getattr(tool_def, "kind", "function") != "output":
            self._timings.tool_call_ids.add(call.tool_call_id)
        return args

    async def wrap_tool_execute(
        self, ctx: Any, *, call: ToolCallPart, tool_def: Any, args: Any, handler: Any
    ) -> Any:
        started = time.perf_counter()
        paused: ApprovalRequired | CallDeferred | None = None
        with tool_span(call.tool_name, call.tool_call_id, call.args_as_json_str()) as span:
            try:
                result = await handler(args)
            except (ApprovalRequired, CallDeferred) as exc:
                # The tool declined to run as asked; the approval, if any, runs it again later.
                record_tool_result(span, ToolCallStatus.REFUSED.value)
                paused = exc
            except BaseException:
                record_tool_result(span, ToolCallStatus.ERROR.value)
                raise
            else:
                record_tool_result(span, ToolCallStatus.OK.value, lambda: summary(result))
            finally:
                self._timings.tools_ms[call.tool_call_id] = (time.perf_counter() - started) * 1e3
        if paused is not None:
            raise paused  # outside the span, which would otherwise end as a failure
        return result


def _tool_calls(messages: Sequence[ModelMessage], timings: _Timings) -> list[ToolCallRecord]:
    """Each function tool call the model made, with how it ended, in the order it was made."""
    answers: dict[str, ToolReturnPart | RetryPromptPart] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolReturnPart | RetryPromptPart) and part.tool_call_id:
                answers[part.tool_call_id] = part
    records = []
    for message in messages:
        if not isinstance(message, ModelResponse):
            continue
        for part in message.parts:
            if not isinstance(part, ToolCallPart):
                continue
            answer = answers.get(part.tool_call_id)
            if answer is None:
                continue  # waiting for an approval: the decision's return part records it
            denied = isinstance(answer, ToolReturnPart) and answer.outcome == "denied"
            if part.tool_call_id not in timings.tool_call_ids and not denied:
                continue
            if isinstance(answer, RetryPromptPart):
                status = ToolCallStatus.ERROR
            else:
                status = _STATUS.get(answer.outcome, ToolCallStatus.ERROR)
            records.append(
                ToolCallRecord(
                    part.tool_name,
                    tool_arguments(part.args),
                    status,
                    summary(answer.content),
                    timings.tools_ms.get(part.tool_call_id, 0.0),
                )
            )
    return records


def _model_calls(messages: Sequence[ModelMessage], timings: _Timings) -> list[ModelCallRecord]:
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    latencies = [*timings.models_ms, *([0.0] * len(responses))]
    records = []
    for response, latency in zip(responses, latencies, strict=False):
        details = response.provider_details or {}
        finish = details.get("finish_reason") or response.finish_reason
        records.append(
            ModelCallRecord(
                response.model_name or "unknown",
                response.provider_name,
                response.usage.input_tokens,
                response.usage.output_tokens,
                latency,
                None if finish is None else str(finish),
            )
        )
    return records


def _usage_of(messages: Sequence[ModelMessage]) -> TokenUsage | None:
    """Tokens over every model response of the run, resumed segments included."""
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    if not responses:
        return None
    return TokenUsage(
        sum(r.usage.input_tokens for r in responses), sum(r.usage.output_tokens for r in responses)
    )


@contextmanager
def _sdk_faults_as_raised() -> Iterator[None]:
    """Re-raise the SDK's own error for a transient fault pydantic-ai wrapped in its own type.

    pydantic-ai turns the OpenAI SDK's 500 into ``ModelServerError`` (a connection failure into
    ``ModelConnectionError``), which no retry policy knows; the SDK error it came from is what
    says the fault is transient, so the trial's retry policy sees that one.
    """
    try:
        yield
    except ModelAPIError as exc:
        cause = exc.__cause__
        if isinstance(cause, Exception) and is_transient_sdk_error(cause):
            raise cause from None
        raise


class _ToolsFromMessages(ToolLedger):
    """A try's ledger while the run's messages give its tool calls: an instrumented client,
    reading each call from the conversation as well, would add it again as ``ok`` (a refused
    transfer too) with an ``execute_tool`` span of its own."""

    def requested(self, call: RequestedCall) -> None:
        del call  # never pending, so nothing is left to record when the try ends


def _messages_record_tools(journal: TrialJournal | None) -> None:
    if journal is not None:
        journal.adapter_state(ToolLedger, lambda: _ToolsFromMessages(journal))


@dataclass(frozen=True)
class _PydanticAISubject:
    agent: Agent[Any, Any]
    input_of: Callable[[Case], Any]
    deps_of: Callable[[Case], Any] | None
    approve: ApprovalPolicy | None
    options: Mapping[str, Any]

    async def __call__(self, case: Case) -> SubjectResponse:
        timings = _Timings()
        options: dict[str, Any] = {**self.options, "capabilities": [_Watching(timings)]}
        if self.deps_of is not None:
            options["deps"] = self.deps_of(case)
        journal = current_journal()
        before = len(journal.model_calls) if journal is not None else 0
        _messages_record_tools(journal)
        messages: list[ModelMessage] = []
        with agent_span(self.agent.name or "agent"), _sdk_faults_as_raised():
            result = await self.agent.run(self.input_of(case), **options)
            messages.extend(result.new_messages())
            while isinstance(result.output, DeferredToolRequests):
                decided = self._decide(result.output)
                result = await self.agent.run(
                    message_history=result.all_messages(), deferred_tool_results=decided, **options
                )
                messages.extend(result.new_messages())
        answer, structured = answer_of(result.output)
        return SubjectResponse(
            answer=answer,
            tool_calls=tuple(_tool_calls(messages, timings)),
            usage=_usage_of(messages),
            structured=structured,
            provenance="pydantic-ai",
            model_calls=None
            if model_calls_seen(journal, before)
            else tuple(_model_calls(messages, timings)),
        )

    def _decide(self, requests: DeferredToolRequests) -> DeferredToolResults:
        if requests.calls:
            names = ", ".join(sorted({call.tool_name for call in requests.calls}))
            raise DefinitionError(
                f"agent {self.agent.name!r} deferred {names} to be run outside the agent; "
                "a subject cannot answer external tool calls"
            )
        if self.approve is None:
            names = ", ".join(sorted({call.tool_name for call in requests.approvals}))
            raise DefinitionError(
                f"agent {self.agent.name!r} paused for approval of {names}: give "
                "pydantic_ai_subject(..., approve=fn(tool_name, arguments) -> bool) to decide"
            )
        approvals: dict[str, bool | ToolApproved | ToolDenied] = {}
        for call in requests.approvals:
            allowed = self.approve(call.tool_name, tool_arguments(call.args))
            approvals[call.tool_call_id] = True if allowed else ToolDenied(_DECLINED)
        return DeferredToolResults(approvals=approvals)


def pydantic_ai_subject(
    agent: Agent[Any, Any],
    *,
    input: Callable[[Case], Any] | None = None,
    deps: Callable[[Case], Any] | None = None,
    approve: ApprovalPolicy | None = None,
    **run_options: Any,
) -> Callable[[Case], Awaitable[SubjectResponse]]:
    """A pydantic-ai agent as a subject: ``Arm("agent", pydantic_ai_subject(agent))``.

    Each trial runs ``agent.run(input(case), deps=deps(case), **run_options)`` (the case's
    input when it is text, else its JSON) and answers with the output: its text, or for a
    structured output its JSON, with the fields in ``structured``. The tool calls come from the
    run's messages: each ``ToolCallPart`` with the ``ToolReturnPart`` that answered it, whose
    outcome gives the status (``success`` is ok; ``failed`` and ``retried``, a ``ModelRetry``
    or arguments that failed validation, are error; ``denied`` is refused). Model calls are
    the run's ``ModelResponse`` messages (model, tokens, finish reason) with the latency
    vitrine's run capability measured; durations come from the same capability.

    A tool that requires approval pauses the run with ``DeferredToolRequests`` (the agent's
    ``output_type`` must allow it): ``approve(tool_name, arguments)`` decides, a declined call
    is refused, and the run resumes. Without ``approve`` the trial fails with a sentence.
    Exceptions (``UsageLimitExceeded``, a tool that raised, a model error) are not caught; a
    transient one keeps its SDK type so the trial's retry policy can retry it. When the
    model's OpenAI client is instrumented (:func:`vitrine.adapters.instrument_openai`, given
    to ``OpenAIProvider(openai_client=...)``), its model calls, with the client's own retries,
    are the ones the trial keeps.
    """
    if not isinstance(agent, Agent):
        raise WrongTypeError(
            f"pydantic_ai_subject takes a pydantic_ai.Agent, got {type(agent).__name__}"
        )
    for name, value in (("input", input), ("deps", deps), ("approve", approve)):
        if value is not None and not callable(value):
            raise WrongTypeError(
                f"pydantic_ai_subject({name}=...) takes a function, got {type(value).__name__}"
            )
    if "capabilities" in run_options:
        raise DefinitionError(
            "pydantic_ai_subject adds its own capability to each run: give yours to the Agent"
        )
    return _PydanticAISubject(agent, input or default_input, deps, approve, run_options)

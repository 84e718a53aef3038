"""An OpenAI Agents SDK agent as a vitrine subject, watched through the SDK's own tracing.

:func:`agents_subject` turns an ``agents.Agent`` into ``subject(case) -> SubjectResponse``.
Each trial runs ``Runner.run`` under a trace id of its own; vitrine's
``agents.tracing.TracingProcessor`` sends every span of that trace to the trial that owns it
(by trace id, so concurrent trials never mix), and builds from them the trial's tool calls
(function spans) and model calls (generation and response spans). The SDK's run hooks say
whether a tool's body ran, which tells a call a tool guardrail refused from one that ran.

The SDK uploads its traces to OpenAI's servers by default. While an evaluation uses this
adapter they stay on the machine: the first subject built makes vitrine's processor the
SDK's only one (``set_trace_processors``), plus any the caller names in ``trace_processors``.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from vitrine._bench.model import Case
from vitrine._bench.response import (
    ModelCallRecord,
    SubjectResponse,
    TokenUsage,
    ToolCallRecord,
    ToolCallStatus,
)
from vitrine._journal import TrialJournal, current_journal
from vitrine._redact import sanitize_text
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
from vitrine.tracing._spans import (
    NULL_SPAN,
    Span,
    agent_span,
    model_call,
    record_tool_result,
    tool_span,
)

try:
    from agents import Agent, RunConfig, RunHooks, Runner
    from agents.tracing import (
        Span as SdkSpan,
        Trace,
        TracingProcessor,
        gen_trace_id,
        get_current_span,
        set_trace_processors,
    )
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        "vitrine.adapters.agents_subject needs the OpenAI Agents SDK: "
        "pip install 'vitrine[adapters]'"
    ) from exc

__all__ = ["agents_subject"]

# The SDK's message for a call whose approval was declined; what the model is told instead.
_DECLINED = "the evaluation's approval policy declined this call"

ApprovalPolicy = Callable[[str, Mapping[str, Any]], bool]
InputOf = Callable[[Case], Any]


def _ms_between(started: str | None, ended: str | None) -> float:
    if not started or not ended:
        return 0.0
    try:
        delta = datetime.fromisoformat(ended) - datetime.fromisoformat(started)
    except ValueError:
        return 0.0
    return max(0.0, delta.total_seconds() * 1000.0)


@dataclass
class _Run:
    """What one trial's trace produced, gathered as its spans end."""

    tools: list[ToolCallRecord] = field(default_factory=list)
    models: list[ModelCallRecord] = field(default_factory=list)
    # Function spans whose tool body ran (the run hooks' on_tool_start fired inside them).
    ran: set[str] = field(default_factory=set)
    saw_trace: bool = False
    open_spans: dict[str, tuple[AbstractContextManager[Span], Span]] = field(default_factory=dict)


class _Router(TracingProcessor):
    """The one tracing processor vitrine installs: each span goes to the run of its trace."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, _Run] = {}

    def open(self, trace_id: str) -> _Run:
        run = _Run()
        with self._lock:
            self._runs[trace_id] = run
        return run

    def close(self, trace_id: str) -> None:
        with self._lock:
            run = self._runs.pop(trace_id, None)
        if run is not None:
            for scope, _ in run.open_spans.values():
                _exit_quietly(scope)

    def run_of(self, trace_id: str | None) -> _Run | None:
        if trace_id is None:
            return None
        with self._lock:
            return self._runs.get(trace_id)

    def mark_ran(self, span: SdkSpan[Any] | None) -> None:
        if span is None:
            return
        run = self.run_of(span.trace_id)
        if run is not None:
            run.ran.add(span.span_id)

    # -- the SDK's TracingProcessor interface ------------------------------------------------

    def on_trace_start(self, trace: Trace) -> None:
        run = self.run_of(trace.trace_id)
        if run is not None:
            run.saw_trace = True

    def on_trace_end(self, trace: Trace) -> None:
        return None

    def on_span_start(self, span: SdkSpan[Any]) -> None:
        run = self.run_of(span.trace_id)
        if run is None:
            return
        try:
            scope = _vitrine_scope(span)
            if scope is not None:
                run.open_spans[span.span_id] = (scope, scope.__enter__())
        except Exception:  # a processor must never break the agent's run
            return

    def on_span_end(self, span: SdkSpan[Any]) -> None:
        run = self.run_of(span.trace_id)
        if run is None:
            return
        opened = run.open_spans.pop(span.span_id, None)
        vitrine_span = opened[1] if opened is not None else NULL_SPAN
        kind = span.span_data.type
        if kind == "function":
            record = _tool_record(span, run)
            # A span that paused for an approval is not an outcome: the decision records it.
            if record is not None:
                run.tools.append(record)
                record_tool_result(vitrine_span, record.status.value, lambda: record.result_summary)
        elif kind in ("generation", "response"):
            call = _model_record(span)
            if call is not None:
                run.models.append(call)
                _describe_model_call(vitrine_span, call)
        if opened is not None:
            _exit_quietly(opened[0])

    def shutdown(self) -> None:
        return None

    def force_flush(self) -> None:
        return None


def _exit_quietly(scope: AbstractContextManager[Span]) -> None:
    # A span the SDK finished in another context cannot reset this one's; it still ends.
    try:
        scope.__exit__(None, None, None)
    except Exception:  # never break the agent's run over a trace
        return


def _vitrine_scope(span: SdkSpan[Any]) -> AbstractContextManager[Span] | None:
    data = span.span_data
    if data.type == "function":
        return tool_span(data.name)
    if data.type == "generation":
        return model_call(str(data.model or "unknown"), provider="openai")
    if data.type == "response":
        return model_call("openai-responses", provider="openai")
    return None


def _describe_model_call(span: Span, call: ModelCallRecord) -> None:
    if span is NULL_SPAN:
        return
    span.set(sc.RESPONSE_MODEL, call.model)
    if call.finish_reason is not None:
        span.set(sc.RESPONSE_FINISH_REASONS, [call.finish_reason])
    span.set(sc.INPUT_TOKENS, call.input_tokens)
    span.set(sc.OUTPUT_TOKENS, call.output_tokens)


def _tool_record(span: SdkSpan[Any], run: _Run) -> ToolCallRecord | None:
    """The call a function span ended with, or None while it waits for an approval."""
    data = span.span_data
    error = span.error
    if error is not None:
        rejected = "rejected" in str((error.get("data") or {}).get("error", ""))
        status = ToolCallStatus.REFUSED if rejected else ToolCallStatus.ERROR
    elif span.span_id in run.ran:
        status = ToolCallStatus.OK
    elif data.output is None:
        return None  # the run paused here for an approval; the decision records the call
    else:
        status = ToolCallStatus.REFUSED  # a tool input guardrail answered instead of the tool
    return ToolCallRecord(
        data.name,
        tool_arguments(data.input),
        status,
        summary(data.output),
        _ms_between(span.started_at, span.ended_at),
    )


def _model_record(span: SdkSpan[Any]) -> ModelCallRecord | None:
    data = span.span_data
    usage: Mapping[str, Any] = data.usage or {}
    error = span.error
    latency = _ms_between(span.started_at, span.ended_at)
    reason = None if error is None else sanitize_text(str(error.get("message") or "error"))
    if data.type == "generation":
        output = data.output or []
        finish = None
        if output:
            last = output[-1] if isinstance(output[-1], Mapping) else {}
            finish = "tool_calls" if last.get("tool_calls") else "stop"
        return ModelCallRecord(
            str(data.model or "unknown"),
            "openai",
            usage.get("input_tokens"),
            usage.get("output_tokens"),
            latency,
            finish,
            error=reason,
        )
    response = data.response
    model = str(getattr(response, "model", None) or "unknown")
    finish = None
    if response is not None:
        incomplete = getattr(response, "incomplete_details", None)
        kinds = [getattr(item, "type", "") for item in getattr(response, "output", ()) or ()]
        if incomplete is not None and getattr(incomplete, "reason", None):
            finish = str(incomplete.reason)
        else:
            finish = "tool_calls" if "function_call" in kinds else "stop"
    return ModelCallRecord(
        model,
        "openai",
        usage.get("input_tokens"),
        usage.get("output_tokens"),
        latency,
        finish,
        error=reason,
    )


_ROUTER = _Router()
_INSTALL_LOCK = threading.Lock()
_KEPT: list[TracingProcessor] = []
_INSTALLED = False


def _install(keep: Sequence[TracingProcessor]) -> None:
    """Make vitrine's router the SDK's processor, with ``keep`` beside it and nothing else."""
    global _INSTALLED  # noqa: PLW0603 - the SDK's processor list is process-wide too
    with _INSTALL_LOCK:
        new = [p for p in keep if all(p is not kept for kept in _KEPT)]
        if _INSTALLED and not new:
            return
        _KEPT.extend(new)
        set_trace_processors([_ROUTER, *_KEPT])
        _INSTALLED = True


class _Watching(RunHooks[Any]):
    """Run hooks that mark each function span whose tool body ran, then call ``inner``'s."""

    def __init__(self, inner: RunHooks[Any] | None) -> None:
        self._inner = inner or RunHooks()

    async def on_llm_start(self, *args: Any) -> None:
        await self._inner.on_llm_start(*args)

    async def on_llm_end(self, *args: Any) -> None:
        await self._inner.on_llm_end(*args)

    async def on_agent_start(self, *args: Any) -> None:
        await self._inner.on_agent_start(*args)

    async def on_agent_end(self, *args: Any) -> None:
        await self._inner.on_agent_end(*args)

    async def on_handoff(self, *args: Any) -> None:
        await self._inner.on_handoff(*args)

    async def on_tool_start(self, *args: Any) -> None:
        # The tool input guardrails run before this hook: a call it never reached was refused.
        _ROUTER.mark_ran(get_current_span())
        await self._inner.on_tool_start(*args)

    async def on_tool_end(self, *args: Any) -> None:
        await self._inner.on_tool_end(*args)


class _TracedTools(ToolLedger):
    """A try's ledger while the SDK's trace records its tool calls.

    An instrumented client would also read each call from the conversation and record it
    again, always ``ok`` (a refused call included), with an ``execute_tool`` span of its own.
    """

    def requested(self, call: RequestedCall) -> None:
        return None


def _trace_records_tools(journal: TrialJournal) -> None:
    # Nothing is ever pending in it, so it has nothing to record when the try ends either.
    journal.adapter_state(ToolLedger, lambda: _TracedTools(journal))


@dataclass(frozen=True)
class _AgentsSubject:
    agent: Agent[Any]
    input_of: InputOf
    context_of: Callable[[Case], Any] | None
    run_config: RunConfig | None
    max_turns: int | None
    hooks: RunHooks[Any] | None
    approve: ApprovalPolicy | None

    async def __call__(self, case: Case) -> SubjectResponse:
        trace_id = gen_trace_id()
        config = dataclasses.replace(
            self.run_config or RunConfig(), trace_id=trace_id, tracing_disabled=False
        )
        options: dict[str, Any] = {"run_config": config, "hooks": _Watching(self.hooks)}
        if self.max_turns is not None:
            options["max_turns"] = self.max_turns
        if self.context_of is not None:
            options["context"] = self.context_of(case)
        journal = current_journal()
        transport_calls = len(journal.model_calls) if journal is not None else 0
        if journal is not None:
            _trace_records_tools(journal)
        run = _ROUTER.open(trace_id)
        try:
            with agent_span(self.agent.name):
                result = await Runner.run(self.agent, self.input_of(case), **options)
                while result.interruptions:
                    state = self._decide(result, run)
                    result = await Runner.run(self.agent, state, **options)
        finally:
            _ROUTER.close(trace_id)
        answer, structured = answer_of(result.final_output)
        usage = result.context_wrapper.usage
        by_transport = model_calls_seen(journal, transport_calls)
        return SubjectResponse(
            answer=answer,
            tool_calls=tuple(run.tools) if run.saw_trace else None,
            usage=TokenUsage(usage.input_tokens, usage.output_tokens) if usage.requests else None,
            structured=structured,
            provenance="openai-agents",
            model_calls=None if by_transport or not run.saw_trace else tuple(run.models),
        )

    def _decide(self, result: Any, run: _Run) -> Any:
        if self.approve is None:
            names = ", ".join(sorted({item.tool_name for item in result.interruptions}))
            raise DefinitionError(
                f"agent {self.agent.name!r} paused for approval of {names}: give "
                "agents_subject(..., approve=fn(tool_name, arguments) -> bool) to decide"
            )
        state = result.to_state()
        for item in result.interruptions:
            arguments = tool_arguments(getattr(item.raw_item, "arguments", None))
            name = str(item.tool_name)
            if self.approve(name, arguments):
                state.approve(item)
            else:
                state.reject(item, rejection_message=_DECLINED)
                run.tools.append(ToolCallRecord(name, arguments, ToolCallStatus.REFUSED, _DECLINED))
        return state


def agents_subject(
    agent: Agent[Any],
    *,
    input: InputOf | None = None,
    context: Callable[[Case], Any] | None = None,
    run_config: RunConfig | None = None,
    max_turns: int | None = None,
    hooks: RunHooks[Any] | None = None,
    approve: ApprovalPolicy | None = None,
    trace_processors: Iterable[TracingProcessor] = (),
) -> Callable[[Case], Awaitable[SubjectResponse]]:
    """An OpenAI Agents SDK agent as a subject: ``Arm("agent", agents_subject(agent))``.

    Each trial runs ``Runner.run(agent, input(case))`` (the case's input when it is text or a
    list of input items, else its JSON) and answers with the final output: its text, or for a
    structured ``output_type`` its JSON, with the fields in ``structured``. The trial's tool
    calls (name, arguments, ok / error / refused, a bounded result, duration) and model calls
    (model, tokens, latency, finish reason) come from the SDK's own trace of the run. A tool
    that raised is ``error``; a call a tool input guardrail answered instead of the tool, or
    whose approval ``approve(tool_name, arguments)`` declined, is ``refused``. An agent that
    pauses for an approval without an ``approve`` policy fails the trial with a sentence
    saying so.

    ``context`` builds the run context for a case; ``run_config``, ``max_turns`` and ``hooks``
    go to ``Runner.run`` as they are (the trace id is vitrine's, and tracing is on for the
    run). Exceptions are not caught: ``MaxTurnsExceeded`` or a model error fails the try, and
    a transient one (a connection error, an HTTP 5xx or 429 from the OpenAI SDK) stays the
    OpenAI SDK's own exception type, so the trial's retry policy can retry it.

    The SDK's traces stay on this machine: vitrine's processor becomes the SDK's only one,
    plus ``trace_processors`` (pass ``agents.tracing.processors.default_processor()`` to keep
    uploading to OpenAI). When the agent's OpenAI client is instrumented
    (:func:`vitrine.adapters.instrument_openai`), its model calls, with the client's own
    retries, are the ones the trial keeps.
    """
    if not isinstance(agent, Agent):
        raise WrongTypeError(
            f"agents_subject takes an agents.Agent, got {type(agent).__name__}: build the agent "
            "with the OpenAI Agents SDK, or write a subject function for other frameworks"
        )
    if input is not None and not callable(input):
        raise WrongTypeError(
            f"agents_subject(input=...) takes a function of the case, got {type(input).__name__}"
        )
    if approve is not None and not callable(approve):
        raise WrongTypeError(
            "agents_subject(approve=...) takes fn(tool_name, arguments) -> bool, got "
            f"{type(approve).__name__}"
        )
    _install(list(trace_processors))
    return _AgentsSubject(
        agent, input or default_input, context, run_config, max_turns, hooks, approve
    )

"""The span helpers every layer calls; with tracing off each one is a shared no-op.

Nothing here imports OpenTelemetry. While no backend is installed (the default), every helper
returns the same :data:`NULL_SCOPE`, whose span ignores everything it is told, so an
instrumented call costs one global read and an empty ``with``. :func:`vitrine.tracing.setup`
installs the OpenTelemetry backend (imported only then).

Spans nest through the context, which asyncio copies into every task it creates: a trial's
span is the parent of the agent's, which is the parent of its model and tool calls.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from vitrine._redact import sanitize_text
from vitrine.tracing import _semconv as sc
from vitrine.tracing._content import input_messages, output_messages, scrubbed

if TYPE_CHECKING:
    from vitrine.providers._base import ChatCompletion, ChatRequest

__all__ = [
    "NULL_SCOPE",
    "NULL_SPAN",
    "AttributeValue",
    "Backend",
    "EvaluationResult",
    "Span",
    "agent_span",
    "capturing_content",
    "current_trace_id",
    "evaluation",
    "install_backend",
    "installed_backend",
    "item_span",
    "model_call",
    "provider_attempt",
    "provider_of",
    "record_completion",
    "record_tool_result",
    "run_span",
    "session_span",
    "stage_attempt",
    "tool_span",
    "trial_span",
]

AttributeValue = str | bool | int | float | Sequence[str]
MetadataValue = str | bool | float | None
_NO_METADATA: Mapping[str, MetadataValue] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class EvaluationResult:
    """One evaluation of the span it is recorded on, as every destination receives it.

    ``score`` is None when nothing was measured; ``explanation`` is already scrubbed;
    ``metadata`` is what a scores API can keep beside the result (the observation's state,
    pass flag and raw value).
    """

    name: str
    label: str
    score: float | None = None
    explanation: str | None = None
    metadata: Mapping[str, MetadataValue] = field(default_factory=lambda: _NO_METADATA)


class Span(Protocol):
    """What instrumented code may do with its span."""

    def set(self, key: str, value: AttributeValue | None) -> None:
        """Set one attribute; None leaves it unset."""

    def event(self, name: str, attributes: Mapping[str, AttributeValue | None]) -> None:
        """Add a timestamped event to the span."""

    def fail(self, description: str) -> None:
        """Give the span an error status; ``description`` is scrubbed before it is kept."""

    @property
    def trace_id(self) -> str | None:
        """The span's trace id as 32 hex digits, or None when tracing is off."""

    @property
    def span_id(self) -> str | None:
        """The span's id as 16 hex digits, or None when tracing is off."""


class Backend(Protocol):
    """A tracer that opens spans and receives evaluation scores."""

    capture_content: bool

    def span(
        self, name: str, attributes: Mapping[str, AttributeValue | None]
    ) -> AbstractContextManager[Span]:
        """Open a span as the current one for the block."""

    def current(self) -> Span | None:
        """The innermost open span of this context, if any."""

    def score(self, span: Span, result: EvaluationResult) -> None:
        """Forward one evaluation of ``span`` to the configured scores APIs, if any."""


class _NullSpan:
    __slots__ = ()

    def set(self, key: str, value: AttributeValue | None) -> None:
        return None

    def event(self, name: str, attributes: Mapping[str, AttributeValue | None]) -> None:
        return None

    def fail(self, description: str) -> None:
        return None

    @property
    def trace_id(self) -> str | None:
        return None

    @property
    def span_id(self) -> str | None:
        return None


class _NullScope(AbstractContextManager[Span]):
    __slots__ = ()

    def __enter__(self) -> Span:
        return NULL_SPAN

    def __exit__(self, *exc_info: object) -> None:
        return None


NULL_SPAN: Span = _NullSpan()
NULL_SCOPE: AbstractContextManager[Span] = _NullScope()

_backend: Backend | None = None
# The chat span of the logical model call in progress, so the retry loop inside a traced
# ``complete`` adds its attempts to that span instead of opening a second one.
_CHAT: ContextVar[Span | None] = ContextVar("vitrine_tracing_chat", default=None)


def install_backend(backend: Backend | None) -> None:
    """Install (or with None remove) the process's tracing backend."""
    global _backend  # noqa: PLW0603 - one process-wide switch, read on every instrumented call
    _backend = backend


def installed_backend() -> Backend | None:
    """The installed backend, or None while tracing is off."""
    return _backend


def capturing_content() -> bool:
    """True when message content (prompts, answers, tool arguments) goes into spans."""
    return _backend is not None and _backend.capture_content


def current_trace_id() -> str | None:
    """The trace id of the innermost open span, or None when tracing is off or none is open."""
    if _backend is None:
        return None
    span = _backend.current()
    return None if span is None else span.trace_id


def session_span(command: str) -> AbstractContextManager[Span]:
    """The root span of one command: its runs nest inside, one trace under one ``session.id``."""
    if _backend is None:
        return NULL_SCOPE
    return _backend.span(f"session {command}", {sc.SESSION_ID: uuid.uuid4().hex})


def run_span(
    definition: str, arm: str, repetition: int, run_id: str
) -> AbstractContextManager[Span]:
    """The span of one run (one arm x one repetition over every case)."""
    if _backend is None:
        return NULL_SCOPE
    return _backend.span(
        f"run {definition}",
        {sc.RUN_ID: run_id, sc.DEFINITION: definition, sc.ARM: arm, sc.REPETITION: repetition},
    )


def trial_span(
    run_id: str, definition: str, arm: str, case_id: str, repetition: int
) -> AbstractContextManager[Span]:
    """The span of one trial: the subject's answer to one case, and its checks."""
    if _backend is None:
        return NULL_SCOPE
    return _backend.span(
        f"trial {case_id}",
        {
            sc.RUN_ID: run_id,
            sc.DEFINITION: definition,
            sc.ARM: arm,
            sc.CASE: case_id,
            sc.REPETITION: repetition,
        },
    )


def item_span(
    kind: str, item_id: str, attributes: Mapping[str, AttributeValue | None] | None = None
) -> AbstractContextManager[Span]:
    """``{kind} {item_id}``: one item a command judges outside a run (a red-team probe, a RAG
    query, a pytest test), with its id as ``vitrine.case``."""
    if _backend is None:
        return NULL_SCOPE
    return _backend.span(f"{kind} {item_id}", {sc.CASE: item_id, **(attributes or {})})


def agent_span(agent_name: str) -> AbstractContextManager[Span]:
    """``invoke_agent {agent_name}``: one run of an agent's loop."""
    if _backend is None:
        return NULL_SCOPE
    return _backend.span(
        f"{sc.OP_INVOKE_AGENT} {agent_name}",
        {sc.OPERATION: sc.OP_INVOKE_AGENT, sc.AGENT_NAME: agent_name},
    )


def tool_span(
    tool_name: str, call_id: str | None = None, arguments: str | Mapping[str, Any] | None = None
) -> AbstractContextManager[Span]:
    """``execute_tool {tool_name}``: one tool call; the arguments only when content is on."""
    if _backend is None:
        return NULL_SCOPE
    attributes: dict[str, AttributeValue | None] = {
        sc.OPERATION: sc.OP_EXECUTE_TOOL,
        sc.TOOL_NAME: tool_name,
        sc.TOOL_CALL_ID: call_id,
        sc.TOOL_TYPE: "function",
    }
    if _backend.capture_content and arguments is not None:
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
        attributes[sc.TOOL_ARGUMENTS] = scrubbed(text)
    return _backend.span(f"{sc.OP_EXECUTE_TOOL} {tool_name}", attributes)


def record_tool_result(
    span: Span, status: str, result_text: Callable[[], str] | None = None
) -> None:
    """Put a tool call's status and (content on) its scrubbed result on ``span``.

    ``result_text`` is called only when content is captured, so an untraced call pays nothing
    for rendering its result.
    """
    if span is NULL_SPAN or _backend is None:
        return
    span.set(sc.TOOL_STATUS, status)
    if _backend.capture_content and result_text is not None:
        span.set(sc.TOOL_RESULT, scrubbed(result_text()))


def stage_attempt(stage: str, *, visit: int = 1, attempt: int = 1) -> AbstractContextManager[Span]:
    """One attempt of one visit of a workflow stage; its model call nests inside."""
    if _backend is None:
        return NULL_SCOPE
    return _backend.span(
        f"stage_attempt {stage}",
        {sc.STAGE: stage, sc.STAGE_VISIT: visit, sc.STAGE_ATTEMPT: attempt},
    )


def model_call(
    model_id: str,
    *,
    provider: str | None = None,
    purpose: str = "",
    request: ChatRequest | None = None,
) -> AbstractContextManager[Span]:
    """``chat {model_id}``: one logical model call, with its retries as events.

    Inside an open model call (a traced ``complete`` whose provider retries on its own) the
    same span is reused, so one logical call is one span however many layers trace it.
    """
    if _backend is None:
        return NULL_SCOPE
    open_call = _CHAT.get()
    if open_call is not None:
        if provider is not None:
            open_call.set(sc.PROVIDER, provider)
        return _Reused(open_call)
    return _chat_scope(_backend, model_id, provider, purpose, request)


@contextmanager
def _chat_scope(
    backend: Backend,
    model_id: str,
    provider: str | None,
    purpose: str,
    request: ChatRequest | None,
) -> Iterator[Span]:
    attributes: dict[str, AttributeValue | None] = {
        sc.OPERATION: sc.OP_CHAT,
        sc.REQUEST_MODEL: model_id,
        sc.PROVIDER: provider,
        sc.SYSTEM: provider,
        sc.PURPOSE: purpose or None,
    }
    if request is not None:
        attributes[sc.REQUEST_MAX_TOKENS] = request.max_output_tokens
        attributes[sc.REQUEST_TEMPERATURE] = request.temperature
        if backend.capture_content:
            attributes[sc.INPUT_MESSAGES] = input_messages(request)
    with backend.span(f"{sc.OP_CHAT} {model_id}", attributes) as span:
        token = _CHAT.set(span)
        try:
            yield span
        finally:
            _CHAT.reset(token)


class _Reused(AbstractContextManager[Span]):
    __slots__ = ("_span",)

    def __init__(self, span: Span) -> None:
        self._span = span

    def __enter__(self) -> Span:
        return self._span

    def __exit__(self, *exc_info: object) -> None:
        return None


def provider_attempt(ordinal: int, outcome: str, failure: str | None) -> None:
    """Record one provider attempt (its ordinal, outcome and failure) on the open model call."""
    if _backend is None:
        return
    span = _CHAT.get()
    if span is not None:
        span.event(
            sc.ATTEMPT_EVENT,
            {sc.ATTEMPT_ORDINAL: ordinal, sc.ATTEMPT_OUTCOME: outcome, sc.ATTEMPT_FAILURE: failure},
        )


def provider_of(model_id: str) -> str | None:
    """The ``gen_ai.provider.name`` of a vitrine model id (``openai:gpt-4o`` is ``openai``)."""
    prefix, sep, _ = model_id.partition(":")
    return _PROVIDERS.get(prefix) if sep else None


_PROVIDERS = {
    "openai": "openai",
    "azure": "azure.ai.openai",
    "anthropic": "anthropic",
    "local": "llama_cpp",
}


def record_completion(span: Span, completion: ChatCompletion) -> None:
    """Put a completion's model, finish reason, token usage and (content on) output on ``span``."""
    if span is NULL_SPAN or _backend is None:
        return
    span.set(sc.RESPONSE_MODEL, completion.model or None)
    span.set(sc.RESPONSE_FINISH_REASONS, [completion.finish_reason])
    if completion.usage is not None:
        span.set(sc.INPUT_TOKENS, completion.usage.input_tokens)
        span.set(sc.OUTPUT_TOKENS, completion.usage.output_tokens)
    if _backend.capture_content:
        span.set(sc.OUTPUT_MESSAGES, output_messages(completion))


def evaluation(
    name: str,
    *,
    label: str,
    score: float | None = None,
    explanation: str | None = None,
    metadata: Mapping[str, MetadataValue] | None = None,
) -> None:
    """Record one evaluation result as a ``gen_ai.evaluation.result`` event on the open span.

    ``label`` is low-cardinality (``pass``, ``fail``, ``not_measured``, ``not_applicable``);
    ``explanation`` is scrubbed and bounded. A configured scores API (Langfuse, Phoenix)
    receives the same result, with ``metadata``, attached to the span.
    """
    if _backend is None:
        return
    span = _backend.current()
    if span is None:
        return

    why = sanitize_text(explanation) if explanation else None
    span.event(
        sc.EVALUATION_EVENT,
        {
            sc.EVALUATION_NAME: name,
            sc.EVALUATION_SCORE_VALUE: score,
            sc.EVALUATION_SCORE_LABEL: label,
            sc.EVALUATION_EXPLANATION: why,
        },
    )
    _backend.score(span, EvaluationResult(name, label, score, why, metadata or _NO_METADATA))

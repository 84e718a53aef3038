"""Traces of evaluations over OpenTelemetry: off (and free) unless a destination is configured.

Every trial, agent run, tool call, workflow stage attempt, model call and judge call becomes a
span following the OpenTelemetry GenAI conventions (and every red-team probe, RAG query and
pytest test one of its own), under one ``session`` span per command, and every check result a
``gen_ai.evaluation.result`` event, exported over OTLP/HTTP to the destination
:mod:`vitrine.tracing._settings` resolves (``--trace-to``, ``OTEL_EXPORTER_OTLP_*``,
``VITRINE_PHOENIX_URL``, Langfuse). Langfuse also receives the results as scores, Phoenix as
span annotations.

With no destination nothing is exported and OpenTelemetry is never imported: the helpers in
:mod:`vitrine.tracing._spans` are shared no-ops. ::

    from vitrine import tracing

    if tracing.setup(tracing.resolve_settings(trace_to="http://127.0.0.1:4318")):
        ...  # run the evaluation
    tracing.shutdown()  # export what is left, post Langfuse scores and Phoenix annotations
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from vitrine.errors import TracingUnavailableError
from vitrine.tracing._models import complete
from vitrine.tracing._semconv import STAGE_OUTCOME
from vitrine.tracing._settings import TraceSettings, TracingConfigError, resolve_settings
from vitrine.tracing._spans import (
    NULL_SPAN,
    Span,
    agent_span,
    capturing_content,
    current_trace_id,
    evaluation,
    install_backend,
    installed_backend,
    item_span,
    model_call,
    provider_attempt,
    provider_of,
    record_completion,
    record_tool_result,
    run_span,
    session_span,
    stage_attempt,
    tool_span,
    trial_span,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = [
    "NULL_SPAN",
    "STAGE_OUTCOME",
    "Span",
    "TraceSettings",
    "TracingConfigError",
    "TracingUnavailableError",
    "agent_span",
    "capturing_content",
    "complete",
    "current_trace_id",
    "detach",
    "enabled",
    "evaluation",
    "item_span",
    "model_call",
    "provider_attempt",
    "provider_of",
    "record_completion",
    "record_tool_result",
    "resolve_settings",
    "run_span",
    "session_span",
    "setup",
    "shutdown",
    "stage_attempt",
    "start",
    "tool_span",
    "trial_span",
]

_INSTALL_HINT = (
    "tracing needs the 'tracing' extra (the OpenTelemetry SDK and its OTLP/HTTP exporter are "
    "not installed): pip install 'vitrine[tracing]'"
)


def enabled() -> bool:
    """True while a tracing backend is installed."""
    return installed_backend() is not None


def setup(settings: TraceSettings | None, *, exporter: SpanExporter | None = None) -> bool:
    """Start tracing to ``settings`` (None: leave it off). Returns whether tracing is on.

    ``exporter`` replaces the OTLP exporter (tests use an in-memory one). Raises
    :class:`TracingUnavailableError` when the ``tracing`` extra is missing.
    """
    if settings is None:
        return False
    shutdown()
    try:
        from vitrine.tracing._otel import OtelBackend
    except ImportError as exc:
        raise TracingUnavailableError(_INSTALL_HINT) from exc
    install_backend(OtelBackend(settings, exporter=exporter))
    return True


def start(
    *,
    trace_to: str | None = None,
    trace_content: bool = False,
    env: Mapping[str, str] | None = None,
) -> bool:
    """Start tracing as the command line and the environment ask. Returns whether it is on.

    A bad destination raises :class:`TracingConfigError`. A missing ``tracing`` extra raises
    :class:`TracingUnavailableError` when ``--trace-to`` asked for tracing; when only the
    environment did (a variable set for other programs), the run goes on untraced with a
    warning.
    """
    settings = resolve_settings(env, trace_to=trace_to, trace_content=trace_content)
    try:
        return setup(settings)
    except TracingUnavailableError as exc:
        if trace_to is not None:
            raise
        sys.stderr.write(f"vitrine: warning: traces are not sent: {exc}\n")
        return False


def detach() -> None:
    """Turn tracing off in this process without exporting or posting anything.

    For a forked child: its copies of the parent's buffered spans and queued scores are the
    parent's to send, and spans it started itself could be exported without their parents.
    """
    install_backend(None)


def shutdown() -> None:
    """Export what is buffered, post queued scores and annotations, and turn tracing off.

    Safe to repeat.
    """
    backend = installed_backend()
    install_backend(None)
    if backend is None:
        return
    from vitrine.tracing._otel import OtelBackend

    if isinstance(backend, OtelBackend):
        backend.shutdown()

"""The OpenTelemetry backend: the only module that imports OpenTelemetry.

It is imported by :func:`vitrine.tracing.setup` when a destination is configured, never
otherwise, so a run without tracing loads none of the SDK. Spans are batched and exported over
OTLP/HTTP (protobuf) to the configured ``/v1/traces`` URL.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Status, StatusCode

from vitrine._redact import describe_exception, sanitize_text
from vitrine.tracing import _semconv as sc
from vitrine.tracing._langfuse import Score, ScoreSender
from vitrine.tracing._phoenix import Annotation, AnnotationSender
from vitrine.tracing._settings import TraceSettings
from vitrine.tracing._spans import AttributeValue, EvaluationResult, Span

__all__ = ["OtelBackend"]

_SCOPE = "vitrine"
_EXPORT_TIMEOUT_S = 10.0
_QUEUE_SPANS = 65_536
# Draining thousands of queued spans takes several export requests; a flush bounded by one
# request's timeout cut the tail of a long suite's trace (parents end last, so they were lost).
_FLUSH_S = 60.0
_BATCH_SPANS = 512


class _OtelSpan:
    """A :class:`~vitrine.tracing.Span` over an OpenTelemetry span."""

    __slots__ = ("_span",)

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def set(self, key: str, value: AttributeValue | None) -> None:
        if value is not None:
            self._span.set_attribute(key, value)

    def event(self, name: str, attributes: Mapping[str, AttributeValue | None]) -> None:
        self._span.add_event(name, _present(attributes))

    def fail(self, description: str) -> None:
        self._span.set_status(Status(StatusCode.ERROR, sanitize_text(description)))

    @property
    def trace_id(self) -> str | None:
        return format(self._span.get_span_context().trace_id, "032x")

    @property
    def span_id(self) -> str | None:
        return format(self._span.get_span_context().span_id, "016x")


class _ReportingExporter(SpanExporter):
    """An exporter that gives up on a collector after its first failed batch, and counts.

    A collector that hangs would otherwise hold every batch for a whole request timeout (and
    the exit flush for all of them), while each failure logged its own line or none; after the
    first failure the rest are dropped at once and :meth:`OtelBackend.shutdown` says so once.
    """

    def __init__(self, inner: SpanExporter) -> None:
        self._inner = inner
        self.failed = False
        self.dropped = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not self.failed:
            try:
                result = self._inner.export(spans)
            except Exception:  # the SDK's own exporters return FAILURE; a custom one may raise
                result = SpanExportResult.FAILURE
            if result is SpanExportResult.SUCCESS:
                return result
            self.failed = True
        self.dropped += len(spans)
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis)


class OtelBackend:
    """Spans through an OpenTelemetry tracer provider of vitrine's own.

    The provider is not installed as OpenTelemetry's global one: an application that embeds
    vitrine keeps its own tracing setup untouched.
    """

    def __init__(self, settings: TraceSettings, *, exporter: SpanExporter | None = None) -> None:
        self.capture_content = settings.capture_content
        self.settings = settings
        resource = Resource.create({"service.name": settings.service_name})
        self._provider = TracerProvider(resource=resource)
        # The exporter's own failure lines would repeat for every batch; the backend reports
        # a collector that did not take its spans once, at the end.
        logging.getLogger("opentelemetry.exporter.otlp.proto.http").setLevel(logging.CRITICAL)
        self._exporter = _ReportingExporter(
            exporter
            or OTLPSpanExporter(
                endpoint=settings.traces_url,
                headers=dict(settings.headers),
                timeout=_EXPORT_TIMEOUT_S,
            )
        )
        self._provider.add_span_processor(
            BatchSpanProcessor(
                self._exporter,
                # The SDK's default queue (2,048 spans) drops spans silently when a suite
                # produces them faster than one export drains them: an offline suite makes
                # thousands in seconds. A deeper queue keeps every span; batches stay small
                # enough for a collector to accept each request.
                max_queue_size=_QUEUE_SPANS,
                max_export_batch_size=_BATCH_SPANS,
            )
        )
        self._tracer = self._provider.get_tracer(_SCOPE)
        self._scores = None if settings.langfuse is None else ScoreSender(settings.langfuse)
        self._annotations = None if settings.phoenix is None else AnnotationSender(settings.phoenix)

    def span(
        self, name: str, attributes: Mapping[str, AttributeValue | None]
    ) -> AbstractContextManager[Span]:
        return self._span(name, attributes)

    @contextmanager
    def _span(self, name: str, attributes: Mapping[str, AttributeValue | None]) -> Iterator[Span]:
        with self._tracer.start_as_current_span(
            name,
            attributes=_present(attributes),
            record_exception=False,
            set_status_on_exception=False,
        ) as raw:
            try:
                yield _OtelSpan(raw)
            except BaseException as exc:
                # Only the type and a scrubbed line: an exception message can hold a prompt,
                # a key or an endpoint.
                error_type = (
                    "cancelled" if isinstance(exc, asyncio.CancelledError) else (type(exc).__name__)
                )
                raw.set_attribute(sc.ERROR_TYPE, error_type)
                raw.set_status(Status(StatusCode.ERROR, describe_exception(exc)))
                raise

    def current(self) -> Span | None:
        span = trace.get_current_span()
        if not span.get_span_context().is_valid:
            return None
        return _OtelSpan(span)

    def score(self, span: Span, result: EvaluationResult) -> None:
        if span.trace_id is None or span.span_id is None:
            return
        if self._scores is not None:
            value = result.label if result.score is None else result.score
            self._scores.add(
                Score(span.trace_id, span.span_id, result.name, value, result.explanation)
            )
        if self._annotations is not None:
            self._annotations.add(Annotation.of(span.span_id, result))

    @property
    def scores(self) -> ScoreSender | None:
        """The Langfuse score queue, when Langfuse is configured."""
        return self._scores

    @property
    def annotations(self) -> AnnotationSender | None:
        """The Phoenix annotation queue, when Phoenix is configured."""
        return self._annotations

    def shutdown(self) -> None:
        """Export every finished span, post the queued scores and annotations, and stop."""
        self._provider.force_flush(int(_FLUSH_S * 1000))
        self._provider.shutdown()
        if self._exporter.failed:
            collector = sanitize_text(self.settings.traces_url)
            sys.stderr.write(
                f"vitrine: warning: the trace collector at {collector} did not accept the "
                f"spans ({self._exporter.dropped} dropped): this run's trace is incomplete\n"
            )
            sys.stderr.flush()
        if self._scores is not None:
            self._scores.flush()
        # After the spans: Phoenix attaches an annotation to a span it has received.
        if self._annotations is not None:
            self._annotations.flush()


def _present(attributes: Mapping[str, AttributeValue | None]) -> dict[str, Any]:
    return {key: value for key, value in attributes.items() if value is not None}

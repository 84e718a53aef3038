"""Test support: a loopback OTLP/HTTP receiver that also answers Langfuse's scores API."""

from __future__ import annotations

import importlib.util
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

TRACING_VARIABLES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    "LANGFUSE_PUBLIC_KEY",
    "LANGFUSE_SECRET_KEY",
    "LANGFUSE_HOST",
    "VITRINE_PHOENIX_URL",
)

needs_otel = pytest.mark.skipif(
    importlib.util.find_spec("opentelemetry.sdk") is None
    or importlib.util.find_spec("opentelemetry.exporter.otlp.proto.http") is None,
    reason="the tracing extra (opentelemetry-sdk, the OTLP/HTTP exporter) is not installed",
)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """Records every POST; decodes trace exports and score bodies on demand."""

    server: ThreadingHTTPServer
    requests: list[Received] = field(default_factory=list)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def trace_requests(self) -> list[Received]:
        return [r for r in self.requests if r.path.endswith("/v1/traces")]

    def score_bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.body) for r in self.requests if r.path == "/api/public/scores"]

    def spans(self) -> list[tuple[dict[str, Any], Any]]:
        """Every exported span with its resource attributes: (resource, span)."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        found = []
        for received in self.trace_requests():
            export = ExportTraceServiceRequest.FromString(received.body)
            for resource_spans in export.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    found.extend((resource, span) for span in scope_spans.spans)
        return found


def langfuse_variables(receiver: Receiver) -> dict[str, str]:
    """Langfuse's three variables, naming ``receiver`` as the Langfuse host."""
    return {
        "LANGFUSE_PUBLIC_KEY": "pk-lf-test-public",
        "LANGFUSE_SECRET_KEY": "sk-lf-test-secret",
        "LANGFUSE_HOST": receiver.url,
    }


def scores_by_span(receiver: Receiver) -> dict[str, dict[str, dict[str, Any]]]:
    """Every span's name with the score bodies attached to it: {span name: {score name: body}}."""
    names = {span.span_id.hex(): span.name for _, span in receiver.spans()}
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for body in receiver.score_bodies():
        found.setdefault(names[body["observationId"]], {})[body["name"]] = body
    return found


def attributes(key_values: Any) -> dict[str, Any]:
    """OTLP KeyValue list to a plain dict."""
    out: dict[str, Any] = {}
    for kv in key_values:
        kind = kv.value.WhichOneof("value")
        value = getattr(kv.value, kind)
        if kind == "array_value":
            value = [getattr(v, v.WhichOneof("value")) for v in value.values]
        out[kv.key] = value
    return out


def start_receiver(status: int = 200) -> Receiver:
    received: list[Received] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            received.append(
                Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return Receiver(server, received)

"""Check results on a trial's span: events always, Phoenix annotations only when Phoenix is named,
an error status on a failed trial, and undeliverable annotations counted, never raised."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from tracing_support import Receiver, needs_otel, start_receiver

from vitrine import tracing
from vitrine._bench.results import ScenarioRow
from vitrine._outcomes import Observation
from vitrine.tracing import TracingConfigError, resolve_settings
from vitrine.tracing._observations import describe_trial
from vitrine.tracing._phoenix import Annotation, AnnotationSender
from vitrine.tracing._settings import PhoenixTarget, TraceSettings
from vitrine.tracing._spans import EvaluationResult

ROWS = (
    ScenarioRow("case-1", "greets", Observation.measured(0.25, False, label="curt")),
    ScenarioRow("case-1", "tone", Observation.not_measured("no tone judge was configured")),
    ScenarioRow("case-1", "sources", Observation.not_applicable("no sources asked")),
)


def _annotation_bodies(receiver: Receiver) -> list[dict[str, Any]]:
    return [
        item
        for r in receiver.requests
        if r.path == "/v1/span_annotations"
        for item in json.loads(r.body)["data"]
    ]


def _trial(
    settings: TraceSettings, rows: tuple[ScenarioRow, ...] = ROWS, error: str | None = None
) -> Any:
    """The trial span ``describe_trial`` leaves, exported through ``settings``."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    assert tracing.setup(settings, exporter=exporter)
    with tracing.trial_span("run-1", "bench@1", "arm", "case-1", 1) as span:
        describe_trial(span, rows, error)
    tracing.shutdown()
    (trial,) = exporter.get_finished_spans()
    return trial


def test_phoenix_is_named_by_its_setting_and_gets_the_spans_when_nothing_else_does():
    settings = resolve_settings(
        {
            "VITRINE_PHOENIX_URL": "http://127.0.0.1:6006/v1/traces",
            "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20k",
        }
    )
    assert settings is not None and settings.phoenix is not None
    assert settings.traces_url == "http://127.0.0.1:6006/v1/traces"
    assert settings.phoenix.annotations_url == "http://127.0.0.1:6006/v1/span_annotations"
    assert dict(settings.phoenix.headers) == {"authorization": "Bearer k"}


def test_a_url_alone_never_makes_phoenix_the_target_and_other_headers_stay_away_from_it():
    plain = resolve_settings({}, trace_to="http://127.0.0.1:6006")
    assert plain is not None and plain.phoenix is None
    elsewhere = resolve_settings(
        {
            "VITRINE_PHOENIX_URL": "http://127.0.0.1:6006",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-collector-key=secret",
        },
        trace_to="http://collector:4318",
    )
    assert elsewhere is not None and elsewhere.phoenix is not None
    assert elsewhere.traces_url == "http://collector:4318/v1/traces"
    assert dict(elsewhere.phoenix.headers) == {}


def test_a_bad_phoenix_url_is_refused_naming_its_setting():
    with pytest.raises(TracingConfigError, match="VITRINE_PHOENIX_URL"):
        resolve_settings({"VITRINE_PHOENIX_URL": "localhost:6006"})


@needs_otel
def test_without_phoenix_each_check_is_an_event_and_no_annotation_is_posted():
    receiver = start_receiver()
    try:
        trial = _trial(TraceSettings(f"{receiver.url}/v1/traces"))
    finally:
        receiver.server.shutdown()
    events = {
        e.attributes["gen_ai.evaluation.name"]: dict(e.attributes or {})
        for e in trial.events
        if e.name == "gen_ai.evaluation.result" and e.attributes
    }
    assert {k: v["gen_ai.evaluation.score.label"] for k, v in events.items()} == {
        "greets": "fail",
        "tone": "not_measured",
        "sources": "not_applicable",
    }
    assert events["greets"]["gen_ai.evaluation.score.value"] == 0.0
    assert "gen_ai.evaluation.score.value" not in events["tone"]
    assert events["tone"]["gen_ai.evaluation.explanation"] == "no tone judge was configured"
    assert _annotation_bodies(receiver) == []


@needs_otel
def test_with_phoenix_each_check_is_also_an_annotation_by_code_of_the_trial_span():
    receiver = start_receiver()
    try:
        settings = TraceSettings(f"{receiver.url}/v1/traces", phoenix=PhoenixTarget(receiver.url))
        trial = _trial(settings)
    finally:
        receiver.server.shutdown()
    span_id = format(trial.context.span_id, "016x")
    bodies = {b["name"]: b for b in _annotation_bodies(receiver)}
    assert bodies["greets"] == {
        "span_id": span_id,
        "name": "greets",
        "annotator_kind": "CODE",
        "result": {"label": "fail", "score": 0.0, "explanation": "curt"},
        "metadata": {"state": "measured", "passed": False, "value": 0.25},
    }
    assert bodies["tone"]["result"] == {
        "label": "not measured",
        "explanation": "no tone judge was configured",
    }
    assert bodies["tone"]["metadata"] == {"state": "not_measured"}
    assert bodies["sources"]["result"]["label"] == "not applicable"
    assert len(trial.events) == 3  # the events stay: the span describes itself anywhere


@needs_otel
def test_a_failed_trial_has_an_error_status_and_a_trial_with_gaps_does_not():
    settings = TraceSettings("http://127.0.0.1:9/v1/traces")
    failed = _trial(settings)
    assert failed.status.status_code.name == "ERROR"
    assert failed.status.description == "failed checks: greets"
    gaps = _trial(settings, rows=ROWS[1:])
    assert gaps.status.status_code.name == "UNSET"
    broken = _trial(settings, rows=ROWS[1:2], error="the subject raised TimeoutError")
    assert broken.status.status_code.name == "ERROR"
    assert broken.status.description == "the subject raised TimeoutError"


def test_annotations_phoenix_refuses_are_counted_and_reported_once(caplog):
    receiver = start_receiver(status=500)
    sender = AnnotationSender(PhoenixTarget(receiver.url))
    result = EvaluationResult("greets", "pass", 1.0)
    try:
        for index in range(1_200):  # three batches: the first refusal stops the rest
            sender.add(Annotation.of(f"{index:016x}", result))
        with caplog.at_level(logging.WARNING, logger="vitrine.tracing._phoenix"):
            sender.flush()
    finally:
        receiver.server.shutdown()
    assert (sender.sent, sender.failed) == (0, 1_200)
    assert len(receiver.requests) == 1
    (warning,) = caplog.records
    assert "1200 of 1200 check annotations" in warning.getMessage()


def test_an_unreachable_phoenix_is_counted_and_never_raised(caplog):
    sender = AnnotationSender(PhoenixTarget("http://127.0.0.1:9"))
    sender.add(Annotation.of("0" * 16, EvaluationResult("tone", "not_measured")))
    with caplog.at_level(logging.WARNING, logger="vitrine.tracing._phoenix"):
        sender.flush()
    assert (sender.sent, sender.failed) == (0, 1)
    assert len(caplog.records) == 1

"""Where traces go: nothing unless configured, the flag before the variables, Langfuse last."""

from __future__ import annotations

import base64

import pytest

from vitrine.tracing import TracingConfigError, resolve_settings
from vitrine.tracing._langfuse import Score

LANGFUSE = {
    "LANGFUSE_PUBLIC_KEY": "pk-lf-1",
    "LANGFUSE_SECRET_KEY": "sk-lf-2",
    "LANGFUSE_HOST": "https://langfuse.example.org/",
}


def test_nothing_is_traced_without_a_destination():
    assert resolve_settings({}) is None
    assert resolve_settings({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}) is None


def test_the_base_endpoint_gets_the_traces_path_and_the_traces_endpoint_is_used_as_is():
    base = resolve_settings({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"})
    assert base is not None and base.traces_url == "http://collector:4318/v1/traces"
    exact = resolve_settings(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://other:9999/custom",
        }
    )
    assert exact is not None and exact.traces_url == "http://other:9999/custom"


def test_the_flag_wins_over_the_environment_and_keeps_an_explicit_traces_path():
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://other:9999/custom"}
    settings = resolve_settings(env, trace_to="http://127.0.0.1:6006")
    assert settings is not None and settings.traces_url == "http://127.0.0.1:6006/v1/traces"
    kept = resolve_settings({}, trace_to="http://127.0.0.1:6006/v1/traces")
    assert kept is not None and kept.traces_url == "http://127.0.0.1:6006/v1/traces"


@pytest.mark.parametrize(
    "url", ["not a url", "ftp://host/x", "http://", "http://host:99999", "http://h/?q=1"]
)
def test_a_bad_destination_is_refused_with_the_setting_named(url):
    with pytest.raises(TracingConfigError, match="--trace-to"):
        resolve_settings({}, trace_to=url)


def test_headers_are_parsed_url_decoded_and_malformed_ones_refused():
    settings = resolve_settings(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-team=evals,Authorization=Bearer%20abc",
        }
    )
    assert settings is not None
    assert dict(settings.headers) == {"x-team": "evals", "Authorization": "Bearer abc"}
    with pytest.raises(TracingConfigError, match="OTEL_EXPORTER_OTLP_HEADERS"):
        resolve_settings(
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS": "oops"}
        )


def test_langfuse_alone_is_a_target_with_basic_auth_on_its_otel_path():
    settings = resolve_settings(LANGFUSE)
    assert settings is not None and settings.langfuse is not None
    assert settings.traces_url == "https://langfuse.example.org/api/public/otel/v1/traces"
    expected = "Basic " + base64.b64encode(b"pk-lf-1:sk-lf-2").decode()
    assert settings.headers["Authorization"] == expected
    assert settings.langfuse.scores_url == "https://langfuse.example.org/api/public/scores"


def test_another_endpoint_gets_no_langfuse_credentials():
    settings = resolve_settings({**LANGFUSE, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})
    assert settings is not None
    assert "Authorization" not in settings.headers
    assert "sk-lf-2" not in repr(settings)


def test_a_half_configured_langfuse_is_not_used(caplog):
    assert resolve_settings({"LANGFUSE_PUBLIC_KEY": "pk", "LANGFUSE_SECRET_KEY": "sk"}) is None
    assert "LANGFUSE_HOST" in caplog.text


def test_content_capture_is_off_unless_the_flag_or_the_variable_turns_it_on():
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}
    off = resolve_settings(env)
    assert off is not None and not off.capture_content
    by_flag = resolve_settings(env, trace_content=True)
    assert by_flag is not None and by_flag.capture_content
    by_env = resolve_settings({**env, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "TRUE"})
    assert by_env is not None and by_env.capture_content


def test_a_score_body_has_the_fields_the_langfuse_scores_api_takes():
    numeric = Score("t" * 32, "s" * 16, "recall", 1.0, "within budget").body()
    assert numeric == {
        "traceId": "t" * 32,
        "observationId": "s" * 16,
        "name": "recall",
        "value": 1.0,
        "dataType": "NUMERIC",
        "comment": "within budget",
    }
    categorical = Score("t" * 32, None, "recall", "not_measured", None).body()
    assert categorical == {
        "traceId": "t" * 32,
        "name": "recall",
        "value": "not_measured",
        "dataType": "CATEGORICAL",
    }

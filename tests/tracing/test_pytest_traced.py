"""A pytest session traced by vitrine's plugin to a Langfuse stand-in on the loopback: one span
per test under the session's span, its outcome as the score ``passed`` (none for a skipped test)
and each vitrine metric as a score of its own."""

from __future__ import annotations

import pytest
from tracing_support import (
    attributes,
    langfuse_variables,
    needs_otel,
    scores_by_span,
    start_receiver,
)

pytestmark = needs_otel
pytest_plugins = ["pytester"]

TESTS = """
import pytest

@pytest.mark.case("TC-S1-001")
def test_passes(vitrine_metrics):
    vitrine_metrics.check("greets", True, "said hello")
    vitrine_metrics.check("sources", None, "no sources were asked for")

def test_fails():
    assert 1 == 2

def test_skipped():
    pytest.skip("no service to ask")
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # In a process of its own: an in-process run drops the modules it imported, and
    # OpenTelemetry imported a second time in one process no longer knows its own span kinds.
    pytester.makepyfile(test_tiny=TESTS)
    return pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", *args)


def test_each_test_is_a_span_with_its_outcome_and_metrics_as_scores(pytester, monkeypatch):
    receiver = start_receiver()
    for name, value in langfuse_variables(receiver).items():
        monkeypatch.setenv(name, value)
    try:
        _run(pytester).assert_outcomes(passed=1, failed=1, skipped=1)
    finally:
        receiver.server.shutdown()

    spans = {span.name: span for _, span in receiver.spans()}
    session = spans["session pytest"]
    tests = {name: span for name, span in spans.items() if name.startswith("test ")}
    assert set(tests) == {
        f"test test_tiny.py::{name}" for name in ("test_passes", "test_fails", "test_skipped")
    }
    assert all(span.parent_span_id == session.span_id for span in tests.values())
    passes = attributes(tests["test test_tiny.py::test_passes"].attributes)
    assert passes["vitrine.test.case_id"] == "TC-S1-001"
    assert passes["test.case.result.status"] == "pass"
    failed = tests["test test_tiny.py::test_fails"]
    assert failed.status.code == failed.status.STATUS_CODE_ERROR

    sent = {
        span.removeprefix("test test_tiny.py::"): {
            n: (b["dataType"], b["value"]) for n, b in s.items()
        }
        for span, s in scores_by_span(receiver).items()
    }
    assert sent == {
        "test_passes": {
            "passed": ("NUMERIC", 1.0),
            "greets": ("NUMERIC", 1.0),
            "sources": ("CATEGORICAL", "not_applicable"),
        },
        "test_fails": {"passed": ("NUMERIC", 0.0)},
        "test_skipped": {"passed": ("CATEGORICAL", "not_measured")},
    }
    (skipped,) = scores_by_span(receiver)["test test_tiny.py::test_skipped"].values()
    assert "no service to ask" in skipped["comment"]


def test_the_trace_to_option_names_the_destination(pytester):
    receiver = start_receiver()
    try:
        _run(pytester, "--vitrine-trace-to", receiver.url).assert_outcomes(
            passed=1, failed=1, skipped=1
        )
    finally:
        receiver.server.shutdown()
    names = {span.name for _, span in receiver.spans()}
    assert {"session pytest", "test test_tiny.py::test_fails"} <= names
    assert receiver.score_bodies() == []  # no Langfuse named: evaluation events only


def test_a_bad_trace_destination_stops_the_session_before_any_test(pytester):
    result = _run(pytester, "--vitrine-trace-to", "localhost:4318")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--trace-to must be an http:// or https:// URL*"])

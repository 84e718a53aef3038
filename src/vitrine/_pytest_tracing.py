"""A pytest session as one trace, for the plugin: loaded only when a destination is configured.

One ``session pytest`` span for the session and one ``test {nodeid}`` span per test, inside
which the test's own spans nest (the subject's model and tool calls, in process). When a test
ends, its outcome is the evaluation ``passed`` (1.0 passed, 0.0 failed, no score when it was
skipped: a skipped test was not measured) and each of its vitrine metrics an evaluation of its
own. Everything is sent when the session ends.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from typing import Any

import pytest

from vitrine import tracing
from vitrine.pytest_plugin import metrics_of
from vitrine.tracing import _semconv as sc
from vitrine.tracing._observations import record_outcome
from vitrine.tracing._spans import installed_backend

__all__ = ["OUTCOME", "SessionTracer"]

OUTCOME = "passed"
_RESULTS = {"passed": "pass", "failed": "fail"}


class SessionTracer:
    """The plugin that traces one pytest session; see :meth:`start`."""

    def __init__(self, results: Mapping[str, Mapping[str, Any]], *, owns_tracing: bool) -> None:
        # The recorder's entry per test (outcome and detail), complete when a test's protocol ends.
        self._results = results
        self._backend = installed_backend() if owns_tracing else None
        self._scope = ExitStack()

    @classmethod
    def start(
        cls, config: pytest.Config, results: Mapping[str, Mapping[str, Any]]
    ) -> SessionTracer | None:
        """Start tracing as ``--vitrine-trace-to`` and the environment ask; None when neither
        names a destination. Tracing this process already runs is used as it is and left on.

        A destination that is not a URL, or ``--vitrine-trace-to`` without the ``tracing``
        extra, stops the session before any test runs.
        """
        if tracing.enabled():
            return cls(results, owns_tracing=False)
        try:
            started = tracing.start(
                trace_to=config.getoption("--vitrine-trace-to", None),
                trace_content=bool(config.getoption("--vitrine-trace-content", False)),
            )
        except (tracing.TracingConfigError, tracing.TracingUnavailableError) as exc:
            raise pytest.UsageError(str(exc)) from None
        return cls(results, owns_tracing=True) if started else None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._scope.enter_context(tracing.session_span("pytest"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Iterator[None]:
        case = next((str(v) for k, v in item.user_properties if k == "case"), None)
        attributes = {sc.TEST_CASE_NAME: item.nodeid, sc.TEST_CASE_ID: case}
        with tracing.item_span("test", item.nodeid, attributes) as span:
            try:
                return (yield)
            finally:
                self._record(span, item)

    def _record(self, span: tracing.Span, item: pytest.Item) -> None:
        for metric in metrics_of(item):
            record_outcome(metric.name, metric.state, metric.detail, value=metric.score)
        entry = self._results.get(item.nodeid)
        if entry is None:  # no phase reported (the run stopped first)
            return
        outcome, detail = str(entry["outcome"]), str(entry.get("detail", ""))
        span.set(sc.TEST_CASE_RESULT, _RESULTS.get(outcome))
        record_outcome(OUTCOME, outcome, detail)
        if outcome == "failed":
            span.fail(detail or "failed")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.close()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.close()

    def close(self) -> None:
        """End the session span and, when this plugin started tracing, send everything and
        stop it; safe to repeat."""
        self._scope.close()
        if self._backend is not None and installed_backend() is self._backend:
            tracing.shutdown()
        self._backend = None

"""The terminal selector runs plans through the same traced path as the flags."""

from __future__ import annotations

from tracing_support import needs_otel, start_receiver

from vitrine._cli import dispatch_plan
from vitrine._plans.validation import PlanOptions, validate
from vitrine._suite import load_suite

pytestmark = needs_otel


def test_a_plan_the_selector_dispatches_is_traced_when_the_environment_names_a_destination(
    tmp_path, monkeypatch
):
    receiver = start_receiver()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        plan, request = validate(
            load_suite(), PlanOptions(all=True, output=tmp_path), console=False
        )
        assert dispatch_plan(plan, request) == 0
    finally:
        receiver.server.shutdown()
    names = {span.name.split(" ")[0] for _, span in receiver.spans()}
    assert {"run", "trial", "chat", "execute_tool"} <= names

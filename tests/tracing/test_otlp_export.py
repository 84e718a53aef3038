"""The offline suite traced to a Langfuse-shaped OTLP/HTTP receiver on the loopback.

The receiver decodes what arrives exactly as Langfuse would: protobuf
ExportTraceServiceRequest posted to /api/public/otel/v1/traces with Basic authentication, and
JSON bodies posted to the scores API.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from tracing_support import TRACING_VARIABLES, Receiver, attributes, needs_otel, start_receiver

from vitrine._cli import main

pytestmark = needs_otel

PUBLIC_KEY = "pk-lf-test-public"
SECRET_KEY = "sk-lf-test-secret"


@pytest.fixture(scope="module")
def traced_suite(tmp_path_factory: pytest.TempPathFactory):
    receiver = start_receiver()
    store = tmp_path_factory.mktemp("store")
    with pytest.MonkeyPatch.context() as patch:
        for name in TRACING_VARIABLES:
            patch.delenv(name, raising=False)
        patch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
        patch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
        patch.setenv("LANGFUSE_HOST", receiver.url)
        code = main(["--all", "--output", str(store)])
    receiver.server.shutdown()
    return code, receiver, store


def _named(receiver: Receiver, prefix: str) -> list:
    return [span for _, span in receiver.spans() if span.name.startswith(prefix)]


def test_the_traced_suite_still_passes(traced_suite):
    code, _, _ = traced_suite
    assert code == 0


def test_traces_reach_langfuses_otel_path_as_protobuf_with_basic_auth(traced_suite):
    _, receiver, _ = traced_suite
    exports = receiver.trace_requests()
    assert exports
    expected = "Basic " + base64.b64encode(f"{PUBLIC_KEY}:{SECRET_KEY}".encode()).decode()
    for request in exports:
        assert request.path == "/api/public/otel/v1/traces"
        assert request.headers["authorization"] == expected
        assert request.headers["content-type"] == "application/x-protobuf"
    resources = {resource.get("service.name") for resource, _ in receiver.spans()}
    assert resources == {"vitrine"}


def test_the_model_calls_of_the_scripted_agent_are_chat_spans(traced_suite):
    _, receiver, _ = traced_suite
    chats = _named(receiver, "chat ")
    assert chats
    attrs = attributes(chats[0].attributes)
    assert chats[0].name == f"chat {attrs['gen_ai.request.model']}"
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == attrs["gen_ai.system"] == "vitrine.scripted"
    assert attrs["gen_ai.response.model"] == "scripted-shop-1"
    assert attrs["gen_ai.usage.input_tokens"] == 0
    assert "gen_ai.usage.output_tokens" in attrs


def test_tool_calls_are_execute_tool_spans_with_the_models_call_id(traced_suite):
    _, receiver, _ = traced_suite
    tools = _named(receiver, "execute_tool ")
    assert tools
    names = set()
    for span in tools:
        attrs = attributes(span.attributes)
        assert attrs["gen_ai.operation.name"] == "execute_tool"
        assert span.name == f"execute_tool {attrs['gen_ai.tool.name']}"
        assert attrs["gen_ai.tool.call.id"].startswith("call-")
        names.add(attrs["gen_ai.tool.name"])
    assert "search_products" in names


def test_spans_nest_trial_then_agent_then_model_and_tool_calls(traced_suite):
    _, receiver, _ = traced_suite
    by_id = {span.span_id: span for _, span in receiver.spans()}
    chat = _named(receiver, "chat ")[0]
    agent = by_id[chat.parent_span_id]
    assert agent.name == "invoke_agent shop-agent"
    assert attributes(agent.attributes)["gen_ai.agent.name"] == "shop-agent"
    trial = by_id[agent.parent_span_id]
    assert trial.name.startswith("trial ")
    run = by_id[trial.parent_span_id]
    assert run.name.startswith("run ")
    assert chat.trace_id == agent.trace_id == trial.trace_id == run.trace_id
    tool = _named(receiver, "execute_tool ")[0]
    assert by_id[tool.parent_span_id].name == "invoke_agent shop-agent"


def test_trial_spans_carry_the_run_arm_case_repetition_and_measurement_state(traced_suite):
    _, receiver, _ = traced_suite
    trials = _named(receiver, "trial ")
    arms = set()
    for span in trials:
        attrs = attributes(span.attributes)
        assert span.name == f"trial {attrs['vitrine.case']}"
        assert attrs["vitrine.run.id"]
        assert attrs["vitrine.repetition"] >= 1
        assert attrs["vitrine.measurement_state"] in ("measured", "not_measured", "not_applicable")
        arms.add(attrs["vitrine.arm"])
    assert {"scripted-agent", "zero-model-workflow"} <= arms


def test_check_results_are_evaluation_events_on_the_trial(traced_suite):
    _, receiver, _ = traced_suite
    events = [
        (span, event)
        for span in _named(receiver, "trial ")
        for event in span.events
        if event.name == "gen_ai.evaluation.result"
    ]
    assert events
    labels = set()
    for _, event in events:
        attrs = attributes(event.attributes)
        assert attrs["gen_ai.evaluation.name"]
        labels.add(attrs["gen_ai.evaluation.score.label"])
        if attrs["gen_ai.evaluation.score.label"] in ("pass", "fail"):
            assert attrs["gen_ai.evaluation.score.value"] in (0.0, 1.0)
        else:
            assert "gen_ai.evaluation.score.value" not in attrs
    # The degraded arm fails by design, so both labels occur.
    assert {"pass", "fail"} <= labels


def test_scores_reach_langfuses_scores_api_attached_to_exported_traces(traced_suite):
    _, receiver, _ = traced_suite
    bodies = receiver.score_bodies()
    assert bodies
    trace_ids = {span.trace_id.hex() for _, span in receiver.spans()}
    span_ids = {span.span_id.hex() for _, span in receiver.spans()}
    for body in bodies:
        assert set(body) <= {"traceId", "observationId", "name", "value", "dataType", "comment"}
        assert body["traceId"] in trace_ids
        assert body["observationId"] in span_ids
        assert body["dataType"] in ("NUMERIC", "CATEGORICAL")
        assert isinstance(body["value"], float if body["dataType"] == "NUMERIC" else str)
    expected = "Basic " + base64.b64encode(f"{PUBLIC_KEY}:{SECRET_KEY}".encode()).decode()
    scores = [r for r in receiver.requests if r.path == "/api/public/scores"]
    assert all(r.headers["authorization"] == expected for r in scores)
    assert all(r.headers["content-type"] == "application/json" for r in scores)


def test_message_content_stays_out_of_spans_by_default(traced_suite):
    _, receiver, _ = traced_suite
    keys = {key for _, span in receiver.spans() for key in attributes(span.attributes)}
    assert keys  # spans carry attributes, just not content
    for content_key in (
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    ):
        assert content_key not in keys


def test_each_sealed_run_records_its_trace_id(traced_suite):
    _, receiver, store = traced_suite
    exported = {span.trace_id.hex() for _, span in receiver.spans()}
    manifests = [
        json.loads(path.read_text())
        for path in Path(store).rglob("manifest.json")
        if "runs" in path.parts
    ]
    assert manifests
    for manifest in manifests:
        trace_ids = manifest["run"]["trace_ids"]
        assert len(trace_ids) == 1
        assert trace_ids[0] in exported


def test_the_boards_run_page_shows_the_runs_trace_id(traced_suite):
    from vitrine._board.app import Board

    _, _, store = traced_suite
    board = Board(Path(store))
    header = next(h for h in board.catalog.headers() if h.kind == "benchmark")
    manifest = json.loads((Path(store) / header.location / "manifest.json").read_text())
    html = board.get(f"/run/{header.ref}", {}).body.decode()
    assert manifest["run"]["trace_ids"][0] in html

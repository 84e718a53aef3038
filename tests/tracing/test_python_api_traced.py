"""``vitrine.evaluate`` from a script traces where the environment says, and flushes on return."""

from __future__ import annotations

from tracing_support import needs_otel, start_receiver

import vitrine
from vitrine import tracing

pytestmark = needs_otel


def _answer(case: vitrine.Case) -> vitrine.SubjectResponse:
    return vitrine.SubjectResponse(answer=f"hello {case.input}")


def _greets(case: vitrine.Case, response: vitrine.SubjectResponse) -> vitrine.Observation:
    greeted = "hello" in (response.answer or "")
    return vitrine.Observation.measured(float(greeted), greeted)


def _definition() -> vitrine.BenchmarkDefinition:
    greets = vitrine.admit(
        vitrine.check("greets", "1")(_greets),
        vitrine.ChanceFloor.not_derivable("a predicate over the subject's own answer"),
    )
    cases = tuple(vitrine.Case(f"c{i}", f"guest {i}") for i in range(3))
    return vitrine.BenchmarkDefinition("greetings", "1", cases, (greets,))


def test_an_environment_endpoint_traces_a_python_evaluation_and_flushes_it(monkeypatch):
    receiver = start_receiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    try:
        result = vitrine.evaluate(_definition(), vitrine.Arm("greeter", _answer))
    finally:
        receiver.server.shutdown()
    assert result.exit_code is vitrine.ExitCode.PASS
    names = [span.name for _, span in receiver.spans()]
    assert sorted(n for n in names if n.startswith("trial ")) == [
        "trial c0",
        "trial c1",
        "trial c2",
    ]
    assert any(n.startswith("run greetings") for n in names)
    assert not tracing.enabled()  # started for the evaluation, stopped with it


def test_without_a_destination_nothing_is_started(monkeypatch):
    result = vitrine.evaluate(_definition(), vitrine.Arm("greeter", _answer))
    assert result.exit_code is vitrine.ExitCode.PASS
    assert not tracing.enabled()


def test_the_board_trial_page_names_the_trace_its_spans_are_in(monkeypatch, tmp_path):
    from vitrine._board.app import Board

    receiver = start_receiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    try:
        result = vitrine.evaluate(_definition(), vitrine.Arm("greeter", _answer), store=tmp_path)
    finally:
        receiver.server.shutdown()
    run_id = result.runs[0].run_id
    sent = {span.trace_id.hex() for _, span in receiver.spans() if span.name == "trial c0"}
    html = Board(tmp_path, persist_cache=False).get(f"/trial/{run_id}/c0", {}).body.decode()
    (trace_id,) = sent
    assert f'id="trace">trace <span class="mono">{trace_id}</span>' in html

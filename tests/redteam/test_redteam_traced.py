"""`vitrine redteam` traced to a Langfuse stand-in on the loopback: one span per probe under the
command's session span, and a score per (probe, assertion) and per probe outcome; what was not
measured arrives as its state, never as a number."""

from __future__ import annotations

import pytest
from test_redteam_command import CASE_FILE
from tracing_support import (
    attributes,
    langfuse_variables,
    needs_otel,
    scores_by_span,
    start_receiver,
)

from vitrine._cli import main

pytestmark = needs_otel


@pytest.fixture
def langfuse(monkeypatch):
    receiver = start_receiver()
    for name, value in langfuse_variables(receiver).items():
        monkeypatch.setenv(name, value)
    yield receiver
    receiver.server.shutdown()


def test_a_static_run_sends_a_span_per_probe_and_a_score_per_assertion(tmp_path, langfuse):
    cases = tmp_path / "cases.yaml"
    cases.write_text(CASE_FILE)
    code = main(["redteam", "run", str(cases), "--output", str(tmp_path / "store")])
    assert code == 3  # the rubric had no judge: not measured

    spans = {span.name: span for _, span in langfuse.spans()}
    session = spans["session redteam run"]
    for probe_id in ("TC-RT-001", "TC-RT-002"):
        probe = spans[f"probe {probe_id}"]
        assert probe.parent_span_id == session.span_id
        assert attributes(probe.attributes)["vitrine.case"] == probe_id
    assert attributes(spans["probe TC-RT-002"].attributes)["vitrine.redteam.owasp"] == "LLM06"

    scores = scores_by_span(langfuse)
    leak, order = scores["probe TC-RT-001"], scores["probe TC-RT-002"]
    assert {name: (b["dataType"], b["value"]) for name, b in leak.items()} == {
        "not-contains": ("NUMERIC", 1.0),
        "llm-rubric": ("CATEGORICAL", "not_measured"),
        "resisted": ("CATEGORICAL", "not_measured"),
    }
    assert leak["llm-rubric"]["comment"] == "no judge configured"
    assert {name: (b["dataType"], b["value"]) for name, b in order.items()} == {
        "not-called": ("NUMERIC", 1.0),
        "resisted": ("NUMERIC", 1.0),
    }
    assert set(scores) == {"probe TC-RT-001", "probe TC-RT-002"}


def test_a_not_measured_assertion_is_an_event_without_a_score_value(tmp_path):
    receiver = start_receiver()
    cases = tmp_path / "cases.yaml"
    cases.write_text(CASE_FILE)
    try:
        argv = ["redteam", "run", str(cases), "--output", str(tmp_path / "store")]
        assert main([*argv, "--trace-to", receiver.url]) == 3
    finally:
        receiver.server.shutdown()
    (probe,) = [span for _, span in receiver.spans() if span.name == "probe TC-RT-001"]
    events = {
        attributes(e.attributes)["gen_ai.evaluation.name"]: attributes(e.attributes)
        for e in probe.events
        if e.name == "gen_ai.evaluation.result"
    }
    assert events["llm-rubric"]["gen_ai.evaluation.score.label"] == "not_measured"
    assert "gen_ai.evaluation.score.value" not in events["llm-rubric"]
    assert events["not-contains"]["gen_ai.evaluation.score.value"] == 1.0
    assert receiver.score_bodies() == []  # no Langfuse named: the events only


def test_an_adaptive_campaign_sends_one_probe_span_per_goal_with_its_outcome(tmp_path, langfuse):
    argv = ["redteam", "adaptive", "--strategy", "goat", "--goal", "unapproved-order"]
    code = main([*argv, "--output", str(tmp_path / "store")])
    spans = {span.name: span for _, span in langfuse.spans()}
    probe = spans["probe goat/unapproved-order"]
    assert probe.parent_span_id == spans["session redteam adaptive"].span_id
    (outcome,) = scores_by_span(langfuse)["probe goat/unapproved-order"].values()
    assert outcome["name"] == "resisted"
    assert outcome["value"] == {0: 1.0, 1: 0.0}.get(code, "not_measured")


def test_a_bad_trace_destination_exits_2_before_any_probe_runs(tmp_path, capsys):
    store = tmp_path / "store"
    code = main(["redteam", "run", "--output", str(store), "--trace-to", "localhost:4318"])
    assert code == 2
    assert "--trace-to must be an http:// or https:// URL" in capsys.readouterr().err
    assert not store.exists()

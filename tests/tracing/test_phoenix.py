"""The offline suite traced to a real Arize Phoenix, and its spans and check annotations read
back through its API."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pytest
from tracing_support import TRACING_VARIABLES, needs_otel

import vitrine
from vitrine._bench.results import RunResult
from vitrine._cli import main
from vitrine._outcomes import MeasurementState
from vitrine.store import load_run

pytestmark = needs_otel

# A whole offline suite sends thousands of spans; Phoenix ingests them in its own time.
_ARRIVAL_S = 180.0
# Phoenix files an annotation that arrives before its span and retries it every ten seconds.
_ANNOTATED_S = 120.0
# Span ids per annotations query: Phoenix takes up to 1,000, a URL holds fewer comfortably.
_IDS_PER_QUERY = 100

# What Phoenix must show for each observation state, written out independently of vitrine.
_LABELS = {"not_measured": "not measured", "not_applicable": "not applicable"}


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def _spans(phoenix: str, project: str = "default") -> list[dict[str, Any]]:
    """Every span of ``project``, through Phoenix's REST API, page by page."""
    spans: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query = {"limit": "1000", **({"cursor": cursor} if cursor else {})}
        page = _get(f"{phoenix}/v1/projects/{project}/spans?{urllib.parse.urlencode(query)}")
        spans.extend(page["data"])
        cursor = page.get("next_cursor")
        if not cursor:
            return spans


def _annotations(phoenix: str, span_ids: list[str]) -> list[dict[str, Any]]:
    """Every annotation of ``span_ids``, through Phoenix's REST API."""
    found: list[dict[str, Any]] = []
    for start in range(0, len(span_ids), _IDS_PER_QUERY):
        cursor: str | None = None
        while True:
            query = [("span_ids", i) for i in span_ids[start : start + _IDS_PER_QUERY]]
            query += [("limit", "1000"), *([("cursor", cursor)] if cursor else [])]
            url = f"{phoenix}/v1/projects/default/span_annotations?"
            page = _get(url + urllib.parse.urlencode(query))
            found.extend(page["data"])
            cursor = page.get("next_cursor")
            if not cursor:
                break
    return found


def _arrived(phoenix: str, trace_ids: set[str], trials: int) -> list[dict[str, Any]]:
    """The spans of ``trace_ids`` once ``trials`` trial spans and every parent have arrived."""
    deadline = time.monotonic() + _ARRIVAL_S
    while True:
        spans = [s for s in _spans(phoenix) if s["context"]["trace_id"] in trace_ids]
        ids = {s["context"]["span_id"] for s in spans}
        orphans = [s for s in spans if s["parent_id"] and s["parent_id"] not in ids]
        count = sum(s["name"].startswith("trial ") for s in spans)
        if (count >= trials and not orphans) or time.monotonic() > deadline:
            return spans
        time.sleep(0.5)


Key = tuple[str, str, str]


def _expected(runs: Iterable[RunResult]) -> dict[Key, tuple[str, float | None]]:
    """(run, case, check) to the label and score Phoenix must show for it."""
    expected: dict[Key, tuple[str, float | None]] = {}
    for run in runs:
        for row in run.rows:
            observation = row.observation
            if observation.state is MeasurementState.MEASURED:
                shown = ("pass", 1.0) if observation.passed else ("fail", 0.0)
            else:
                shown = (_LABELS[observation.state.value], None)
            expected[(run.run_id, row.case_id, row.check_key)] = shown
    return expected


def _annotated(
    phoenix: str, spans: list[dict[str, Any]], count: int
) -> dict[Key, tuple[str, float | None]]:
    """(run, case, check) to the label and score of each annotation by code on a trial span,
    once ``count`` of them are there (Phoenix attaches them in its own time)."""
    trials = {
        s["context"]["span_id"]: (
            s["attributes"]["vitrine.run.id"],
            s["attributes"]["vitrine.case"],
        )
        for s in spans
        if s["name"].startswith("trial ")
    }
    deadline = time.monotonic() + _ANNOTATED_S
    while True:
        found = [a for a in _annotations(phoenix, sorted(trials)) if a["annotator_kind"] == "CODE"]
        if len(found) >= count or time.monotonic() > deadline:
            return {
                (*trials[a["span_id"]], a["name"]): (a["result"]["label"], a["result"]["score"])
                for a in found
            }
        time.sleep(1.0)


@dataclass(frozen=True)
class Traced:
    """What one traced command left: its sealed runs and their spans as Phoenix holds them."""

    runs: list[RunResult]
    trace_ids: set[str]
    spans: list[dict[str, Any]]


def _traced(phoenix: str, runs: list[RunResult], trace_ids: set[str]) -> Traced:
    trials = sum(len(run.case_ids) for run in runs)
    return Traced(runs, trace_ids, _arrived(phoenix, trace_ids, trials))


@pytest.fixture(scope="module")
def phoenix_suite(phoenix: str, tmp_path_factory: pytest.TempPathFactory) -> Traced:
    """The offline suite, spans sent with --trace-to and Phoenix named for the annotations."""
    store = tmp_path_factory.mktemp("store")
    with pytest.MonkeyPatch.context() as patch:
        for name in TRACING_VARIABLES:
            patch.delenv(name, raising=False)
        patch.setenv("VITRINE_PHOENIX_URL", phoenix)
        code = main(["--all", "--output", str(store), "--trace-to", phoenix])
    assert code == 0
    manifests = [path for path in store.rglob("manifest.json") if "runs" in path.parts]
    trace_ids = {json.loads(path.read_text())["run"]["trace_ids"][0] for path in manifests}
    return _traced(phoenix, [load_run(path.parent) for path in manifests], trace_ids)


@pytest.fixture(scope="module")
def phoenix_spans(phoenix_suite: Traced) -> tuple[list[dict[str, Any]], set[str]]:
    return phoenix_suite.spans, phoenix_suite.trace_ids


def test_phoenix_holds_a_trial_span_for_every_sealed_run(phoenix_spans):
    spans, run_ids = phoenix_spans
    traced = {s["context"]["trace_id"] for s in spans if s["name"].startswith("trial ")}
    assert traced == run_ids
    trial = next(s for s in spans if s["name"].startswith("trial "))
    attrs = trial["attributes"]
    assert trial["name"] == f"trial {attrs['vitrine.case']}"
    assert {"vitrine.run.id", "vitrine.arm", "vitrine.repetition", "vitrine.measurement_state"} <= (
        set(attrs)
    )
    assert any(e["name"] == "gen_ai.evaluation.result" for e in trial["events"])


def test_phoenix_reads_the_model_calls_as_genai_chat_spans(phoenix_spans):
    spans, _ = phoenix_spans
    chats = [s for s in spans if s["name"].startswith("chat ")]
    assert chats
    attrs = chats[0]["attributes"]
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"].startswith("scripted-shop-1")
    assert attrs["gen_ai.provider.name"] == "vitrine.scripted"
    assert "gen_ai.usage.input_tokens" in attrs
    # Phoenix recognised the GenAI conventions: it files the span as an LLM call.
    assert chats[0]["span_kind"] == "LLM"


def test_phoenix_reads_the_tool_calls_as_genai_tool_spans_under_the_agent(phoenix_spans):
    spans, _ = phoenix_spans
    by_id = {s["context"]["span_id"]: s for s in spans}
    tools = [s for s in spans if s["name"].startswith("execute_tool ")]
    assert tools
    assert all(s["parent_id"] in by_id for s in tools)
    tool = next(s for s in tools if by_id[s["parent_id"]]["name"].startswith("invoke_agent "))
    assert tool["attributes"]["gen_ai.tool.name"] == tool["name"].removeprefix("execute_tool ")
    assert tool["attributes"]["gen_ai.tool.call.id"]
    assert tool["span_kind"] == "TOOL"
    agent = by_id[tool["parent_id"]]
    assert agent["name"] == "invoke_agent shop-agent"
    # An agent runs in a trial, or under the command's session span when a plan calls it
    # outside any run.
    agents = [s for s in spans if s["name"].startswith("invoke_agent ")]
    parents = {by_id[s["parent_id"]]["name"].split(" ")[0] for s in agents}
    assert "trial" in parents
    assert parents <= {"trial", "session"}


def _named(traced: Traced, prefix: str) -> list[dict[str, Any]]:
    return [s for s in traced.spans if s["name"].startswith(prefix)]


def _answer(case: vitrine.Case) -> vitrine.SubjectResponse:
    if case.id == "broken":
        raise RuntimeError("the subject broke")
    return vitrine.SubjectResponse(answer="bye" if case.id == "rude" else f"hello {case.input}")


def _greets(case: vitrine.Case, response: vitrine.SubjectResponse) -> vitrine.Observation:
    greeted = "hello" in (response.answer or "")
    return vitrine.Observation.measured(float(greeted), greeted)


def _tone(case: vitrine.Case, response: vitrine.SubjectResponse) -> vitrine.Observation:
    if case.id == "rude":
        return vitrine.Observation.measured(1.0, True)
    return vitrine.Observation.not_measured("no tone judge was configured")


def _sources(case: vitrine.Case, response: vitrine.SubjectResponse) -> vitrine.Observation:
    return vitrine.Observation.not_applicable("the case asks for no sources")


def _admitted(key: str, fn: Any) -> Any:
    return vitrine.admit(
        vitrine.check(key, "1")(fn),
        vitrine.ChanceFloor.not_derivable("a predicate over the subject's own answer"),
    )


@pytest.fixture(scope="module")
def phoenix_evaluation(phoenix: str, tmp_path_factory: pytest.TempPathFactory) -> Traced:
    """A Python evaluation whose checks take every state, traced to Phoenix by its setting alone:
    a passing trial, a failing one, one whose subject raised, checks not measured and n/a."""
    store = tmp_path_factory.mktemp("store")
    cases = tuple(
        vitrine.Case(case_id, f"guest {case_id}") for case_id in ("kind", "rude", "broken")
    )
    checks = tuple(
        _admitted(key, fn)
        for key, fn in (("greets", _greets), ("tone", _tone), ("sources", _sources))
    )
    definition = vitrine.BenchmarkDefinition("phoenix-annotated", "1", cases, checks)
    with pytest.MonkeyPatch.context() as patch:
        for name in TRACING_VARIABLES:
            patch.delenv(name, raising=False)
        patch.setenv("VITRINE_PHOENIX_URL", phoenix)
        result = vitrine.evaluate(definition, vitrine.Arm("greeter", _answer), store=store)
    manifests = [path for path in store.rglob("manifest.json") if "runs" in path.parts]
    trace_ids = {json.loads(path.read_text())["run"]["trace_ids"][0] for path in manifests}
    return _traced(phoenix, list(result.runs), trace_ids)


def test_every_check_of_every_trial_of_the_suite_is_an_annotation_phoenix_shows(
    phoenix: str, phoenix_suite: Traced
):
    expected = _expected(phoenix_suite.runs)
    assert {label for label, _ in expected.values()} >= {"pass", "fail"}
    assert _annotated(phoenix, phoenix_suite.spans, len(expected)) == expected


def test_checks_not_measured_or_not_applicable_are_annotated_as_such_without_a_score(
    phoenix: str, phoenix_evaluation: Traced
):
    expected = _expected(phoenix_evaluation.runs)
    assert _annotated(phoenix, phoenix_evaluation.spans, len(expected)) == expected
    (run,) = phoenix_evaluation.runs
    assert expected[(run.run_id, "kind", "tone")] == ("not measured", None)
    assert expected[(run.run_id, "kind", "sources")] == ("not applicable", None)
    # The subject that raised measured nothing: each of its checks is not measured.
    assert {expected[(run.run_id, "broken", key)] for key in ("greets", "tone", "sources")} == {
        ("not measured", None)
    }
    trial = next(s for s in phoenix_evaluation.spans if s["name"] == "trial kind")
    (tone,) = [
        a for a in _annotations(phoenix, [trial["context"]["span_id"]]) if a["name"] == "tone"
    ]
    assert tone["result"]["explanation"] == "no tone judge was configured"
    assert tone["metadata"] == {"state": "not_measured"}


def test_a_failed_trial_has_an_error_status_and_one_not_measured_does_not(
    phoenix_evaluation: Traced,
):
    trials = {s["name"]: s for s in phoenix_evaluation.spans if s["name"].startswith("trial ")}
    assert trials["trial broken"]["status_code"] == "ERROR"
    assert "the subject broke" in trials["trial broken"]["status_message"]
    assert trials["trial rude"]["status_code"] == "ERROR"
    assert trials["trial rude"]["status_message"] == "failed checks: greets"
    assert trials["trial kind"]["status_code"] != "ERROR"


def test_each_command_is_one_trace_under_a_session_span_phoenix_files_as_a_session(
    phoenix: str, phoenix_evaluation: Traced, phoenix_suite: Traced
):
    for traced, command in ((phoenix_evaluation, "evaluate"), (phoenix_suite, None)):
        (trace_id,) = traced.trace_ids
        (root,) = [s for s in traced.spans if not s["parent_id"]]
        assert root["name"] == f"session {command}" or command is None
        assert root["name"].startswith("session ")
        by_id = {s["context"]["span_id"]: s for s in traced.spans}
        runs = [s for s in traced.spans if s["name"].startswith("run ")]
        assert len(runs) == len(traced.runs)
        # A run is the command's, or one a trial ran (a control's meta-evaluation).
        assert root in (by_id[s["parent_id"]] for s in runs)
        assert all(by_id[s["parent_id"]] in (root, *_named(traced, "trial ")) for s in runs)
        session = _get(f"{phoenix}/v1/sessions/{root['attributes']['session.id']}")["data"]
        assert [t["trace_id"] for t in session["traces"]] == [trace_id]

"""The pytest plugin beyond the shop: an in-process subject, any JSON chat endpoint through an
adapter, not-applicable metrics, and reports with ordinary file modes that name an endpoint only
when one was used."""

from __future__ import annotations

import json
import os
import stat

import pytest

# Imported here so that pytester's in-process runs, which drop the modules they imported, all
# see one SubjectResponse class (the package root caches the names it hands out).
import vitrine._bench.model  # noqa: F401
from vitrine.pytest_plugin import JsonChatAdapter, Metrics, render_html
from vitrine.testing import FakeOpenAIServer, FakeReply

pytest_plugins = ["pytester"]

SUBJECT_MODULE = """
from vitrine import SubjectResponse

async def subject(case):
    return SubjectResponse(answer=f"echo {case.input} ({case.id})")

def blocking(case):
    return SubjectResponse(answer=case.input.upper())

def wrong(case):
    return "a bare string"
"""

ASKING_TESTS = """
import pytest

@pytest.mark.case("TC-S1-001")
def test_echo(vitrine_ask, vitrine_metrics):
    response = vitrine_ask("hello")
    vitrine_metrics.check("echoed", response.answer == "echo hello (TC-S1-001)", response.answer)
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider", *args)


def test_an_in_process_subject_named_in_the_ini_answers_vitrine_ask(pytester):
    pytester.makepyfile(my_subject=SUBJECT_MODULE, test_ask=ASKING_TESTS)
    pytester.makeini("[pytest]\nvitrine_subject = my_subject:subject\n")

    run(pytester).assert_outcomes(passed=1)


def test_a_conftest_fixture_supplies_the_subject_and_a_plain_function_is_run(pytester):
    pytester.makepyfile(my_subject=SUBJECT_MODULE)
    pytester.makeconftest(
        "import pytest\nimport my_subject\n\n"
        "@pytest.fixture(scope='session')\n"
        "def vitrine_subject():\n    return my_subject.blocking\n"
    )
    pytester.makepyfile(
        test_ask="def test_upper(vitrine_ask):\n    assert vitrine_ask('hi').answer == 'HI'\n"
    )

    run(pytester).assert_outcomes(passed=1)


def test_without_a_subject_vitrine_ask_says_how_to_name_one(pytester):
    pytester.makepyfile(test_ask=ASKING_TESTS)

    result = run(pytester)

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*vitrine_ask needs a subject: set vitrine_subject*"])


def test_a_subject_that_returns_no_response_object_is_refused_by_name(pytester):
    pytester.makepyfile(my_subject=SUBJECT_MODULE, test_ask=ASKING_TESTS)
    pytester.makeini("[pytest]\nvitrine_subject = my_subject:wrong\n")

    result = run(pytester)

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*returned str, not a SubjectResponse*"])


def test_a_check_that_does_not_apply_neither_passes_nor_fails():
    metrics = Metrics(lambda: None)
    metrics.check("owned item absent", None, "the answer names no item")
    metrics.not_applicable("price within budget", "no budget was stated")
    metrics.check("answered", True)

    metrics.settle()  # the test passes: nothing failed, nothing unmeasured

    assert [m.state for m in metrics.recorded] == ["not_applicable", "not_applicable", "passed"]
    assert metrics.recorded[0].score is None
    with pytest.raises(ValueError, match="say why"):
        metrics.not_applicable("x", " ")


NOT_APPLICABLE_TESTS = """
import pytest

@pytest.mark.case("TC-S1-002")
def test_partly_applicable(vitrine_metrics):
    vitrine_metrics.check("answered", True)
    vitrine_metrics.check("budget kept", None, "no budget was stated")
"""


def test_the_report_has_ordinary_file_modes_and_names_no_endpoint_when_none_was_used(pytester):
    pytester.makepyfile(test_na=NOT_APPLICABLE_TESTS)
    previous = os.umask(0o022)
    try:
        run(pytester, "--vitrine-report", "out").assert_outcomes(passed=1)
    finally:
        os.umask(previous)

    out = pytester.path / "out"
    for name in ("behaviour-report.json", "behaviour-report.html"):
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o644, name
    document = json.loads((out / "behaviour-report.json").read_text())
    assert "api_url" not in document
    (test,) = document["tests"]
    assert [m["state"] for m in test["metrics"]] == ["passed", "not_applicable"]
    page = (out / "behaviour-report.html").read_text()
    assert "not applicable" in page and "service " not in page


ADAPTER_MODULE = """
from vitrine.pytest_plugin import JsonChatAdapter

ADAPTER = JsonChatAdapter(
    path="/chat/completions", answer="/reply/text", context_key="user", session="/thread"
)
"""

CHAT_TESTS = """
def test_chat(vitrine_chat, vitrine_metrics):
    transcript = vitrine_chat("ada", "first", "second")
    vitrine_metrics.check("answered", transcript.answer == "hello ada", transcript.answer)
    vitrine_metrics.check("one thread", [t.session_id for t in transcript.turns] == ["t-1", "t-1"])
"""


def test_any_json_endpoint_is_reached_through_an_adapter_named_on_the_command_line(pytester):
    reply = FakeReply.raw(200, {"reply": {"text": "hello ada"}, "thread": "t-1"})
    pytester.makepyfile(my_adapter=ADAPTER_MODULE, test_chat=CHAT_TESTS)
    with FakeOpenAIServer(reply) as server:
        result = run(
            pytester,
            "--vitrine-url",
            server.base_url,
            "--vitrine-adapter",
            "my_adapter:ADAPTER",
            "--vitrine-report",
            "out",
        )
        bodies = [request.body for request in server.requests]
        url = server.base_url

    result.assert_outcomes(passed=1)
    assert bodies == [{"message": "first", "user": "ada"}, {"message": "second"}]
    document = json.loads((pytester.path / "out" / "behaviour-report.json").read_text())
    assert document["api_url"] == url


def test_an_adapter_that_is_not_one_is_a_usage_error(pytester):
    pytester.makepyfile(my_adapter="ADAPTER = 42\n", test_chat=CHAT_TESTS)

    result = run(pytester, "--vitrine-adapter", "my_adapter:ADAPTER")

    result.stdout.fnmatch_lines(["*is a int, not a ChatAdapter*"])
    assert result.ret != 0


def test_the_json_adapter_reads_its_pointers_and_keeps_the_reply():
    adapter = JsonChatAdapter(answer="/a/0", session="/s")
    (event,) = adapter.json_events({"a": ["yes"], "s": 7})
    assert event.data == {"reply": {"a": ["yes"], "s": 7}, "answer": "yes", "session_id": "7"}
    (empty,) = adapter.json_events({"other": 1})
    assert "answer" not in empty.data
    assert adapter.request_body("hi", "ctx", None) == {"message": "hi"}  # no context key set


def test_the_html_report_names_the_service_only_when_the_document_has_one():
    document = {"tests": [], "totals": {"passed": 0}, "created": "now"}
    assert "service " not in render_html(document)
    assert "service http://127.0.0.1:1" in render_html(
        {**document, "api_url": "http://127.0.0.1:1"}
    )

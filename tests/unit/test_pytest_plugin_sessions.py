"""The pytest plugin over a whole session: one event loop for every ask of the subject, the
retry policy of ``vitrine.evaluate()``, and a subject that cannot answer reported as not
measured (a skip with its reason, or a failure when asked), never as a crash or a pass."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from docs_examples import python_blocks

# Imported here so that pytester's in-process runs, which drop the modules they imported, all
# see one SubjectResponse class (the package root caches the names it hands out).
import vitrine._bench.model
import vitrine._bench.retry  # noqa: F401
from vitrine.testing import FakeOpenAIServer, FakeReply

openai = pytest.importorskip("openai")

pytest_plugins = ["pytester"]

# A subject as users write them: one AsyncOpenAI client for the whole module, reused by every
# test. It keeps every loop it ran on, so a test can see which loops those were.
SHARED_CLIENT_SUBJECT = """
import asyncio

import openai

from vitrine import SubjectResponse

CLIENT = openai.AsyncOpenAI(base_url={base_url!r}, api_key="test", max_retries=0)
LOOPS = []


async def subject(case):
    LOOPS.append(asyncio.get_running_loop())
    reply = await CLIENT.chat.completions.create(
        model="m", messages=[{{"role": "user", "content": case.input}}]
    )
    return SubjectResponse(answer=reply.choices[0].message.content)
"""

TWENTY_TESTS = """
import pytest

import my_agent


@pytest.mark.parametrize("n", range(20))
def test_asks(vitrine_ask, n):
    assert vitrine_ask(f"question {n}").answer == "ok"


def test_zz_every_ask_ran_on_one_loop() -> None:
    assert len(my_agent.LOOPS) == 20
    # Distinct loop objects are kept alive in LOOPS, so equal ids mean one loop.
    assert len({id(loop) for loop in my_agent.LOOPS}) == 1
    assert not my_agent.LOOPS[0].is_closed()
"""

ONE_TEST = """
def test_ask(vitrine_ask):
    assert vitrine_ask("hello").answer == "ok"
"""

FAST_RETRIES = """
import pytest

from vitrine import RetryPolicy


@pytest.fixture(scope="session")
def vitrine_retry_policy():
    return RetryPolicy(retries=2, backoff_s=0.01, seed=1)
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider", *args)


def _report(pytester: pytest.Pytester) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(
        (pytester.path / "out" / "behaviour-report.json").read_text()
    )
    return document


def _agent(pytester: pytest.Pytester, server: FakeOpenAIServer) -> None:
    pytester.makepyfile(my_agent=SHARED_CLIENT_SUBJECT.format(base_url=server.base_url))
    pytester.makeini("[pytest]\nvitrine_subject = my_agent:subject\n")


def test_twenty_tests_share_one_module_level_async_openai_client(pytester: pytest.Pytester) -> None:
    with FakeOpenAIServer() as server:
        _agent(pytester, server)
        pytester.makepyfile(test_twenty=TWENTY_TESTS)
        result = run(pytester)
        requests = server.request_count

    result.assert_outcomes(passed=21)
    assert requests == 20


def test_the_shared_client_breaks_when_each_ask_gets_a_fresh_loop() -> None:
    # What test_twenty_tests_share... guards against: the same client, asked the way the
    # plugin used to ask it (a fresh asyncio.run per call), fails on a later call.
    from vitrine import SubjectResponse

    with FakeOpenAIServer() as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)

        async def subject() -> SubjectResponse:
            reply = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
            return SubjectResponse(answer=reply.choices[0].message.content)

        errors = []
        for _ in range(3):
            try:
                asyncio.run(subject())
            except RuntimeError as exc:
                errors.append(str(exc))

    assert "Event loop is closed" in errors


def test_an_injected_500_is_retried_and_the_retry_is_in_the_report(
    pytester: pytest.Pytester,
) -> None:
    with FakeOpenAIServer([FakeReply.error(500, "boom")]) as server:
        _agent(pytester, server)
        pytester.makeconftest(FAST_RETRIES)
        pytester.makepyfile(test_one=ONE_TEST)
        result = run(pytester, "--vitrine-report", "out")
        requests = server.request_count

    result.assert_outcomes(passed=1)
    assert requests == 2
    document = _report(pytester)
    (test,) = document["tests"]
    assert test["outcome"] == "passed" and test["retries"] == 1
    (asked,) = test["asks"]
    assert asked["state"] == "measured" and asked["tries"] == 2
    (failed,) = asked["failed_attempts"]
    assert failed["attempt"] == 1 and failed["category"] == "InternalServerError"
    assert document["retries"] == 1
    assert (
        "1 retried asks of the subject" in (pytester.path / "out/behaviour-report.html").read_text()
    )


def test_a_subject_that_always_500s_is_skipped_with_the_reason_or_fails_when_asked(
    pytester: pytest.Pytester,
) -> None:
    with FakeOpenAIServer(FakeReply.error(500, "boom")) as server:
        _agent(pytester, server)
        pytester.makeconftest(FAST_RETRIES)
        pytester.makepyfile(test_one=ONE_TEST)
        skipped = run(pytester, "-rs", "--vitrine-report", "out")
        document = _report(pytester)
        failed = run(pytester, "--vitrine-unmeasured=fail")
        requests = server.request_count

    skipped.assert_outcomes(skipped=1)
    skipped.stdout.fnmatch_lines(
        [
            "*the subject was not measured on case 'test_ask': InternalServerError*"
            "(still failing after 3 tries)*"
        ]
    )
    assert "Traceback" not in skipped.stdout.str()
    (test,) = document["tests"]
    assert test["outcome"] == "skipped" and test["retries"] == 2
    assert test["not_measured"].startswith("the subject was not measured")
    assert [a["state"] for a in test["asks"]] == ["not_measured"]
    assert len(test["asks"][0]["failed_attempts"]) == 3
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*still failing after 3 tries) (--vitrine-unmeasured=fail)*"])
    assert requests == 6  # three tries in each session


BUGGY_SUBJECTS = """
from vitrine import SubjectResponse

CALLS = []


def buggy(case):
    CALLS.append(case.id)
    raise KeyError("token sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 not found")


FLAKY = {"left": 1}


def flaky(case):
    if FLAKY["left"]:
        FLAKY["left"] -= 1
        raise ConnectionError("connection reset")
    return SubjectResponse(answer="ok")
"""

BUGGY_TEST = """
import my_subjects


def test_ask(vitrine_ask):
    vitrine_ask("hello")


def test_zz_asked_once() -> None:
    assert my_subjects.CALLS == ["test_ask"]
"""


def test_a_subject_that_raises_a_bug_is_not_measured_at_once_with_its_sanitized_sentence(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(my_subjects=BUGGY_SUBJECTS, test_buggy=BUGGY_TEST)
    pytester.makeini("[pytest]\nvitrine_subject = my_subjects:buggy\n")

    result = run(pytester, "-rs")

    result.assert_outcomes(skipped=1, passed=1)  # skipped, and asked only once: no retries
    result.stdout.fnmatch_lines(
        ["*not measured on case 'test_ask': KeyError: *[redacted]*(not retried: not a transient*"]
    )
    assert "sk-proj" not in result.stdout.str()


STUBBORN_TESTS = """
import pytest


def test_swallows_the_skip(vitrine_ask):
    try:
        vitrine_ask("hello")
    except BaseException:
        pass


def test_failed_a_metric_first(vitrine_ask, vitrine_metrics):
    vitrine_metrics.check("greeted", False, "no greeting yet")
    vitrine_ask("hello")
"""


def test_a_caught_skip_is_still_not_measured_and_a_failed_metric_still_fails(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(my_subjects=BUGGY_SUBJECTS, test_stubborn=STUBBORN_TESTS)
    pytester.makeini("[pytest]\nvitrine_subject = my_subjects:buggy\n")

    result = run(pytester, "-rs")

    result.assert_outcomes(skipped=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "metric 'greeted' failed: no greeting yet",
            "then the subject was not measured on case 'test_failed_a_metric_first'*",
            "SKIPPED*not measured on case 'test_swallows_the_skip'*",
        ]
    )
    assert "During handling" not in result.stdout.str()


@pytest.mark.parametrize(
    ("args", "ini", "outcome"),
    [
        ((), "", "passed"),  # the default, 2 retries, rides out one ConnectionError
        (("--vitrine-retries", "0"), "", "skipped"),
        ((), "vitrine_retries = 0\n", "skipped"),
        (("--vitrine-retries", "1"), "vitrine_retries = 0\n", "passed"),  # the option wins
    ],
)
def test_the_retry_count_comes_from_the_option_or_the_ini(
    pytester: pytest.Pytester, args: tuple[str, ...], ini: str, outcome: str
) -> None:
    pytester.makepyfile(
        my_subjects=BUGGY_SUBJECTS,
        test_flaky="def test_ask(vitrine_ask):\n    assert vitrine_ask('hi').answer == 'ok'\n",
    )
    pytester.makeini(f"[pytest]\nvitrine_subject = my_subjects:flaky\n{ini}")

    run(pytester, *args).assert_outcomes(**{outcome: 1})


def test_a_retry_count_that_is_no_number_is_a_usage_error_naming_the_setting(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(my_subjects=BUGGY_SUBJECTS, test_buggy=BUGGY_TEST)
    pytester.makeini("[pytest]\nvitrine_subject = my_subjects:flaky\n")

    result = run(pytester, "--vitrine-retries", "-1")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--vitrine-retries = '-1': expected a whole number*"])


ASYNC_TESTS = """
import asyncio

import pytest

import my_agent


@pytest.mark.asyncio
async def test_awaits_the_subject(vitrine_ask):
    assert (await vitrine_ask.respond("first")).answer == "ok"
    assert my_agent.LOOPS[-1] is not asyncio.get_running_loop()


@pytest.mark.asyncio
async def test_blocks_on_the_subject_without_nesting_loops(vitrine_ask):
    assert vitrine_ask("second").answer == "ok"


def test_a_plain_test_after_them(vitrine_ask):
    assert vitrine_ask("third").answer == "ok"
    assert len({id(loop) for loop in my_agent.LOOPS}) == 1


@pytest.mark.asyncio
async def test_a_judge_runs_in_an_async_test(vitrine_metrics):
    vitrine_metrics.judged("kind", input="q", output="a", criteria=["kind"],
                           evaluation_steps=["read"], threshold=0.7)
    assert vitrine_metrics.recorded[-1].state == "passed"
"""

JUDGE_MODULE = """
from vitrine.judge._base import CriterionVerdict, JudgeResult


class Judge:
    judge_id = "always"

    async def evaluate(self, input, output, criteria):
        verdicts = tuple(CriterionVerdict(c.id, True, "yes") for c in criteria)
        return JudgeResult(100.0, "all met", verdicts)
"""


def test_async_def_tests_ask_on_the_session_loop_awaiting_or_blocking(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pytest_asyncio")
    monkeypatch.setenv("VITRINE_JUDGE_FACTORY", "my_judge:Judge")
    with FakeOpenAIServer() as server:
        _agent(pytester, server)
        pytester.makepyfile(my_judge=JUDGE_MODULE, test_async=ASYNC_TESTS)
        result = run(pytester)

    result.assert_outcomes(passed=4)


def test_a_session_fixture_can_close_the_shared_client_on_the_session_loop(
    pytester: pytest.Pytester,
) -> None:
    with FakeOpenAIServer() as server:
        _agent(pytester, server)
        pytester.makeconftest(
            "import pytest\nimport my_agent\n\n"
            "@pytest.fixture(scope='session', autouse=True)\n"
            "def close_client(vitrine_loop):\n"
            "    yield\n"
            "    vitrine_loop.run(my_agent.CLIENT.close())\n"
            "    assert my_agent.CLIENT.is_closed()\n"
        )
        pytester.makepyfile(test_one=ONE_TEST)
        result = run(pytester)

    result.assert_outcomes(passed=1)
    assert "Error" not in result.stdout.str()


def test_the_loop_is_closed_when_the_session_ends_and_refuses_later_work() -> None:
    from vitrine._pytest_loop import SessionLoop
    from vitrine.errors import RunningLoopError

    loop = SessionLoop()
    assert not loop.started  # nothing asked, nothing started

    async def leftover() -> None:
        await asyncio.sleep(3600)

    async def where() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    seen = loop.run(where())
    assert loop.run(where()) is seen
    pending = loop.submit(leftover())
    loop.close()

    assert seen.is_closed() and pending.cancelled()
    with pytest.raises(RunningLoopError, match="closed"):
        loop.run(where())


def test_asking_the_probe_from_a_coroutine_on_the_session_loop_is_refused_not_a_deadlock() -> None:
    from vitrine._pytest_loop import SessionLoop
    from vitrine.errors import RunningLoopError

    loop = SessionLoop()

    async def nested() -> None:
        async def inner() -> None:
            return None

        loop.run(inner())

    try:
        with pytest.raises(RunningLoopError, match=r"await vitrine_ask\.respond"):
            loop.run(nested())
    finally:
        loop.close()


# --- the documentation page's examples ----------------------------------------------------

_FILE_NAME = re.compile(r"^# (\S+\.py)\n")


def test_every_python_example_of_the_pytest_page_runs_as_the_file_it_names(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = python_blocks("pytest.md")
    files: dict[str, str] = {}
    for block in blocks:
        named = _FILE_NAME.match(block)
        assert named, f"a python block of docs/pytest.md names no file: {block[:80]!r}"
        files[named.group(1)] = files.get(named.group(1), "") + block
    assert "conftest.py" in files and any(name.startswith("test_") for name in files)
    for name, source in files.items():
        (pytester.path / name).write_text(source, encoding="utf-8")
    pytester.makeini("[pytest]\nvitrine_subject = my_agent:subject\n")
    pytester.makepyfile(my_judge=JUDGE_MODULE)  # so the judged example is measured, not skipped
    monkeypatch.setenv("VITRINE_JUDGE_FACTORY", "my_judge:Judge")
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.delenv("VITRINE_JUDGE_PROVIDER", raising=False)
    monkeypatch.delenv("PROMPTFOO_GRADING_PROVIDER", raising=False)
    monkeypatch.delenv("VITRINE_UNMEASURED", raising=False)

    with FakeOpenAIServer(FakeReply.text("Hello Ada, CHF 20 it is.")) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        # A fresh interpreter: the page's file names (test_agent.py, ...) may already be
        # imported modules of the suite running this test.
        result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-rs")
        requests = server.request_count

    result.assert_outcomes(passed=3)
    assert requests == 3


def test_a_retry_policy_fixture_that_returns_no_policy_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(my_subjects=BUGGY_SUBJECTS, test_buggy=BUGGY_TEST)
    pytester.makeini("[pytest]\nvitrine_subject = my_subjects:flaky\n")
    pytester.makeconftest(
        "import pytest\n\n"
        "@pytest.fixture(scope='session')\n"
        "def vitrine_retry_policy():\n    return 3\n"
    )

    result = run(pytester)

    result.stdout.fnmatch_lines(["*vitrine_retry_policy fixture returned int, not a*RetryPolicy*"])


def test_the_html_report_escapes_what_an_ask_recorded() -> None:
    from vitrine.pytest_plugin import render_html

    hostile = "<script>alert(1)</script>"
    asked = {
        "case": hostile,
        "state": "not_measured",
        "tries": 3,
        "failed_attempts": [{"attempt": 1, "category": "X", "error": hostile}],
        "reason": hostile,
    }
    test = {"nodeid": "t", "outcome": "skipped", "asks": [asked], "detail": hostile}
    page = render_html({"tests": [test], "totals": {"skipped": 1}, "created": "now"})

    assert "<script>" not in page
    assert "subject on &lt;script&gt;alert(1)&lt;/script&gt;: 3 tries" in page
    assert "try 1: &lt;script&gt;" in page

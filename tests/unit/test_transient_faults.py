"""Transient faults of the model SDKs are retried by default, counted, and explained.

The subjects here are agents built on the OpenAI SDK against a loopback server that fails on
purpose, so each property is shown on the producer: the SDK raises its own exception classes
and vitrine has to recognise them without being told their names.
"""

from __future__ import annotations

import httpx
import openai
import pytest

import vitrine
from vitrine.adapters import record_model_call, record_tool_call
from vitrine.subjects import ModelCallRecord, ToolCallStatus
from vitrine.testing import FakeOpenAIServer, FakeReply

FAST = vitrine.RetryPolicy(retries=2, backoff_s=0.0, max_backoff_s=0.0, jitter=0.0)


def _answered(case: vitrine.Case, response: vitrine.SubjectResponse) -> bool:
    return bool(response.answer)


def _evaluation(
    subject, *, cases: int = 3, retry: vitrine.RetryPolicy = FAST
) -> vitrine.Evaluation:
    return vitrine.Evaluation(
        "sdk-faults",
        cases=[vitrine.Case(f"c{i}", f"question {i}") for i in range(cases)],
        checks=[_answered],
        arms={"agent": subject},
        retry=retry,
    )


def _sdk_agent(server: FakeOpenAIServer):
    # max_retries=0: every fault reaches vitrine, as it does once the SDK's own tries are spent.
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)

    async def agent(case: vitrine.Case) -> vitrine.SubjectResponse:
        reply = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": str(case.input)}]
        )
        return vitrine.SubjectResponse(answer=reply.choices[0].message.content)

    return agent


@pytest.mark.parametrize(
    ("fault", "transient"),
    [
        (FakeReply.error(500, "overloaded"), True),
        (FakeReply.error(503, "unavailable"), True),
        (FakeReply.error(429, "slow down"), True),
        (FakeReply.dropped(), True),
        (FakeReply.error(400, "bad request"), False),
        (FakeReply.error(404, "no such model"), False),
    ],
    ids=["500", "503", "429", "dropped", "400", "404"],
)
def test_the_openai_sdks_own_exceptions_are_classified_by_what_a_retry_can_cure(fault, transient):
    with FakeOpenAIServer([fault]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        with pytest.raises(openai.OpenAIError) as raised:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert vitrine.RetryPolicy().retryable(raised.value) is transient


def test_httpx_transport_errors_are_transient_and_other_errors_are_not():
    policy = vitrine.RetryPolicy()
    assert policy.retryable(httpx.ConnectTimeout("slow"))
    assert policy.retryable(httpx.RemoteProtocolError("cut"))
    assert not policy.retryable(httpx.UnsupportedProtocol("ftp://"))
    assert not policy.retryable(ValueError("a bug"))
    assert not vitrine.RetryPolicy(sdk_transient=False).retryable(httpx.ConnectTimeout("slow"))


def test_an_sdk_500_is_retried_without_being_named_and_nothing_is_left_unmeasured(tmp_path):
    with FakeOpenAIServer([FakeReply.error(500, "overloaded")]) as server:
        result = _evaluation(_sdk_agent(server)).run(tmp_path, controls=False, mutants=False)
        assert server.request_count == 4  # one failed try, then three answers
    assert result.exit_code is vitrine.ExitCode.PASS
    assert result.runs.retried_trials == 1
    assert any("1 of 3 trials were retried" in note for note in result.runs.notes())


def test_evaluate_retries_twice_when_the_caller_says_nothing(tmp_path):
    script = [FakeReply.error(502, "bad gateway"), FakeReply.error(500, "again")]
    with FakeOpenAIServer(script) as server:
        definition = _evaluation(_sdk_agent(server), cases=1).definition()
        result = vitrine.evaluate(
            definition, vitrine.Arm("agent", _sdk_agent(server)), retry_backoff_s=0.0
        )
    assert result.exit_code is vitrine.ExitCode.PASS
    assert result.retried_trials == 1


def test_trials_left_unmeasured_are_explained_on_the_console_grouped_by_reason(tmp_path):
    script = [FakeReply.error(500, "overloaded"), FakeReply.error(500, "overloaded")]
    with FakeOpenAIServer(script) as server:
        no_retry = vitrine.RetryPolicy(retries=0)
        result = _evaluation(_sdk_agent(server), retry=no_retry).run(
            tmp_path, controls=False, mutants=False
        )
    assert result.exit_code is vitrine.ExitCode.NOT_MEASURED
    (note,) = [n for n in result.runs.notes() if "not measured, by reason" in n]
    assert note.startswith("2 trial(s) not measured, by reason: 2 × InternalServerError")
    assert "not measured, by reason: 2 ×" in result.summary()


def test_an_arm_that_answers_no_trial_is_an_outage_not_a_missing_measurement(tmp_path):
    with FakeOpenAIServer(FakeReply.error(503, "down")) as server:
        result = _evaluation(_sdk_agent(server), cases=2).run(
            tmp_path, controls=False, mutants=False
        )
    assert result.exit_code is vitrine.ExitCode.INFRASTRUCTURE
    assert "arm agent: the subject answered none of its 2 trials" in result.runs.decision().reason


def test_what_an_adapter_journals_fills_the_response_unless_the_subject_reported_it():
    def journalled(case: vitrine.Case) -> vitrine.SubjectResponse:
        record_model_call(ModelCallRecord("m", input_tokens=5, output_tokens=2, sdk_retries=1))
        record_tool_call(vitrine.ToolCallRecord("lookup", {"id": case.id}, ToolCallStatus.OK))
        own = None if case.id == "c0" else (vitrine.ToolCallRecord("own", {}, ToolCallStatus.OK),)
        return vitrine.SubjectResponse(answer="done", tool_calls=own)

    result = _evaluation(journalled, cases=2).run(controls=False, mutants=False)
    (run,) = result.runs.runs
    assert [call["name"] for call in run.responses["c0"]["tool_calls"]] == ["lookup"]
    assert [call["name"] for call in run.responses["c1"]["tool_calls"]] == ["own"]
    assert run.responses["c0"]["usage"]["input_tokens"] == 5
    assert run.responses["c0"]["model_calls"][0]["sdk_retries"] == 1
    assert any("retried 2 time(s) on their own" in note for note in result.runs.notes())


def test_recording_outside_a_trial_keeps_nothing_and_changes_nothing():
    record_tool_call(vitrine.ToolCallRecord("lookup", {}, ToolCallStatus.OK))
    assert vitrine.adapters.current_journal() is None

"""HTTP subjects against a real loopback server: answers are measured, transient failures are
retried and counted, permanent ones leave the trial not measured, and no header secret reaches
the run store."""

from __future__ import annotations

from pathlib import Path

import pytest

import vitrine
from vitrine import Arm, BenchmarkDefinition, Case, ChanceFloor, Observation, admit, check
from vitrine._redact import sanitize_text
from vitrine.subjects import (
    EndpointTimeoutError,
    HttpJsonSubject,
    OpenAIChatSubject,
    PermanentEndpointError,
    TransientEndpointError,
)
from vitrine.testing import FakeOpenAIServer, FakeReply

pytest.importorskip("httpx")

FLOOR = ChanceFloor.not_derivable("a deterministic predicate")
SECRET = "Zq7-sekret-Hv93kLmN0pQrStUv"


@check("says-hello")
def says_hello(case, response):
    if response.answer is None:
        return Observation.not_applicable("no answer object")
    ok = "hello" in response.answer.lower()
    return Observation.measured(ok, ok)


def definition(cases: int = 2) -> BenchmarkDefinition:
    return BenchmarkDefinition(
        "http-subjects",
        "1.0.0",
        [Case(f"case-{i}", f"Greet visitor {i}") for i in range(cases)],
        [admit(says_hello, FLOOR)],
    )


def rows_of(result: vitrine.EvalResult) -> list[vitrine.runs.ScenarioRow]:
    return [row for run in result.runs for row in run.rows]


def store_text(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())


async def test_a_chat_endpoint_answers_are_measured_with_usage_and_latency(tmp_path):
    with FakeOpenAIServer(FakeReply.text("Hello there", prompt_tokens=12)) as server:
        subject = OpenAIChatSubject(server.base_url, "tiny-model", system="Be brief.")
        result = await vitrine.evaluate_async(
            definition(), Arm("chat", subject), store=tmp_path, concurrency=1
        )

    assert [row.observation.passed for row in rows_of(result)] == [True, True]
    sent = server.requests[0].body
    assert sent["model"] == "tiny-model"
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Greet visitor 0"},
    ]
    response = result.runs[0].responses["case-0"]
    assert response["usage"]["input_tokens"] == 12 and response["usage"]["output_tokens"] == 5
    assert response["structured"]["latency_ms"] > 0
    assert response["provenance"] == "http-endpoint"


@pytest.mark.parametrize(
    "failure",
    [FakeReply.error(503, "overloaded"), FakeReply.error(429, "slow down"), FakeReply.dropped()],
    ids=["503", "429", "dropped"],
)
async def test_a_transient_failure_is_retried_and_counted(tmp_path, failure):
    with FakeOpenAIServer([failure, FakeReply.text("hello"), FakeReply.text("hello")]) as server:
        result = await vitrine.evaluate_async(
            definition(),
            Arm("chat", OpenAIChatSubject(server.base_url, "m")),
            store=tmp_path,
            concurrency=1,
            retries=2,
            retry_backoff_s=0.0,
        )

    assert server.request_count == 3
    assert [row.observation.passed for row in rows_of(result)] == [True, True]
    assert result.retried_trials == 1
    (failed,) = result.runs[0].retries["case-0"]
    assert failed.category == "TransientEndpointError"
    assert vitrine.store.load_run(result.run_dirs[0]).retries == result.runs[0].retries


async def test_a_slow_endpoint_times_out_as_a_retryable_timeout():
    with FakeOpenAIServer(FakeReply.text("hello", delay_s=2.0)) as server:
        subject = OpenAIChatSubject(server.base_url, "m", timeout_s=0.2)
        with pytest.raises(EndpointTimeoutError, match=r"within 0\.2 s") as caught:
            await subject(Case("c", "hi"))
    assert isinstance(caught.value, TimeoutError) and caught.value.transient


async def test_a_4xx_is_not_measured_with_its_sentence_and_not_retried(tmp_path):
    with FakeOpenAIServer(FakeReply.error(400, "model does not exist")) as server:
        result = await vitrine.evaluate_async(
            definition(1),
            Arm("chat", OpenAIChatSubject(server.base_url, "m")),
            store=tmp_path,
            retries=3,
            retry_backoff_s=0.0,
        )

    assert server.request_count == 1
    (row,) = rows_of(result)
    assert row.observation.state.value == "not_measured"
    assert "HTTP 400" in row.observation.reason and "model does not exist" in row.observation.reason
    # An arm that answered none of its trials was not reached: an outage, not a measurement.
    assert result.exit_code == vitrine.ExitCode.INFRASTRUCTURE
    assert "answered none of its 1 trials" in result.decision().reason


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (FakeReply.raw(200, "<html>gateway</html>"), "not JSON"),
        (FakeReply.raw(200, {"id": "x"}), r"no choices\[0\]\.message"),
    ],
)
async def test_a_reply_of_the_wrong_shape_is_a_permanent_failure(reply, why):
    with (
        FakeOpenAIServer(reply) as server,
        pytest.raises(PermanentEndpointError, match=why) as caught,
    ):
        await OpenAIChatSubject(server.base_url, "m")(Case("c", "hi"))
    assert not caught.value.transient and not isinstance(caught.value, ConnectionError)


async def test_header_secrets_reach_the_endpoint_but_never_the_store(tmp_path):
    echo = FakeReply.error(401, f"invalid api key Bearer {SECRET} for this project")
    with FakeOpenAIServer([echo, FakeReply.text("hello")]) as server:
        subject = OpenAIChatSubject(
            server.base_url, "m", api_key=SECRET, headers={"X-Team-Token": "team-" + SECRET}
        )
        result = await vitrine.evaluate_async(
            definition(), Arm("chat", subject), store=tmp_path, concurrency=1
        )
        port = str(server.port)

    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert server.requests[0].headers["x-team-token"] == "team-" + SECRET
    first = rows_of(result)[0].observation
    assert first.state.value == "not_measured" and "HTTP 401" in first.reason
    written = store_text(tmp_path)
    assert "HTTP 401" in written
    assert SECRET not in written and port not in written
    assert SECRET not in repr(subject)


async def test_a_json_endpoint_fills_its_body_template_and_reads_the_answer_pointer(tmp_path):
    reply = FakeReply.raw(200, {"data": {"choices": [{"text": "hello from json"}]}})
    with FakeOpenAIServer(reply) as server:
        subject = HttpJsonSubject(
            server.base_url + "/chat/completions",
            body={"query": "{input}", "meta": {"id": "{case_id}", "raw": "{input}"}},
            answer="/data/choices/0/text",
        )
        result = await vitrine.evaluate_async(definition(1), Arm("json", subject), store=tmp_path)

    assert server.requests[0].body == {
        "query": "Greet visitor 0",
        "meta": {"id": "case-0", "raw": "Greet visitor 0"},
    }
    (row,) = rows_of(result)
    assert row.observation.passed is True
    assert result.runs[0].responses["case-0"]["structured"]["http_status"] == 200


async def test_a_json_answer_pointer_that_matches_nothing_is_not_measured(tmp_path):
    with FakeOpenAIServer(FakeReply.raw(200, {"data": {}})) as server:
        subject = HttpJsonSubject(server.base_url + "/chat/completions", answer="/data/text")
        result = await vitrine.evaluate_async(definition(1), Arm("json", subject), store=tmp_path)

    (row,) = rows_of(result)
    assert row.observation.state.value == "not_measured"
    assert "no value at '/data/text'" in row.observation.reason


async def test_a_json_endpoint_with_body_and_answer_functions():
    reply = FakeReply.raw(200, {"parts": ["hel", "lo"]})
    with FakeOpenAIServer(reply) as server:
        subject = HttpJsonSubject(
            server.base_url + "/chat/completions",
            body=lambda case: {"q": case.input.upper()},
            answer=lambda data: "".join(data["parts"]),
        )
        response = await subject(Case("c", "hi"))

    assert server.requests[0].body == {"q": "HI"}
    assert response.answer == "hello"


async def test_a_case_input_the_chat_subject_cannot_send_is_refused_by_name():
    subject = OpenAIChatSubject("http://127.0.0.1:9/v1", "m")
    with pytest.raises(ValueError, match="neither text nor a list"):
        subject.conversation(Case("c", {"question": "hi"}))
    turns = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert subject.conversation(Case("c", turns)) == turns


async def test_an_unreachable_endpoint_is_transient():
    subject = HttpJsonSubject("http://127.0.0.1:9/nothing", timeout_s=2.0)
    with pytest.raises(TransientEndpointError, match="could not be reached"):
        await subject(Case("c", "hi"))


def test_a_subject_repr_hides_its_url_and_a_non_http_url_is_refused():
    subject = OpenAIChatSubject("http://10.1.2.3:8080/v1", "m", headers={"X-Key": SECRET})
    assert "10.1.2.3" not in repr(subject) and SECRET not in repr(subject)
    with pytest.raises(ValueError, match="http:// or https://"):
        HttpJsonSubject("ftp://example.invalid/x")


def test_only_authorising_header_values_become_secrets():
    HttpJsonSubject(
        "http://127.0.0.1:9/x", headers={"Accept": "application/json", "X-Key": "k-" + SECRET}
    )
    scrubbed = sanitize_text(f"sent application/json with k-{SECRET}")
    assert "application/json" in scrubbed and SECRET not in scrubbed


async def test_usage_of_an_unexpected_shape_is_left_unreported():
    reply = FakeReply.raw(
        200,
        {
            "choices": [{"message": {"content": "hello"}}],
            "usage": {"prompt_tokens": "many", "completion_tokens": 3},
        },
    )
    with FakeOpenAIServer(reply) as server:
        response = await OpenAIChatSubject(server.base_url, "m")(Case("c", "hi"))
    assert response.answer == "hello" and response.usage is None

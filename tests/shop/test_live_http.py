"""The live plans against a real HTTP server on 127.0.0.1, with faults injected on the wire."""

import asyncio
import json
import socket
import threading

import pytest
from live_fakes import (
    CANARY_ERROR,
    CANARY_KEY,
    CANARY_PATH,
    assert_no_canary,
    is_judge,
    is_stage,
    live_env,
    receipt,
    scripted_reply,
)

from vitrine import ExitCode, PlanRequest
from vitrine.testing._openai_server import FakeOpenAIServer, FakeReply, FakeToolCall
from vitrine_shop.evals.live.plans import EVAL01, EVAL02, EVAL03, EVAL04
from vitrine_shop.evals.live.session import LiveOptions, run_live_plan

pytest.importorskip("openai")

NADIA, LUCA = "nadia-cross-category", "luca-safe-abstention"
ALL = (NADIA, "sofia-capability-gap", "marco-gift-trap", LUCA)


def first_then_scripted(*faults):
    """Answer the first requests with ``faults`` in order, then as the scripted backend."""
    queue = list(faults)
    lock = threading.Lock()

    def respond(request):
        with lock:
            fault = queue.pop(0) if queue else None
        return fault if fault is not None else scripted_reply(request)

    return respond


async def run(tmp_path, server, spec, scenarios, repetitions=1, **env):
    request = PlanRequest(
        plan=spec.name,
        scenarios=tuple(scenarios),
        repetitions=repetitions,
        confirm_paid=True,
        provider="openai",
        output=tmp_path,
    )
    # These tests aim faults at the subject's requests; admission (its own test below) would
    # take the first ones.
    env.setdefault("VITRINE_JUDGE_ADMISSION", "skip")
    options = LiveOptions(environ=live_env(server, **env))
    return await run_live_plan(spec, request, options)


def leaks(tmp_path):
    assert_no_canary(tmp_path, CANARY_KEY, CANARY_PATH, CANARY_ERROR)


async def test_a_full_eval03_over_http_reaches_a_comparison_and_leaks_nothing(tmp_path):
    with FakeOpenAIServer(scripted_reply) as server:
        outcome = await run(tmp_path, server, EVAL03, ALL)
        judge_calls = sum(is_judge(r) for r in server.requests)
    assert outcome.exit_code is ExitCode.PASS, outcome.summary
    doc = receipt(tmp_path)
    assert judge_calls == 8 == doc["usage"]["judge_calls"]
    assert doc["usage"]["subject"]["input_tokens"] > 0  # the server reports usage
    assert {c["check"] for c in doc["comparisons"]} >= {"quality", "screened-deliverable"}
    assert doc["provider"]["provider"] == "openai"
    leaks(tmp_path)


async def test_a_429_then_success_is_recovered_and_measured(tmp_path):
    throttle = FakeReply.error(429, f"slow down {CANARY_ERROR}", headers={"retry-after": "0"})
    with FakeOpenAIServer(first_then_scripted(throttle)) as server:
        outcome = await run(tmp_path, server, EVAL01, (LUCA,))
        count = server.request_count
    assert outcome.exit_code is ExitCode.PASS, outcome.summary
    assert count == 3  # throttled, retried, then one judge call
    assert receipt(tmp_path)["trials"][0]["checks"]["quality"]["state"] == "measured"
    leaks(tmp_path)


async def test_repeated_500s_leave_the_trial_not_measured_and_exit_3(tmp_path):
    error = FakeReply.error(500, f"internal {CANARY_ERROR} at {CANARY_PATH}")
    with FakeOpenAIServer(error) as server:
        outcome = await run(tmp_path, server, EVAL01, (LUCA,))
        judge_calls = sum(is_judge(r) for r in server.requests)
    assert outcome.exit_code is ExitCode.NOT_MEASURED
    assert judge_calls == 0
    trial = receipt(tmp_path)["trials"][0]
    assert {c["state"] for c in trial["checks"].values()} == {"not_measured"}
    assert "server_error" in trial["subject_error"]
    leaks(tmp_path)


async def test_a_provider_timeout_leaves_the_trial_not_measured(tmp_path):
    slow = FakeReply.text("late", delay_s=4.0)
    with FakeOpenAIServer(slow) as server:
        outcome = await run(tmp_path, server, EVAL01, (LUCA,), VITRINE_PROVIDER_TIMEOUT_S="0.5")
    assert outcome.exit_code is ExitCode.NOT_MEASURED
    assert "timeout" in receipt(tmp_path)["trials"][0]["subject_error"]
    leaks(tmp_path)


async def test_malformed_tool_call_json_is_journalled_as_an_error_and_the_agent_goes_on(tmp_path):
    bad = FakeReply.tools(FakeToolCall("get_user_profile", "{not json"))
    with FakeOpenAIServer(first_then_scripted(bad)) as server:
        outcome = await run(tmp_path, server, EVAL01, (NADIA,))
    trial = receipt(tmp_path)["trials"][0]
    assert trial["tools"]["sequence"][0] == "get_user_profile"
    assert trial["tools"]["statuses"].get("error", 0) >= 1
    assert trial["checks"]["agent-tool-reconciliation"]["state"] == "measured"
    assert outcome.exit_code in (ExitCode.PASS, ExitCode.MEASURED_FAILURE)
    leaks(tmp_path)


async def test_two_unusable_stage_outputs_end_in_fallback_and_quality_not_measured(tmp_path):
    given = {"n": 0}
    lock = threading.Lock()

    def respond(request):
        with lock:
            unusable = is_stage(request) and given["n"] < 2
            given["n"] += unusable
        return FakeReply.text("this is not JSON") if unusable else scripted_reply(request)

    with FakeOpenAIServer(respond) as server:
        outcome = await run(tmp_path, server, EVAL02, (NADIA,))
        judge_calls = sum(is_judge(r) for r in server.requests)
    assert outcome.exit_code is ExitCode.NOT_MEASURED
    assert judge_calls == 0
    trial = receipt(tmp_path)["trials"][0]
    mapper = next(s for s in trial["attempt_census"] if s["stage"] == "InterestMapper")
    assert (mapper["status"], mapper["unusable"], mapper["attempts"]) == ("final_fallback", 2, 2)
    assert trial["checks"]["quality"]["state"] == "not_measured"
    assert trial["checks"]["screened-deliverable"]["state"] == "measured"
    leaks(tmp_path)


async def test_cancelling_a_session_mid_call_persists_an_infrastructure_receipt(tmp_path):
    with FakeOpenAIServer(FakeReply.text("never", delay_s=20.0)) as server:
        task = asyncio.create_task(run(tmp_path, server, EVAL01, (LUCA,)))
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    doc = receipt(tmp_path)
    assert doc["exit_code"] == 4 and "cancelled" in doc["exit_reason"]
    leaks(tmp_path)


async def test_eval04_with_four_repetitions_over_http_applies_the_wilson_rule(tmp_path):
    with FakeOpenAIServer(scripted_reply) as server:
        outcome = await run(tmp_path, server, EVAL04, (LUCA,), repetitions=4)
    assert outcome.exit_code is ExitCode.PASS
    (row,) = receipt(tmp_path)["whole_trial"]
    assert (row["successes"], row["measured"]) == (4, 4)
    assert row["wilson_95"]["lower"] == pytest.approx(0.5101, abs=1e-4)
    assert len(receipt(tmp_path)["runs"]) == 4


def test_the_cli_without_configuration_calls_nothing_and_exits_4(tmp_path, monkeypatch, capsys):
    import os

    from vitrine._cli import main

    for name in list(os.environ):
        if name.startswith(("OPENAI_", "AZURE_", "VITRINE_")):
            monkeypatch.delenv(name)

    def no_network(*args, **kwargs):
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    code = main(["--eval-plan", "eval01-agent", "--confirm-paid", "--output", str(tmp_path)])
    assert code == 4
    doc = receipt(tmp_path)
    assert doc["exit_code"] == 4 and doc["readiness"]["ready"] is False
    assert "OPENAI_API_KEY" in doc["readiness"]["reason"]
    assert "trials" not in doc
    assert not (tmp_path / "live" / "runs").exists()
    out = capsys.readouterr().out
    assert "planned workload" in out and "4 subject trial(s)" in out
    index = json.loads((tmp_path / "live" / "live-sessions" / "index.json").read_text())
    assert index["sessions"][0]["exit_code"] == 4


async def test_the_judge_is_admitted_over_http_before_any_subject_call(tmp_path):
    with FakeOpenAIServer(scripted_reply) as server:
        outcome = await run(tmp_path, server, EVAL01, (LUCA,), VITRINE_JUDGE_ADMISSION="on")
        # Luca's calibration set: the reference pair, four hard negatives, one hard positive.
        first_seven = [is_judge(r) for r in server.requests[:7]]
        judge_calls = sum(is_judge(r) for r in server.requests)
    assert outcome.exit_code is ExitCode.PASS, outcome.summary
    assert first_seven == [True] * 7  # the calibration set comes first
    assert judge_calls == 8
    admission = receipt(tmp_path)["judge_admission"]
    assert (admission["admitted"], admission["agreed"], admission["labels"]) == (True, 28, 28)
    leaks(tmp_path)


def like_llama_cpp_server(request):
    """Refuse json_schema with HTTP 500 as llama.cpp's server does; answer the rest."""
    fmt = (request.body or {}).get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return FakeReply.error(500, "Input should be 'text' or 'json_object'")
    if "ok" in ((fmt.get("schema") or {}).get("properties") or {}):
        return FakeReply.structured({"ok": True})
    return scripted_reply(request)


async def test_a_free_server_is_probed_once_and_never_retried_into_an_unsupported_shape(tmp_path):
    with FakeOpenAIServer(like_llama_cpp_server) as server:
        outcome = await run(
            tmp_path,
            server,
            EVAL01,
            (LUCA,),
            VITRINE_PROVIDER_COST="free",
            VITRINE_PROVIDER_MAX_RETRIES="3",
            VITRINE_JUDGE_ADMISSION="on",
        )
        shapes = [
            ((r.body or {}).get("response_format") or {}).get("type") for r in server.requests
        ]
        streamed = {
            ("tools" in (r.body or {}), (r.body or {}).get("stream")) for r in server.requests
        }
    assert outcome.exit_code is ExitCode.PASS, outcome.summary
    assert shapes.count("json_schema") == 1  # the probe's first rung, and never again
    assert shapes[:2] == ["json_schema", "json_object"]
    # Streamed, so an abandoned request stops the server; tool turns are not (llama.cpp's
    # server cannot choose a tool on a stream).
    assert streamed == {(False, True), (True, None)}
    doc = receipt(tmp_path)
    assert doc["structured_output"] == {
        "mode": "json_object",
        "source": "probe",
        "calls": 2,
        "refused": [{"mode": "json_schema", "failure": "server_error"}],
    }
    assert doc["workload"]["paid"] is False and doc["provider"]["paid"] is False
    assert doc["judge_admission"]["admitted"] is True
    leaks(tmp_path)


async def test_a_free_server_that_cannot_be_probed_ends_the_session_before_any_trial(tmp_path):
    with FakeOpenAIServer(FakeReply.error(401, "no")) as server:
        outcome = await run(tmp_path, server, EVAL01, (LUCA,), VITRINE_PROVIDER_COST="free")
        assert server.request_count == 1
    assert outcome.exit_code is ExitCode.INFRASTRUCTURE
    doc = receipt(tmp_path)
    assert (
        "structured-output probe could not reach the model (authentication)" in (doc["exit_reason"])
    )
    assert not doc.get("trials")  # no subject call was made

"""A judge on another provider and model than the subject, and free providers unconfirmed."""

from __future__ import annotations

import json

import pytest
from live_fakes import calibration_reply, live_env, receipt, scripted_reply, verdicts

from vitrine import ExitCode, PlanRequest
from vitrine._cli import main
from vitrine.testing import FakeOpenAIServer, FakeReply
from vitrine.testing._anthropic_server import FakeAnthropicServer
from vitrine_shop.evals.live.plans import EVAL01
from vitrine_shop.evals.live.session import LiveOptions, run_live_plan

pytest.importorskip("openai")
pytest.importorskip("anthropic")

LUCA = "luca-safe-abstention"


def claude_judge(request):
    """Answer as a judge over the Messages API: labelled on calibration, all met otherwise."""
    body = request.body
    text = "".join(
        block.get("text", "")
        for block in body["messages"][-1]["content"]
        if isinstance(block, dict)
    )
    labelled = calibration_reply([{"content": text}])
    if labelled is not None:
        return FakeReply.structured(labelled)
    ids = json.loads(body["system"].split("schema:\n", 1)[1])["required"]
    return FakeReply.structured(verdicts(ids))


async def test_a_free_local_subject_is_judged_by_claude_and_the_receipt_says_both(tmp_path):
    with FakeOpenAIServer(scripted_reply) as subject, FakeAnthropicServer(claude_judge) as judge:
        env = live_env(
            subject,
            VITRINE_PROVIDER_COST="free",
            VITRINE_STRUCTURED_OUTPUT="json_schema",
            ANTHROPIC_API_KEY="sk-ant-test-0000",
            ANTHROPIC_BASE_URL=judge.endpoint,
        )
        request = PlanRequest(
            plan="eval01-agent",
            scenarios=(LUCA,),
            provider="openai",
            judge_provider="anthropic",
            judge_model="claude-judge",
            confirm_paid=True,  # the judge bills
            output=tmp_path,
        )
        outcome = await run_live_plan(EVAL01, request, LiveOptions(environ=env))
        judge_models = {r.body["model"] for r in judge.requests}
        subject_judged = [r for r in subject.requests if "response_format" in (r.body or {})]
    assert outcome.exit_code is ExitCode.PASS, outcome.summary
    assert judge_models == {"claude-judge"}
    assert subject_judged == []  # the subject's server never judged
    doc = receipt(tmp_path)
    assert doc["provider"]["judge_provider"] == "anthropic"
    assert doc["provider"]["judge_model"] == "claude-judge"
    assert doc["provider"]["judge_shares_subject"] is False
    # The subject is free, the judge bills: each is said, and the workload is paid.
    assert doc["provider"]["paid"] is False and doc["provider"]["judge_paid"] is True
    assert doc["workload"]["paid"] is True
    assert doc["judge_admission"]["admitted"] is True


async def test_a_paid_judge_needs_confirmation_even_when_the_subject_is_free(tmp_path):
    from vitrine import UsageError

    with FakeOpenAIServer(scripted_reply) as subject:
        env = live_env(subject, VITRINE_PROVIDER_COST="free", ANTHROPIC_API_KEY="k")
        request = PlanRequest(
            plan="eval01-agent",
            scenarios=(LUCA,),
            provider="openai",
            judge_provider="anthropic",
            output=tmp_path,
        )
        with pytest.raises(UsageError, match="paid"):
            await run_live_plan(EVAL01, request, LiveOptions(environ=env))
        assert subject.request_count == 0


def test_the_command_line_needs_no_confirmation_for_a_declared_free_endpoint(
    tmp_path, monkeypatch, capsys
):
    with FakeOpenAIServer(FakeReply.error(500, "down")) as server:
        for name, value in live_env(server, VITRINE_PROVIDER_COST="free").items():
            monkeypatch.setenv(name, value)
        argv = ["--eval-plan", "eval01-agent", "--scenario", LUCA, "--provider", "openai"]
        code = main([*argv, "--output", str(tmp_path)])
    captured = capsys.readouterr()
    assert "--confirm-paid" not in captured.err
    assert code == int(ExitCode.INFRASTRUCTURE)  # the server is down: a fact, not a refusal
    assert "no charge" in captured.out


def test_the_command_line_refuses_a_paid_judge_for_a_local_subject_without_confirmation(capsys):
    code = main(
        ["--eval-plan", "eval01-agent", "--provider", "local", "--judge-provider", "openai"]
    )
    assert code == int(ExitCode.INVALID_ARGUMENTS)
    assert "needs --confirm-paid" in capsys.readouterr().err

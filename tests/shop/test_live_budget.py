"""The session spend ceiling over HTTP, against the loopback fake OpenAI server."""

import json

import pytest
from live_fakes import live_env, receipt, scripted_reply

from vitrine import ExitCode, PlanRequest, UsageError
from vitrine._budget import Price, SpendCeiling
from vitrine.testing import FakeOpenAIServer
from vitrine_shop.evals.live.plans import EVAL01, EVAL03
from vitrine_shop.evals.live.session import LiveOptions, run_live_plan

pytest.importorskip("openai")

ALL = ("nadia-cross-category", "sofia-capability-gap", "marco-gift-trap", "luca-safe-abstention")
# What the fake server reports for every reply: 10 prompt and 5 completion tokens.
PER_REQUEST = 15


async def run(tmp_path, server, spec, ceiling, prices=None):
    request = PlanRequest(
        plan=spec.name,
        scenarios=ALL,
        confirm_paid=True,
        provider="openai",
        output=tmp_path,
        spend=ceiling,
        prices=prices,
    )
    options = LiveOptions(environ=live_env(server, VITRINE_JUDGE_ADMISSION="skip"))
    return await run_live_plan(spec, request, options)


@pytest.mark.parametrize("max_tokens", [60, 150, 400])
async def test_a_token_ceiling_stops_new_calls_within_the_stated_bound(tmp_path, max_tokens):
    with FakeOpenAIServer(scripted_reply) as server:
        outcome = await run(tmp_path, server, EVAL03, SpendCeiling(max_tokens=max_tokens))
        sent = server.request_count
    doc = receipt(tmp_path)
    spend = doc["spend"]
    assert spend["reached"] is not None and "--max-tokens" in spend["reached"]
    # Refused requests are never sent; what was sent is what the meter counted.
    assert spend["spent"]["calls"] == sent and spend["spent"]["tokens"] == sent * PER_REQUEST
    over = spend["spent"]["tokens"] - max_tokens
    assert 0 <= over <= (1 + spend["open_requests_at_reach"]) * PER_REQUEST
    assert spend["ceiling"]["max_tokens"] == max_tokens
    stopped = [t for t in doc["trials"] if "budget" in (t.get("subject_error") or "")]
    assert stopped, "no trial was stopped by the budget"
    for trial in stopped:
        assert {c["state"] for c in trial["checks"].values()} <= {
            "not_measured",
            "not_applicable",
        }
    # The existing rules: some trials measured and some not is an incomplete session (4);
    # none measured is not measured (3).
    measured = [t for t in doc["trials"] if t["trial"]["measured"]]
    expected = ExitCode.INFRASTRUCTURE if measured else ExitCode.NOT_MEASURED
    assert outcome.exit_code is expected and doc["exit_code"] == int(expected)
    assert "spend ceiling reached" in doc["exit_reason"]


async def test_a_call_ceiling_is_never_exceeded(tmp_path):
    with FakeOpenAIServer(scripted_reply) as server:
        await run(tmp_path, server, EVAL03, SpendCeiling(max_calls=7))
        sent = server.request_count
    assert sent == 7 == receipt(tmp_path)["spend"]["spent"]["calls"]


async def test_a_ceiling_that_is_not_reached_changes_nothing(tmp_path):
    with FakeOpenAIServer(scripted_reply) as server:
        outcome = await run(tmp_path, server, EVAL01, SpendCeiling(max_tokens=10**6))
    assert outcome.exit_code is ExitCode.PASS
    spend = receipt(tmp_path)["spend"]
    assert spend["reached"] is None and spend["refused_requests"] == 0


async def test_a_cost_ceiling_needs_a_price_for_every_model_it_pays_for(tmp_path):
    with FakeOpenAIServer(scripted_reply) as server:
        with pytest.raises(UsageError, match="has no declared price"):
            await run(
                tmp_path, server, EVAL01, SpendCeiling(max_cost=1.0), {"other": Price(1.0, 1.0)}
            )
        assert server.request_count == 0
    assert not list((tmp_path / "live").glob("live-sessions/*/outcome.json"))


async def test_a_cost_ceiling_is_enforced_from_declared_prices(tmp_path):
    prices = {"fake-subject": Price(1000.0, 2000.0)}  # 0.02 USD per 15-token reply
    with FakeOpenAIServer(scripted_reply) as server:
        await run(tmp_path, server, EVAL03, SpendCeiling(max_cost=0.1), prices)
        sent = server.request_count
    spend = receipt(tmp_path)["spend"]
    assert spend["spent"]["cost_usd"] == pytest.approx(sent * 0.02)
    assert "--max-cost" in spend["reached"]
    assert spend["spent"]["cost_usd"] - 0.1 <= (1 + spend["open_requests_at_reach"]) * 0.02


def test_the_command_line_applies_max_tokens_and_exits_by_the_rules(tmp_path, monkeypatch, capsys):
    from vitrine._cli import main

    with FakeOpenAIServer(scripted_reply) as server:
        for name, value in live_env(server, VITRINE_JUDGE_ADMISSION="skip").items():
            monkeypatch.setenv(name, value)
        code = main(
            [
                "--eval-plan",
                "eval03-compare",
                "--confirm-paid",
                "--provider",
                "openai",
                "--max-tokens",
                "100",
                "--output",
                str(tmp_path),
            ]
        )
    out = capsys.readouterr().out
    assert "spend ceiling: 100 reported token(s) for the whole session" in out
    doc = receipt(tmp_path)
    assert code == doc["exit_code"] in (3, 4)
    assert (
        doc["spend"]["spent"]["tokens"] - 100
        <= (1 + doc["spend"]["open_requests_at_reach"]) * PER_REQUEST
    )
    json.dumps(doc["spend"])  # plain JSON in the receipt

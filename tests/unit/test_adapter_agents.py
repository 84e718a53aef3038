"""The OpenAI Agents SDK adapter: an agent evaluated as built, its calls from the SDK's trace."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("agents")
pytest.importorskip("openai")

from agents import Agent, OpenAIChatCompletionsModel, function_tool
from openai import AsyncOpenAI
from pydantic import BaseModel

import vitrine
from vitrine import Case, Observation, RetryPolicy
from vitrine.adapters import agents_subject, instrument_openai
from vitrine.testing import FakeOpenAIServer, FakeReply, FakeToolCall

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bank_agents"


@pytest.fixture(scope="module")
def bank():
    """The example's modules (the agent, its scripted model, its evaluation), imported."""
    sys.path.insert(0, str(EXAMPLE))
    try:
        yield {
            name: importlib.import_module(name) for name in ("bank", "scripted_model", "bank_evals")
        }
    finally:
        sys.path.remove(str(EXAMPLE))


def _rows(store: Path) -> list[dict]:
    rows = []
    for path in sorted(store.glob("runs/*/traces/trials.jsonl")):
        arm = json.loads((path.parents[1] / "manifest.json").read_text())["arm"]
        rows += [{**json.loads(line), "arm": arm} for line in path.read_text().splitlines()]
    return rows


def moves_the_amount_asked(case, response):
    """Every transfer carries the amount the customer asked for."""
    moves = [c for c in response.tool_calls or () if c.name == "transfer"]
    if not moves:
        return Observation.not_applicable("no transfer")
    asked = float(case.input.split()[1])
    return all(call.arguments.get("amount") == asked for call in moves)


def _evaluation(bank, client, **options) -> vitrine.Evaluation:
    evals = bank["bank_evals"]
    arms = {
        "careful": agents_subject(bank["bank"].bank_agent(bank["bank"].CAREFUL, client)),
        "hasty": agents_subject(bank["bank"].bank_agent(bank["bank"].HASTY, client)),
    }
    checks = [
        evals.checks_the_balance_first,
        evals.never_claims_a_refused_transfer,
        moves_the_amount_asked,
    ]
    return vitrine.Evaluation("bank", evals.CASES, checks, arms, reference="careful", **options)


def test_the_example_is_short_and_uses_public_names_only():
    source = (EXAMPLE / "bank_evals.py").read_text(encoding="utf-8")
    code = [
        line for line in source.splitlines() if line.strip() and not line.strip().startswith("#")
    ]
    assert len(code) <= 40, len(code)
    assert "vitrine._" not in source and "from vitrine._" not in source


def test_the_example_compares_the_prompts_with_the_calls_the_adapter_recorded(bank, tmp_path):
    assert bank["bank_evals"].main(tmp_path) == 0
    report = json.loads((tmp_path / "reports" / "report.json").read_text())
    text = json.dumps(report)
    assert "checks-the-balance-first" in text and "hasty" in text
    result_rows = _rows(tmp_path / "store")
    assert len(result_rows) == 32 and all(row["error"] is None for row in result_rows)
    for row in result_rows:
        response = row["response"]
        assert response["tool_calls"], row["case_id"]
        assert response["model_calls"] and all(
            c["model"] == "bank-model" for c in response["model_calls"]
        )
    hasty_transfer = next(
        r for r in result_rows if r["arm"] == "hasty" and r["case_id"] == "ACC-1-3"
    )["response"]
    assert [c["name"] for c in hasty_transfer["tool_calls"]] == ["transfer"]
    assert hasty_transfer["tool_calls"][0]["status"] == "refused"
    assert hasty_transfer["tool_calls"][0]["arguments"] == {
        "source": "ACC-1",
        "target": "ACC-9",
        "amount": 2500.0,
    }


def test_the_paired_comparison_sees_the_worse_prompt(bank):
    model = bank["scripted_model"].BankModel(fault_rate=0.0)
    with FakeOpenAIServer(model) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="offline")
        result = _evaluation(bank, client).run()
    by_check = {c.check_key: c for c in result.runs.comparisons}
    first = by_check["checks-the-balance-first"]
    assert (first.wins, first.losses, first.ties) == (0, 8, 0) and first.p_value < 0.01
    honest = by_check["never-claims-a-refused-transfer"]
    assert (honest.wins, honest.losses) == (0, 4)
    assert by_check["moves-the-amount-asked"].losses == 0
    assert result.exit_code == 0


def test_faults_retried_inside_the_client_are_counted_and_leave_nothing_unmeasured(bank):
    model = bank["scripted_model"].BankModel(fault_rate=0.015, seed=5)
    with FakeOpenAIServer(model) as server:
        client = instrument_openai(AsyncOpenAI(base_url=server.base_url, api_key="offline"))
        result = _evaluation(bank, client, repetitions=2).run()
    assert model.faults >= 2
    responses = [r for run in result.runs.runs for r in run.responses.values()]
    assert len(responses) == 64
    assert all(run.unmeasured_trials == 0 and run.retried_trials == 0 for run in result.runs.runs)
    retries = sum(c["sdk_retries"] for r in responses for c in r["model_calls"])
    assert retries == model.faults
    assert result.exit_code == 0


def test_faults_the_client_does_not_retry_are_retried_as_trials(bank):
    model = bank["scripted_model"].BankModel(fault_rate=0.015, seed=5)
    with FakeOpenAIServer(model) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="offline", max_retries=0)
        retry = RetryPolicy(retries=3, backoff_s=0.0, max_backoff_s=0.0)
        result = _evaluation(bank, client, repetitions=2, retry=retry).run()
    assert model.faults >= 2
    assert all(run.unmeasured_trials == 0 for run in result.runs.runs)
    failed = [a for run in result.runs.runs for tries in run.retries.values() for a in tries]
    assert len(failed) == model.faults
    assert {a.category for a in failed} == {"InternalServerError"}


def test_concurrent_trials_keep_their_own_calls(bank):
    model = bank["scripted_model"].BankModel(fault_rate=0.0)
    with FakeOpenAIServer(model) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="offline")
        subject = agents_subject(bank["bank"].bank_agent(bank["bank"].CAREFUL, client))
        cases = bank["bank_evals"].CASES

        async def all_at_once():
            return await asyncio.gather(*(subject(case) for case in cases))

        responses = asyncio.run(all_at_once())
    for case, response in zip(cases, responses, strict=True):
        account = case.id[:5]  # the case's own account, ACC-n
        assert response.tool_calls, case.id
        for call in response.tool_calls:
            assert account in json.dumps(dict(call.arguments)), (case.id, call)


@function_tool
def explode(x: int) -> str:
    """Always raises."""
    raise RuntimeError("kaput")


@function_tool(needs_approval=True)
def close_account(account: str) -> str:
    """Closes an account; a person must approve it."""
    return f"closed {account}"


def _agent(client: AsyncOpenAI, **options) -> Agent:
    return Agent(
        name="ops",
        tools=[explode, close_account],
        model=OpenAIChatCompletionsModel(model="ops-model", openai_client=client),
        **options,
    )


def test_a_tool_that_raised_is_an_error_and_a_declined_approval_is_refused():
    script = [
        FakeReply.tools(FakeToolCall("explode", {"x": 1})),
        FakeReply.tools(FakeToolCall("close_account", {"account": "A1"})),
        FakeReply.tools(FakeToolCall("close_account", {"account": "A2"})),
        FakeReply.text("all done"),
    ]
    with FakeOpenAIServer(script) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="offline")
        subject = agents_subject(_agent(client), approve=lambda name, args: args["account"] == "A2")
        response = asyncio.run(subject(Case("ops", "tidy up")))
    assert [(c.name, c.status.value) for c in response.tool_calls] == [
        ("explode", "error"),
        ("close_account", "refused"),
        ("close_account", "ok"),
    ]
    assert dict(response.tool_calls[1].arguments) == {"account": "A1"}
    assert response.tool_calls[2].result_summary == "closed A2"
    assert response.answer == "all done"
    assert [c.finish_reason for c in response.model_calls] == ["tool_calls"] * 3 + ["stop"]


def test_an_approval_without_a_policy_leaves_the_trial_not_measured():
    with FakeOpenAIServer(
        [FakeReply.tools(FakeToolCall("close_account", {"account": "A1"}))]
    ) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="offline")
        evaluation = vitrine.Evaluation(
            "ops",
            [Case("c", "close A1")],
            [moves_the_amount_asked],
            {"ops": agents_subject(_agent(client))},
        )
        result = evaluation.run()
    run = result.runs.runs[0]
    assert run.unmeasured_trials == 1
    assert "approve=" in run.subject_errors["c"]
    assert result.exit_code != 0


def test_max_turns_exceeded_fails_the_try_and_is_not_retried():
    with FakeOpenAIServer(FakeReply.tools(FakeToolCall("explode", {"x": 1}))) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="offline")
        evaluation = vitrine.Evaluation(
            "ops",
            [Case("c", "loop")],
            [moves_the_amount_asked],
            {"ops": agents_subject(_agent(client), max_turns=2)},
            retry=RetryPolicy(retries=2, backoff_s=0.0, max_backoff_s=0.0),
        )
        result = evaluation.run()
        requests = server.request_count
    run = result.runs.runs[0]
    assert "MaxTurnsExceeded" in run.subject_errors["c"] and run.retried_trials == 0
    assert requests == 2  # one try of two turns: a max-turns failure is not transient


class Verdict(BaseModel):
    approved: bool
    reason: str


def test_a_structured_output_is_the_answer_s_json_and_its_fields():
    reply = FakeReply.structured({"approved": False, "reason": "over the limit"})
    with FakeOpenAIServer(reply) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="offline")
        agent = Agent(
            name="judge",
            output_type=Verdict,
            model=OpenAIChatCompletionsModel(model="judge-model", openai_client=client),
        )
        response = asyncio.run(agents_subject(agent)(Case("c", "approve 5000?")))
    assert dict(response.structured) == {"approved": False, "reason": "over the limit"}
    assert json.loads(response.answer) == {"approved": False, "reason": "over the limit"}
    assert response.tool_calls == ()  # the trace was seen: it called nothing, it did not hide


def test_nothing_is_uploaded_to_openai_during_an_evaluation(monkeypatch, bank):
    from agents.tracing import default_exporter, flush_traces

    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key")
    sent = []
    monkeypatch.setattr(default_exporter(), "export", sent.append)
    with FakeOpenAIServer(bank["scripted_model"].BankModel(fault_rate=0.0)) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="offline")
        subject = agents_subject(bank["bank"].bank_agent(bank["bank"].CAREFUL, client))
        asyncio.run(subject(Case("c", "What is the balance of ACC-1?")))
    flush_traces()
    assert sent == []


def test_the_run_is_traced_as_invoke_agent_chat_and_execute_tool(bank):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from vitrine import tracing

    exporter = InMemorySpanExporter()
    assert tracing.setup(tracing.TraceSettings("http://127.0.0.1:9/v1/traces"), exporter=exporter)
    try:
        with FakeOpenAIServer(bank["scripted_model"].BankModel(fault_rate=0.0)) as server:
            client = AsyncOpenAI(base_url=server.base_url, api_key="offline")
            subject = agents_subject(bank["bank"].bank_agent(bank["bank"].CAREFUL, client))
            asyncio.run(subject(Case("c", "What is the balance of ACC-1?")))
    finally:
        tracing.shutdown()
    spans = {span.name: span for span in exporter.get_finished_spans()}
    agent, chat, tool = (
        spans["invoke_agent bank"],
        spans["chat bank-model"],
        spans["execute_tool get_balance"],
    )
    assert chat.parent.span_id == agent.context.span_id
    assert tool.parent.span_id == agent.context.span_id
    assert tool.attributes["vitrine.tool.status"] == "ok"


def test_a_planted_adapter_bug_that_drops_arguments_turns_the_check_red(bank, monkeypatch):
    from vitrine.adapters import _agents

    monkeypatch.setattr(_agents, "tool_arguments", lambda text: {})
    model = bank["scripted_model"].BankModel(fault_rate=0.0)
    with FakeOpenAIServer(model) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="offline")
        result = _evaluation(bank, client).run()
    assert result.exit_code != 0
    assert result.runs.check_score("careful", "moves-the-amount-asked").successes == 0


def test_a_non_agent_is_refused_with_a_sentence():
    with pytest.raises(vitrine.errors.WrongTypeError, match=r"agents\.Agent"):
        agents_subject(lambda case: None)  # type: ignore[arg-type]

"""The pydantic-ai adapter: an agent evaluated as built, its calls from the run's own messages."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import importlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("openai")

from openai import AsyncOpenAI
from pydantic import BaseModel
from pydantic_ai import Agent, DeferredToolRequests, ModelRetry
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

import vitrine
from vitrine import Case, Observation, SubjectResponse
from vitrine.adapters import instrument_openai, pydantic_ai_subject
from vitrine.testing import FakeOpenAIServer, FakeReply, FakeToolCall

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bank_pydantic_ai"
# The example's module names are the Agents SDK example's too: each keeps its own while loaded.
_NAMES = ("bank", "bank_evals")


@pytest.fixture(scope="module")
def bank() -> Iterator[dict[str, ModuleType]]:
    """The example's modules (the agent, its evaluation, the scripted model it borrows)."""
    others = {name: sys.modules.pop(name) for name in _NAMES if name in sys.modules}
    sys.path.insert(0, str(EXAMPLE))
    try:
        modules = {name: importlib.import_module(name) for name in _NAMES}
        modules["scripted_model"] = importlib.import_module("bank_agents.scripted_model")
        yield modules
    finally:
        sys.path.remove(str(EXAMPLE))
        for name in _NAMES:
            sys.modules.pop(name, None)
        sys.modules.update(others)


def _bank_model(bank: dict[str, ModuleType], fault_rate: float = 0.0) -> Any:
    return bank["scripted_model"].BankModel(fault_rate=fault_rate, seed=5)


def _client(server: FakeOpenAIServer, **options: Any) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=server.base_url, api_key="offline", **options)


def moves_what_was_asked(case: Case, response: SubjectResponse) -> Observation | bool:
    """Each transfer names the accounts and the amount the customer asked for."""
    moves = [dict(c.arguments) for c in response.tool_calls or () if c.name == "transfer"]
    if not moves:
        return Observation.not_applicable("nothing was transferred")
    amount, source, target = case.input.split()[1::2]  # Transfer AMOUNT from SOURCE to TARGET
    return all(m == {"source": source, "target": target, "amount": float(amount)} for m in moves)


def _evaluation(bank: dict[str, ModuleType], client: AsyncOpenAI, **changes: Any) -> Any:
    """The example's evaluation, with the argument check beside its own two."""
    evaluation = bank["bank_evals"].evaluation(client)
    checks = [*evaluation.checks, moves_what_was_asked]
    return dataclasses.replace(evaluation, checks=checks, **changes)


def _careful(bank: dict[str, ModuleType], client: AsyncOpenAI) -> Any:
    return pydantic_ai_subject(bank["bank"].bank_agent(bank["bank"].PROMPTS["careful"], client))


def test_the_example_is_short_and_uses_public_names_only() -> None:
    source = (EXAMPLE / "bank_evals.py").read_text(encoding="utf-8")
    assert len([line for line in source.splitlines() if line.strip()]) <= 40
    imported = [
        node.module or ""
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom)
    ]
    assert all("._" not in f".{module}" for module in imported if module.startswith("vitrine"))
    assert "vitrine._" not in source


def test_the_example_compares_the_prompts_on_the_calls_the_adapter_recorded(
    bank: dict[str, ModuleType], tmp_path: Path
) -> None:
    assert bank["bank_evals"].main(tmp_path) == 0
    assert "looks-before-it-moves" in (tmp_path / "reports" / "report.json").read_text()
    rows = {}
    for path in sorted((tmp_path / "store").glob("runs/*/traces/trials.jsonl")):
        arm = json.loads((path.parents[1] / "manifest.json").read_text())["arm"]
        rows |= {(arm, r["case_id"]): r for r in map(json.loads, path.read_text().splitlines())}
    assert len(rows) == 32 and all(row["error"] is None for row in rows.values())
    for key, row in rows.items():
        assert row["response"]["tool_calls"], key
        assert {c["model"] for c in row["response"]["model_calls"]} == {"bank-model"}, key
    refused = rows["hasty", "ACC-1-3"]["response"]
    assert [(c["name"], c["status"]) for c in refused["tool_calls"]] == [("transfer", "refused")]
    assert refused["tool_calls"][0]["arguments"] == {
        "source": "ACC-1",
        "target": "ACC-9",
        "amount": 2500.0,
    }
    assert refused["tool_calls"][0]["result_summary"].startswith("refused: 2500.00")


def test_the_paired_comparison_sees_the_subtly_worse_prompt(bank: dict[str, ModuleType]) -> None:
    with FakeOpenAIServer(_bank_model(bank)) as server:
        result = _evaluation(bank, _client(server)).run()
    hasty = {c.check_key: c for c in result.runs.comparisons}
    assert {key: (c.wins, c.losses, c.ties) for key, c in hasty.items()} == {
        "looks-before-it-moves": (0, 8, 0),  # the two transfers of each of the four accounts
        "admits-a-refusal": (0, 4, 0),  # the refused transfer of each account
        "moves-what-was-asked": (0, 0, 8),  # both prompts move what was asked
    }
    assert hasty["looks-before-it-moves"].p_value < 0.01
    assert result.exit_code == 0


def test_faults_retried_inside_the_client_are_counted_and_leave_nothing_unmeasured(
    bank: dict[str, ModuleType],
) -> None:
    model = _bank_model(bank, fault_rate=0.015)
    with FakeOpenAIServer(model) as server:
        client = instrument_openai(_client(server))
        result = _evaluation(bank, client, repetitions=2).run()
    assert model.faults >= 2
    responses = [r for run in result.runs.runs for r in run.responses.values()]
    assert len(responses) == 64
    assert all(run.unmeasured_trials == 0 and run.retried_trials == 0 for run in result.runs.runs)
    assert sum(c["sdk_retries"] for r in responses for c in r["model_calls"]) == model.faults
    assert result.exit_code == 0


def test_faults_the_client_does_not_retry_are_retried_as_trials_by_default(
    bank: dict[str, ModuleType],
) -> None:
    """pydantic-ai wraps the SDK's 500 in its own ModelServerError; vitrine must still see a
    transient fault, so its default two retries cure it."""
    model = _bank_model(bank, fault_rate=0.015)
    with FakeOpenAIServer(model) as server:
        result = _evaluation(bank, _client(server, max_retries=0)).run()
    assert model.faults >= 1
    assert all(run.unmeasured_trials == 0 for run in result.runs.runs)
    failed = [a for run in result.runs.runs for tries in run.retries.values() for a in tries]
    assert len(failed) == model.faults
    assert {a.category for a in failed} == {"InternalServerError"}
    assert result.exit_code == 0


@pytest.mark.parametrize(
    ("reply", "raised"),
    [
        (FakeReply.dropped(), "openai.APIConnectionError"),
        (FakeReply.error(429, "slow down"), "openai.RateLimitError"),
        (FakeReply.error(400, "bad request"), "pydantic_ai.exceptions.ModelRequestRejectedError"),
    ],
)
def test_a_transient_fault_surfaces_as_the_sdk_s_error_and_any_other_as_pydantic_ai_s(
    reply: FakeReply, raised: str
) -> None:
    with FakeOpenAIServer(reply) as server, pytest.raises(Exception) as caught:
        asyncio.run(pydantic_ai_subject(_ops(_client(server, max_retries=0)))(Case("c", "hi")))
    kind = type(caught.value)
    assert f"{kind.__module__.split('._')[0]}.{kind.__name__}" == raised


def test_concurrent_trials_keep_their_own_calls(bank: dict[str, ModuleType]) -> None:
    cases = bank["bank_evals"].CASES
    model = _bank_model(bank)
    slow = lambda request: dataclasses.replace(model(request), delay_s=0.02)  # noqa: E731
    with FakeOpenAIServer(slow) as server:
        subject = _careful(bank, _client(server))

        async def all_at_once() -> list[SubjectResponse]:
            return await asyncio.gather(*(subject(case) for case in cases))

        responses = asyncio.run(all_at_once())
        assert server.max_in_flight > 1  # they really overlapped
    for case, response in zip(cases, responses, strict=True):
        assert response.tool_calls, case.id
        for call in response.tool_calls:
            assert case.id[:5] in json.dumps(dict(call.arguments)), (case.id, call)


def explode(x: int) -> str:
    """Always raises."""
    raise RuntimeError("kaput")


def pick(number: int) -> str:
    """Asks the model to pick again below ten."""
    if number < 10:
        raise ModelRetry("pick a number of ten or more")
    return f"picked {number}"


def _ops(client: AsyncOpenAI, **options: Any) -> Agent[None, Any]:
    model = OpenAIChatModel("ops-model", provider=OpenAIProvider(openai_client=client))
    return Agent(model, name="ops", tools=[explode, pick], retries=3, **options)


def test_tool_calls_keep_name_arguments_and_status_and_model_calls_their_numbers() -> None:
    script = [
        FakeReply.tools(FakeToolCall("pick", {"number": 3}), prompt_tokens=7, completion_tokens=2),
        FakeReply.tools(FakeToolCall("pick", {"number": "many"}), delay_s=0.05),
        FakeReply.tools(FakeToolCall("pick", {"number": 12})),
        FakeReply.text("picked 12", prompt_tokens=30, completion_tokens=4),
    ]
    with FakeOpenAIServer(script) as server:
        response = asyncio.run(pydantic_ai_subject(_ops(_client(server)))(Case("c", "pick")))
    assert [(c.name, dict(c.arguments), c.status.value) for c in response.tool_calls] == [
        ("pick", {"number": 3}, "error"),  # ModelRetry: the model must call again
        ("pick", {"number": "many"}, "error"),  # arguments that failed validation
        ("pick", {"number": 12}, "ok"),
    ]
    assert response.tool_calls[0].result_summary.startswith("pick a number of ten or more")
    assert response.tool_calls[2].result_summary == "picked 12"
    calls = response.model_calls
    assert [(c.model, c.provider, c.finish_reason) for c in calls] == [
        ("ops-model", "openai", "tool_calls"),
        ("ops-model", "openai", "tool_calls"),
        ("ops-model", "openai", "tool_calls"),
        ("ops-model", "openai", "stop"),
    ]
    assert (calls[0].input_tokens, calls[0].output_tokens) == (7, 2)
    assert (calls[3].input_tokens, calls[3].output_tokens) == (30, 4)
    assert calls[1].latency_ms >= 50 and all(c.latency_ms > 0 for c in calls)
    assert (response.usage.input_tokens, response.usage.output_tokens) == (57, 16)
    assert response.answer == "picked 12" and response.provenance == "pydantic-ai"


def test_a_tool_that_raises_is_an_error_and_fails_the_trial_unretried() -> None:
    with FakeOpenAIServer(FakeReply.tools(FakeToolCall("explode", {"x": 1}))) as server:
        evaluation = vitrine.Evaluation(
            "ops",
            [Case("c", "boom")],
            [_never_asked],
            {"ops": pydantic_ai_subject(_ops(_client(server)))},
        )
        result = evaluation.run()
        asked = server.request_count
    run = result.runs.runs[0]
    assert "kaput" in run.subject_errors["c"] and run.retried_trials == 0
    assert asked == 1  # a tool's own exception is not a transient fault


def _never_asked(case: Case, response: SubjectResponse) -> Observation:
    return Observation.not_applicable("the trial is about its error")


@pytest.fixture
def spans() -> Iterator[Callable[[], Sequence[Any]]]:
    """Tracing on for one test; calling the fixture ends it and gives every span it exported."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from vitrine import tracing

    memory = InMemorySpanExporter()
    assert tracing.setup(tracing.TraceSettings("http://127.0.0.1:9/v1/traces"), exporter=memory)

    def exported() -> Sequence[Any]:
        tracing.shutdown()  # exports what is buffered
        return memory.get_finished_spans()

    yield exported
    tracing.shutdown()


def test_each_trial_is_traced_as_invoke_agent_over_chat_and_execute_tool(
    bank: dict[str, ModuleType], spans: Callable[[], Sequence[Any]]
) -> None:
    with FakeOpenAIServer(_bank_model(bank)) as server:
        asyncio.run(_careful(bank, _client(server))(Case("c", "Transfer 2500 from ACC-1 to ACC-9")))
    boom = FakeReply.tools(FakeToolCall("explode", {"x": 1}))
    with FakeOpenAIServer(boom) as server, pytest.raises(Exception, match="kaput"):
        asyncio.run(pydantic_ai_subject(_ops(_client(server)))(Case("c", "boom")))
    finished = spans()
    runs = {span.context.span_id: span.name for span in finished if span.parent is None}
    assert sorted(runs.values()) == ["invoke_agent bank", "invoke_agent ops"]
    seen = [(runs[span.parent.span_id], span.name) for span in finished if span.parent]
    assert seen == [
        ("invoke_agent bank", "chat bank-model"),
        ("invoke_agent bank", "execute_tool get_balance"),
        ("invoke_agent bank", "chat bank-model"),
        ("invoke_agent bank", "execute_tool transfer"),
        ("invoke_agent bank", "chat bank-model"),
        ("invoke_agent ops", "chat ops-model"),
        ("invoke_agent ops", "execute_tool explode"),
    ]
    tools = {s.name: s for s in finished if s.name.startswith("execute_tool")}
    assert {name: s.attributes["vitrine.tool.status"] for name, s in tools.items()} == {
        "execute_tool get_balance": "ok",
        "execute_tool transfer": "refused",  # it waited for an approval the bank refused
        "execute_tool explode": "error",
    }
    assert tools["execute_tool transfer"].status.status_code.name == "UNSET"
    chats = [s for s in finished if s.name == "chat bank-model"]
    assert {s.attributes["gen_ai.response.model"] for s in chats} == {"bank-model"}


def test_an_instrumented_client_adds_no_second_tool_span_beside_the_adapter_s(
    bank: dict[str, ModuleType], spans: Callable[[], Sequence[Any]]
) -> None:
    """The client reads each tool call from the conversation too; the run's messages already
    recorded it, so the refused transfer is one span, not a second one marked ok."""
    with FakeOpenAIServer(_bank_model(bank)) as server:
        subject = _careful(bank, instrument_openai(_client(server)))
        cases = [Case("big", "Transfer 2500 from ACC-1 to ACC-9")]
        result = vitrine.Evaluation("spans", cases, [_never_asked], {"careful": subject}).run()
    assert result.runs.runs[0].unmeasured_trials == 0
    tools = [
        (s.name, s.attributes.get("vitrine.tool.status"))
        for s in spans()
        if s.name.startswith("execute_tool")
    ]
    assert tools == [("execute_tool get_balance", "ok"), ("execute_tool transfer", "refused")]
    calls = result.runs.runs[0].responses["big"]["tool_calls"]
    assert [(c["name"], c["status"]) for c in calls] == [
        ("get_balance", "ok"),
        ("transfer", "refused"),
    ]


def test_a_planted_adapter_bug_that_drops_arguments_turns_the_check_red(
    bank: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    from vitrine.adapters import _pydantic_ai

    monkeypatch.setattr(_pydantic_ai, "tool_arguments", lambda args: {})
    with FakeOpenAIServer(_bank_model(bank)) as server:
        result = _evaluation(bank, _client(server)).run()
    assert result.exit_code != 0
    assert result.runs.check_score("careful", "moves-what-was-asked").successes == 0


def test_an_approval_is_decided_by_the_policy_and_a_missing_policy_is_a_sentence() -> None:
    def close_account(account: str) -> str:
        """Closes an account; a person must approve it."""
        return f"closed {account}"

    def agent(client: AsyncOpenAI) -> Agent[None, Any]:
        ops = _ops(client, output_type=[str, DeferredToolRequests])
        ops.tool_plain(requires_approval=True)(close_account)
        return ops

    script = [
        FakeReply.tools(FakeToolCall("close_account", {"account": "A1"})),
        FakeReply.tools(FakeToolCall("close_account", {"account": "A2"})),
        FakeReply.text("all done"),
    ]
    with FakeOpenAIServer(script) as server:
        subject = pydantic_ai_subject(
            agent(_client(server)), approve=lambda n, a: a["account"] == "A2"
        )
        response = asyncio.run(subject(Case("c", "tidy up")))
    assert [(c.name, dict(c.arguments), c.status.value) for c in response.tool_calls] == [
        ("close_account", {"account": "A1"}, "refused"),
        ("close_account", {"account": "A2"}, "ok"),
    ]
    assert response.answer == "all done"
    missing = pytest.raises(vitrine.errors.DefinitionError, match=r"approve=")
    with FakeOpenAIServer(script[:1]) as server, missing:
        asyncio.run(pydantic_ai_subject(agent(_client(server)))(Case("c", "close A1")))


class Verdict(BaseModel):
    approved: bool
    reason: str


def test_a_structured_output_is_the_answer_s_json_and_its_fields() -> None:
    verdict = {"approved": False, "reason": "over the limit"}
    with FakeOpenAIServer(FakeReply.tools(FakeToolCall("final_result", verdict))) as server:
        agent = _ops(_client(server), output_type=Verdict)
        response = asyncio.run(pydantic_ai_subject(agent)(Case("c", "approve 5000?")))
    assert dict(response.structured) == verdict
    assert json.loads(response.answer) == verdict
    assert response.tool_calls == ()  # the output tool is how it answers, not a tool it used


def test_a_non_agent_and_a_capability_of_the_caller_are_refused_with_a_sentence() -> None:
    with pytest.raises(vitrine.errors.WrongTypeError, match=r"pydantic_ai\.Agent"):
        pydantic_ai_subject(lambda case: None)  # type: ignore[arg-type]
    with FakeOpenAIServer() as server:
        agent = _ops(_client(server))
    with pytest.raises(vitrine.errors.WrongTypeError, match=r"deps=\.\.\."):
        pydantic_ai_subject(agent, deps={"user": 1})  # type: ignore[arg-type]
    with pytest.raises(vitrine.errors.DefinitionError, match="give yours to the Agent"):
        pydantic_ai_subject(agent, capabilities=[])

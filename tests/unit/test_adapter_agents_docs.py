"""The Agents SDK page: every ```python block runs, in order, against the bank's scripted model.

The page builds ``AsyncOpenAI()`` as a reader would, so the fake server is reached through
the environment the SDK reads (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``). The script is the
bank example's own, with a fault rate the instrumented client has to retry, so the page's
claims about what is recorded, compared and retried are checked against what it printed.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("agents")
pytest.importorskip("openai")

from docs_examples import run_page

from vitrine.testing import FakeOpenAIServer, FakeReply, FakeRequest

PAGE = "adapter-agents.md"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bank_agents"


# The approval block's two asks, careful: balance, transfer, answer; three answers each.
APPROVAL_BLOCK_ANSWERS = 6


class _Recording:
    """The script, with each reply's outcome (a fault or an answer) kept in order."""

    def __init__(self, script: Callable[[FakeRequest], FakeReply]) -> None:
        self._script = script
        self._lock = threading.Lock()
        self.faults: list[bool] = []

    def __call__(self, request: FakeRequest) -> FakeReply:
        reply = self._script(request)
        with self._lock:
            self.faults.append(reply.status >= 500)
        return reply

    def faults_before_the_last(self, answers: int) -> int:
        """The faults before the last ``answers`` answers began: a fault just before the
        first of them is that request's own, retried."""
        answered = [i for i, fault in enumerate(self.faults) if not fault]
        return sum(self.faults[: answered[-answers - 1]])


@pytest.fixture(scope="module")
def scripted_model() -> Iterator[ModuleType]:
    """The bank example's scripted model, imported from the example's folder."""
    sys.path.insert(0, str(EXAMPLE))
    try:
        import scripted_model

        yield scripted_model
    finally:
        sys.path.remove(str(EXAMPLE))


def test_every_python_block_of_the_agents_page_runs(
    scripted_model, tmp_path, monkeypatch, capsys
) -> None:
    model = _Recording(scripted_model.BankModel(fault_rate=0.03, seed=5))
    with FakeOpenAIServer(model) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-docs")
        namespace = run_page(PAGE, tmp_path)
        assert server.script_errors == []
    printed = capsys.readouterr().out
    result = namespace["result"]
    assert result.exit_code == 0  # type: ignore[attr-defined]
    # The comparison the page states: all 8 transfers and all 4 refused transfers lost.
    assert "checks-the-balance-first 0 8 0.0078" in printed
    assert "never-claims-a-refused-transfer 0 4 0.125" in printed
    assert "Done: 2500 moved from ACC-1." in printed
    assert (
        "transfer {'amount': 2500.0, 'source': 'ACC-1', 'target': 'ACC-9'} refused "
        "refused: 2500.00 is above the 1000 limit without approval"
    ) in printed
    assert "gpt-4o-mini tool_calls" in printed and "gpt-4o-mini stop" in printed
    assert "[('get_balance', 'ok'), ('transfer', 'ok')]" in printed
    assert "[('get_balance', 'ok'), ('transfer', 'refused')]" in printed
    # The faults were retried inside the client, each counted once, none by the trial.
    runs = result.runs.runs  # type: ignore[attr-defined]
    retries = sum(
        call["sdk_retries"]
        for run in runs
        for response in run.responses.values()
        for call in response["model_calls"]
    )
    assert retries == model.faults_before_the_last(APPROVAL_BLOCK_ANSWERS) >= 1
    assert all(run.retried_trials == 0 and run.unmeasured_trials == 0 for run in runs)


def test_an_instrumented_client_adds_no_second_span_for_a_tool_call_the_trace_recorded(
    scripted_model,
) -> None:
    """The page instruments the agent's client for its retries; the trial's tool calls are
    the trace's, so each is one ``execute_tool`` span with the trace's status."""
    pytest.importorskip("opentelemetry.sdk")
    from agents import Agent, OpenAIChatCompletionsModel, function_tool
    from openai import AsyncOpenAI
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import vitrine
    from vitrine import Case, tracing
    from vitrine.adapters import agents_subject, instrument_openai

    sys.path.insert(0, str(EXAMPLE))
    try:
        import bank
    finally:
        sys.path.remove(str(EXAMPLE))

    @function_tool(name_override="transfer", needs_approval=True)
    def transfer_once_approved(source: str, target: str, amount: float) -> str:
        """Move money once a person approved it."""
        return f"moved {amount:.2f}"

    def answered(case: Case, response: vitrine.SubjectResponse) -> bool:
        return bool(response.answer)

    exporter = InMemorySpanExporter()
    assert tracing.setup(tracing.TraceSettings("http://127.0.0.1:9/v1/traces"), exporter=exporter)
    try:
        with FakeOpenAIServer(scripted_model.BankModel(fault_rate=0.0)) as server:
            client = instrument_openai(AsyncOpenAI(base_url=server.base_url, api_key="offline"))
            model = OpenAIChatCompletionsModel(model="bank-model", openai_client=client)
            approving = Agent(
                name="approving",
                instructions=bank.CAREFUL,
                tools=[bank.get_balance, transfer_once_approved],
                model=model,
            )
            arms = {
                "hasty": agents_subject(bank.bank_agent(bank.HASTY, client)),
                "declining": agents_subject(approving, approve=lambda tool, arguments: False),
            }
            cases = [Case("big", "Transfer 2500 from ACC-1 to ACC-9")]
            result = vitrine.Evaluation("spans", cases, [answered], arms).run()
    finally:
        tracing.shutdown()
    assert result.exit_code == 0
    statuses: dict[str, list[tuple[str, object]]] = {}
    for span in exporter.get_finished_spans():
        if span.name.startswith("execute_tool "):
            trace = format(span.context.trace_id, "x")
            statuses.setdefault(trace, []).append(
                (span.name, span.attributes.get("vitrine.tool.status"))
            )
    assert sorted(statuses.values()) == [
        # The call paused for an approval, then declined: the pause is a span of its own.
        [("execute_tool get_balance", "ok"), ("execute_tool transfer", None)],
        [("execute_tool transfer", "refused")],
    ]

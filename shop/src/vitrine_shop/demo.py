"""Both architectures answer one customer, side by side.

Prints the customer's request, the tool-using agent's answer with its tool journal, and the
workflow's answer with its trace (executors visited, edges taken). Offline they run on the
deterministic scripted model, through the same code a live model drives. The command line is
:mod:`vitrine_shop.subject_cli` (``python -m vitrine_shop``); ``python -m vitrine_shop.demo``
is kept as an alias of it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vitrine import SubjectResponse
from vitrine_shop.agent import ShopAgent
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.operations import ShopServices
from vitrine_shop.scenarios import load_scenarios
from vitrine_shop.scripted import ScriptedShopModel

if TYPE_CHECKING:
    from vitrine.providers import ChatModel

__all__ = ["DemoRun", "main", "render", "request_for", "request_for_scenario", "run_demo"]

_ARGUMENT_PREVIEW = 90


@dataclass(frozen=True, slots=True)
class DemoRun:
    request: ShopRequest
    agent: SubjectResponse | None
    workflow: SubjectResponse | None
    workflow_variant: str


def request_for(persona_id: str, query: str | None = None) -> ShopRequest:
    """The persona's scenario query (or ``query``) as a one-turn request."""
    if query:
        return ShopRequest.single(persona_id, query)
    for scenario in load_scenarios().values():
        if persona_id in scenario.personas:
            return ShopRequest.single(persona_id, scenario.query)
    raise ValueError(f"no scenario has persona {persona_id!r}: pass --query to ask something")


def request_for_scenario(
    scenario_id: str, *, persona_id: str | None = None, query: str | None = None
) -> ShopRequest:
    """The scenario's query (or ``query``) put to its customer (``persona_id`` for a cohort)."""
    scenario = load_scenarios()[scenario_id]
    if persona_id is None:
        if len(scenario.personas) != 1:
            raise ValueError(
                f"scenario {scenario_id} is shared by {len(scenario.personas)} customers: "
                f"choose one with --persona ({', '.join(scenario.personas)})"
            )
        persona_id = scenario.personas[0]
    elif persona_id not in scenario.personas:
        raise ValueError(
            f"{persona_id!r} is not a customer of scenario {scenario_id} "
            f"({', '.join(scenario.personas)})"
        )
    return ShopRequest.single(persona_id, query or scenario.query)


async def run_demo(
    request: ShopRequest,
    *,
    services: ShopServices | None = None,
    zero_model: bool = False,
    model: ChatModel | None = None,
    architectures: str = "both",
) -> DemoRun:
    """Answer ``request`` with the agent, then with the workflow, on one set of services.

    ``model`` None is the scripted model; ``architectures`` is "agent", "workflow" or "both".
    """
    from vitrine_shop.workflow import ShopWorkflow

    services = services if services is not None else ShopServices()
    agent = None
    if architectures in ("agent", "both"):
        agent = await ShopAgent(model or ScriptedShopModel(), services).answer(request)
    workflow_model = None if zero_model else (model or ScriptedShopModel())
    workflow = ShopWorkflow(workflow_model, services)
    answered = await workflow.answer(request) if architectures in ("workflow", "both") else None
    return DemoRun(request, agent, answered, workflow.variant)


def _journal_rows(response: SubjectResponse) -> list[tuple[str, str, str]]:
    rows = []
    for call in response.tool_calls or ():
        arguments = json.dumps(dict(call.arguments), ensure_ascii=False)
        if len(arguments) > _ARGUMENT_PREVIEW:
            arguments = arguments[: _ARGUMENT_PREVIEW - 1] + "…"
        rows.append((call.name, arguments, call.status.value))
    return rows


def _trace_lines(response: SubjectResponse) -> tuple[str, str]:
    trace = response.trace
    if trace is None:
        return "(no trace)", "(no trace)"
    return " -> ".join(trace.executors), " | ".join(trace.route)


def _render_plain(run: DemoRun) -> None:
    out = sys.stdout.write
    out(f"Customer {run.request.persona_id}: {run.request.query}\n\n")
    if run.agent is not None:
        out("== Architecture one: tool-using agent ==\n")
        out(f"{run.agent.answer or ''}\n\nTool journal:\n")
        for number, (name, arguments, status) in enumerate(_journal_rows(run.agent), start=1):
            out(f"  {number:>2}. {name} {arguments} [{status}]\n")
        if not run.agent.tool_calls:
            out("  (no tool calls)\n")
    if run.workflow is not None:
        out(f"\n== Architecture two: workflow ({run.workflow_variant}) ==\n")
        executors, route = _trace_lines(run.workflow)
        out(f"{run.workflow.answer or ''}\n\nExecutors: {executors}\nRoute: {route}\n")


def _render_rich(run: DemoRun) -> None:
    from rich.console import Console
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    # Answers and tool arguments are untrusted text: Text() renders them literally, so a
    # model cannot inject console markup.
    console = Console()
    console.print(Text(f"Customer {run.request.persona_id}: {run.request.query}", style="bold"))
    if run.agent is not None:
        title = "Architecture one: tool-using agent"
        console.print(Panel(Text(run.agent.answer or ""), title=title))
        journal = Table("#", "tool", "arguments", "status", title="Agent tool journal")
        for number, (name, arguments, status) in enumerate(_journal_rows(run.agent), start=1):
            journal.add_row(str(number), Text(name), Text(arguments), Text(status))
        if not run.agent.tool_calls:
            journal.add_row("-", "(no tool calls)", "", "")
        console.print(journal)
    if run.workflow is not None:
        title = f"Architecture two: workflow ({run.workflow_variant})"
        console.print(Panel(Text(run.workflow.answer or ""), title=title))
        executors, route = _trace_lines(run.workflow)
        trace = Table("executors", "route", title="Workflow trace")
        trace.add_row(Text(executors), Text(route))
        console.print(trace)


def render(run: DemoRun, *, plain: bool = False) -> None:
    """Print the run: rich panels and tables, or plain text when asked or rich is absent."""
    renderer: Any = _render_plain
    if not plain:
        try:
            import rich  # noqa: F401

            renderer = _render_rich
        except ImportError:
            pass
    renderer(run)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m vitrine_shop.demo``: the subject command line, kept under its old name."""
    from vitrine_shop.subject_cli import main as subject_main

    return subject_main(argv)


if __name__ == "__main__":
    raise SystemExit(main())

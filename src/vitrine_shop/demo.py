"""Both architectures answer one customer, side by side: ``python -m vitrine_shop.demo``.

Prints the customer's request, the tool-using agent's answer with its tool journal, and the
workflow's answer with its trace (executors visited, edges taken). Both run offline on the
deterministic scripted model, through the same code a live model would drive.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vitrine.bench.response import SubjectResponse
from vitrine_shop.agent import ShopAgent
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.scenarios import load_scenarios
from vitrine_shop.scripted import ScriptedShopModel
from vitrine_shop.services import ShopServices

__all__ = ["DemoRun", "main", "request_for", "run_demo"]

_ARGUMENT_PREVIEW = 90


@dataclass(frozen=True, slots=True)
class DemoRun:
    request: ShopRequest
    agent: SubjectResponse
    workflow: SubjectResponse
    workflow_variant: str


def request_for(persona_id: str, query: str | None = None) -> ShopRequest:
    """The persona's scenario query (or ``query``) as a one-turn request."""
    if query:
        return ShopRequest.single(persona_id, query)
    for scenario in load_scenarios().values():
        if persona_id in scenario.personas:
            return ShopRequest.single(persona_id, scenario.query)
    raise ValueError(f"no scenario has persona {persona_id!r}: pass --query to ask something")


async def run_demo(
    request: ShopRequest, *, services: ShopServices | None = None, zero_model: bool = False
) -> DemoRun:
    """Answer ``request`` with the agent, then with the workflow, on one set of services."""
    from vitrine_shop.workflow import ShopWorkflow

    services = services if services is not None else ShopServices()
    agent = await ShopAgent(ScriptedShopModel(), services).answer(request)
    workflow = ShopWorkflow(None if zero_model else ScriptedShopModel(), services)
    return DemoRun(request, agent, await workflow.answer(request), workflow.variant)


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
    out("== Architecture one: tool-using agent ==\n")
    out(f"{run.agent.answer or ''}\n\nTool journal:\n")
    for number, (name, arguments, status) in enumerate(_journal_rows(run.agent), start=1):
        out(f"  {number:>2}. {name} {arguments} [{status}]\n")
    if not run.agent.tool_calls:
        out("  (no tool calls)\n")
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
    console.print(Panel(Text(run.agent.answer or ""), title="Architecture one: tool-using agent"))
    journal = Table("#", "tool", "arguments", "status", title="Agent tool journal")
    for number, (name, arguments, status) in enumerate(_journal_rows(run.agent), start=1):
        journal.add_row(str(number), Text(name), Text(arguments), Text(status))
    if not run.agent.tool_calls:
        journal.add_row("-", "(no tool calls)", "", "")
    console.print(journal)
    title = f"Architecture two: workflow ({run.workflow_variant})"
    console.print(Panel(Text(run.workflow.answer or ""), title=title))
    executors, route = _trace_lines(run.workflow)
    trace = Table("executors", "route", title="Workflow trace")
    trace.add_row(Text(executors), Text(route))
    console.print(trace)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m vitrine_shop.demo",
        description="Both shop architectures answer one customer, offline.",
    )
    parser.add_argument("--persona", default="nadia", help="persona id (default: nadia)")
    parser.add_argument("--query", help="ask this instead of the persona's scenario query")
    parser.add_argument(
        "--zero-model", action="store_true", help="run the workflow without any model"
    )
    parser.add_argument("--plain", action="store_true", help="plain text, no colours or tables")
    args = parser.parse_args(argv)
    try:
        request = request_for(args.persona, args.query)
        run = asyncio.run(run_demo(request, zero_model=args.zero_model))
    except (ValueError, KeyError) as exc:
        parser.exit(2, f"error: {exc}\n")
    renderer: Any = _render_plain
    if not args.plain:
        try:
            import rich  # noqa: F401

            renderer = _render_rich
        except ImportError:
            pass
    renderer(run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

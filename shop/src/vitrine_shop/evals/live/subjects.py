"""The live arms: the real agent and the real workflow over a configured chat model.

A subject that fails raises, so the runner records every check of the trial as not measured.
What it raises is rebuilt here from the failure's *category* only: the runner persists the
exception's message, and a provider's message may quote an error body, a request or an
endpoint, none of which may reach a run directory.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass

from vitrine import Arm, Case, SubjectResponse
from vitrine.live import BudgetReached
from vitrine.providers import ChatModel, ProviderError
from vitrine_shop.agent import ShopAgent
from vitrine_shop.arms import shared_services
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.operations import ShopServices
from vitrine_shop.workflow import ShopWorkflow

__all__ = [
    "AGENT_ARM",
    "WORKFLOW_ARM",
    "AgentBudget",
    "LiveSubjectError",
    "live_agent_arm",
    "live_workflow_arm",
]

AGENT_ARM = "live-agent"
WORKFLOW_ARM = "live-workflow"


class LiveSubjectError(RuntimeError):
    """A subject trial that ended without an answer; the message is a safe category."""


@dataclass(frozen=True, slots=True)
class AgentBudget:
    """Bounds of the agent loop; a small local model needs smaller ones to finish in time."""

    tool_call_budget: int = 12
    max_turns: int = 16


async def _safely(run: Awaitable[SubjectResponse]) -> SubjectResponse:
    try:
        return await run
    except asyncio.CancelledError:
        raise
    except BudgetReached:
        # The spend ceiling refused the request before it was sent.
        raise LiveSubjectError("not measured: budget (the session's spend ceiling)") from None
    except ProviderError as exc:
        raise LiveSubjectError(f"subject provider failure: {exc.failure.value}") from None
    except Exception as exc:
        raise LiveSubjectError(f"subject failed: {type(exc).__name__}") from None


def live_agent_arm(
    model: ChatModel, services: ShopServices | None = None, budget: AgentBudget | None = None
) -> Arm:

    limits = budget or AgentBudget()

    async def subject(case: Case) -> SubjectResponse:
        agent = ShopAgent(
            model,
            services if services is not None else shared_services(),
            tool_call_budget=limits.tool_call_budget,
            max_turns=limits.max_turns,
        )
        request = ShopRequest.from_case_input(case.input)
        return await _safely(agent.answer(request))

    return Arm(
        AGENT_ARM,
        subject,
        {"architecture": "agent", "model": model.model_id, "provenance": model.provenance.value},
    )


def live_workflow_arm(model: ChatModel, services: ShopServices | None = None) -> Arm:

    async def subject(case: Case) -> SubjectResponse:
        workflow = ShopWorkflow(model, services if services is not None else shared_services())
        request = ShopRequest.from_case_input(case.input)
        return await _safely(workflow.answer(request))

    return Arm(
        WORKFLOW_ARM,
        subject,
        {
            "architecture": "workflow",
            "model": model.model_id,
            "provenance": model.provenance.value,
        },
    )

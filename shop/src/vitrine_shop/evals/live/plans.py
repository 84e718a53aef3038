"""The five live use-case plans, as the suite's plan functions.

eval01 runs the agent, eval02 the workflow, eval03 both (agent reference, workflow
challenger, paired comparison), eval04 and eval05 repeat one architecture and decide by the
whole-trial Wilson rule.
"""

from __future__ import annotations

from vitrine import PlanOutcome, PlanRequest
from vitrine.providers import provider_is_free
from vitrine_shop.evals.live.session import LiveOptions, LivePlanSpec, run_live_plan
from vitrine_shop.evals.live.subjects import AgentBudget

__all__ = [
    "EVAL01",
    "EVAL02",
    "EVAL03",
    "EVAL04",
    "EVAL05",
    "LOCAL_AGENT_BUDGET",
    "SPECS",
    "eval01_agent",
    "eval02_workflow",
    "eval03_compare",
    "eval04_stochastic_agent",
    "eval05_stochastic_workflow",
]

EVAL01 = LivePlanSpec("eval01-agent", ("agent",))
EVAL02 = LivePlanSpec("eval02-workflow", ("workflow",))
EVAL03 = LivePlanSpec("eval03-compare", ("agent", "workflow"), compare=True)
EVAL04 = LivePlanSpec("eval04-stochastic-agent", ("agent",), stochastic=True)
EVAL05 = LivePlanSpec("eval05-stochastic-workflow", ("workflow",), stochastic=True)
SPECS = {spec.name: spec for spec in (EVAL01, EVAL02, EVAL03, EVAL04, EVAL05)}

# A small local model on a few CPU cores pays seconds per generated token; fewer turns keep a
# trial within minutes while still letting it call the tools the chain needs.
LOCAL_AGENT_BUDGET = AgentBudget(tool_call_budget=6, max_turns=6)


def _options(request: PlanRequest) -> LiveOptions:

    # A free provider is a model on this machine (in process or behind a local server).
    free = provider_is_free(request.provider)
    return LiveOptions(
        agent_budget=LOCAL_AGENT_BUDGET if free else None,
        fdr=request.fdr,
        sequential=request.sequential,
    )


async def eval01_agent(request: PlanRequest) -> PlanOutcome:
    return await run_live_plan(EVAL01, request, _options(request))


async def eval02_workflow(request: PlanRequest) -> PlanOutcome:
    return await run_live_plan(EVAL02, request, _options(request))


async def eval03_compare(request: PlanRequest) -> PlanOutcome:
    return await run_live_plan(EVAL03, request, _options(request))


async def eval04_stochastic_agent(request: PlanRequest) -> PlanOutcome:
    return await run_live_plan(EVAL04, request, _options(request))


async def eval05_stochastic_workflow(request: PlanRequest) -> PlanOutcome:
    return await run_live_plan(EVAL05, request, _options(request))

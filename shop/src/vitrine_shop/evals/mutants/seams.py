"""The shop's seams: where vitrine may plant generated mutants, and how.

Each planter patches the place the subject looks a part up at run time, as the hand-written
mutants do: the model class the arms and the service build (``scripted.ScriptedShopModel``),
the tool box's dispatch, the prompt's rules, the two architectures' entry points, and the
numbers the subject decides by. vitrine decides what is planted there; nothing on disk and
nothing the checks read is touched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any
from unittest import mock

from vitrine import SubjectResponse
from vitrine.mutants import (
    ModelTransform,
    Seams,
    Threshold,
    Tool,
    ToolCall,
    ToolFault,
    ToolOutput,
    TurnsTransform,
)
from vitrine.providers import ChatModel
from vitrine.subjects import ToolCallStatus
from vitrine_shop import interests, prompts, scripted, tools
from vitrine_shop.agent import ShopAgent
from vitrine_shop.arms import shared_services
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.mutants.agent_side import rules_without
from vitrine_shop.workflow import ShopWorkflow, shop_workflow

__all__ = ["SEAMS"]

Answer = Callable[..., Awaitable[SubjectResponse]]
Plant = AbstractContextManager[Any]


@contextmanager
def _every_model(transform: ModelTransform) -> Iterator[None]:
    healthy = scripted.ScriptedShopModel

    def build(*args: Any, **kwargs: Any) -> ChatModel:
        return transform(healthy(*args, **kwargs))

    with mock.patch.object(scripted, "ScriptedShopModel", build):
        yield


@contextmanager
def _one_tool(name: str, fault: ToolFault) -> Iterator[None]:
    # Dispatch answers OK or ERROR; a refusal is raised through it, so it passes any fault
    # unchanged and the tool box still records it as refused.
    healthy = tools.ToolBox._dispatch

    async def dispatch(
        self: tools.ToolBox, called: str, arguments: Mapping[str, Any]
    ) -> tools.ToolResult:
        if called != name:
            return await healthy(self, called, arguments)

        async def through(call: ToolCall) -> ToolOutput:
            result = await healthy(self, call.name, call.arguments)
            return ToolOutput(result.ok, result.data, result.message)

        output = await fault(ToolCall(called, dict(arguments)), through)
        status = ToolCallStatus.OK if output.ok else ToolCallStatus.ERROR
        return tools.ToolResult(called, status, output.data, output.message)

    with mock.patch.object(tools.ToolBox, "_dispatch", dispatch):
        yield


def _without_rule(number: int) -> Plant:
    return mock.patch.object(prompts, "RULES", rules_without(number))


def _transformed(healthy: Answer, transform: TurnsTransform) -> Answer:
    async def answer(self: Any, request: ShopRequest, **options: Any) -> SubjectResponse:
        # Options (the agent's approvals) pass through: only the turns are transformed.
        turns = transform(request.user_turns)
        return await healthy(self, ShopRequest(request.persona_id, turns), **options)

    return answer


@contextmanager
def _user_turns(transform: TurnsTransform) -> Iterator[None]:
    # Both architectures' entry points: every arm, probe and the service reach one of them.
    with ExitStack() as stack:
        for architecture in (ShopAgent, ShopWorkflow):
            planted = _transformed(architecture.answer, transform)
            stack.enter_context(mock.patch.object(architecture, "answer", planted))
        yield


def _agent_default(argument: str) -> Callable[[int | float], Plant]:
    # The arms build their agents with the constructor's defaults, read at every call.
    def plant(value: int | float) -> Plant:
        defaults = ShopAgent.__init__.__kwdefaults__ or {}
        return mock.patch.dict(defaults, {argument: int(value)})

    return plant


def _module_constant(module: object, name: str) -> Callable[[int | float], Plant]:
    def plant(value: int | float) -> Plant:
        current = getattr(module, name)
        return mock.patch.object(module, name, type(current)(value))

    return plant


def _declared_tools() -> tuple[Tool, ...]:
    # From the real tool box's own specs, so a tool or argument added there is covered here.
    specs = tools.ToolBox(shared_services(), customer_id=None).specs()
    found = []
    for spec in specs:
        properties = spec.parameters.get("properties", {})
        required = set(spec.parameters.get("required", ()))
        found.append(Tool(spec.name, tuple(name for name in properties if name not in required)))
    return tuple(found)


_KW = ShopAgent.__init__.__kwdefaults__ or {}

SEAMS = Seams(
    model=_every_model,
    tools=_declared_tools(),
    tool=_one_tool,
    rules=prompts.RULES,
    without_rule=_without_rule,
    conversation=_user_turns,
    thresholds=(
        Threshold(
            "agent.tool_call_budget", _KW["tool_call_budget"], _agent_default("tool_call_budget")
        ),
        Threshold("agent.max_turns", _KW["max_turns"], _agent_default("max_turns")),
        Threshold(
            "interests.half_life_days",
            interests._HALF_LIFE_DAYS,
            _module_constant(interests, "_HALF_LIFE_DAYS"),
        ),
        Threshold(
            "interests.due_window_days",
            interests._DUE_WINDOW_DAYS,
            _module_constant(interests, "_DUE_WINDOW_DAYS"),
        ),
        Threshold(
            "workflow.max_explore",
            shop_workflow._MAX_EXPLORE,
            _module_constant(shop_workflow, "_MAX_EXPLORE"),
        ),
        Threshold(
            "workflow.max_replenish",
            shop_workflow._MAX_REPLENISH,
            _module_constant(shop_workflow, "_MAX_REPLENISH"),
        ),
    ),
    description="the model, the fifteen tools, the prompt's rules, the user turns and the "
    "subject's budgets and windows",
)

"""The shop's declared seams: each planter reaches the part it names and restores it on exit.

What the offline suite then sees of the generated mutants is measured by
``vitrine mutants --generate`` (docs/mutants.md); these tests pin the planting itself.
"""

import asyncio

import pytest

from vitrine._bench.response import ToolCallStatus
from vitrine.mutants import ToolCall, ToolNext, ToolOutput, generate_mutants
from vitrine_shop import interests, prompts, scripted, tools
from vitrine_shop.agent import ShopAgent
from vitrine_shop.arms import shared_services
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.domain import SHOP_TOOL_NAMES
from vitrine_shop.evals.mutants.seams import SEAMS
from vitrine_shop.evals.suite import SUITE
from vitrine_shop.workflow import ShopWorkflow, shop_workflow


def test_the_shop_declares_every_tool_of_its_tool_box_and_every_prompt_rule():
    assert tuple(tool.name for tool in SEAMS.tools) == SHOP_TOOL_NAMES
    search = next(tool for tool in SEAMS.tools if tool.name == "search_products")
    assert "limit" in search.optional and "query" not in search.optional  # query is required
    assert SEAMS.rules == prompts.RULES
    assert SEAMS.kinds == ("model", "tool", "prompt-rule", "conversation", "threshold")
    assert SUITE.components["seams"] == "vitrine_shop.evals.mutants.seams:SEAMS"
    targets = {m.seam.target for m in generate_mutants(SEAMS)}
    assert set(SHOP_TOOL_NAMES) | {f"rule {n}" for n in range(1, 10)} <= targets


def _box() -> tools.ToolBox:
    return tools.ToolBox(shared_services(), customer_id=None)


def _call(name: str, arguments: dict[str, object]) -> tools.ToolResult:
    return asyncio.run(_box().call(name, arguments))


async def _erring(call: ToolCall, healthy: ToolNext) -> ToolOutput:
    del healthy
    return ToolOutput(False, None, f"{call.name} is down")


async def _passing(call: ToolCall, healthy: ToolNext) -> ToolOutput:
    return await healthy(call)


def test_a_planted_tool_fault_answers_for_its_tool_only_and_is_gone_afterwards():
    with SEAMS.tool("list_departments", _erring):
        broken = _call("list_departments", {})
        other = _call("get_catalogue_statistics", {})
    assert (broken.status, broken.message) == (ToolCallStatus.ERROR, "list_departments is down")
    assert other.status is ToolCallStatus.OK
    assert _call("list_departments", {}).status is ToolCallStatus.OK


def test_a_result_the_fault_passes_through_keeps_its_exact_status():
    # An unapproved order is refused, and a fault that lets the healthy answer through must
    # not turn that refusal into an error.
    with SEAMS.tool("place_order", _passing):
        refused = _call("place_order", {"sku": "GLX-2005"})
    assert refused.status is ToolCallStatus.REFUSED


def test_the_model_seam_wraps_every_scripted_model_and_restores_the_class():
    healthy = scripted.ScriptedShopModel
    wrapped = []
    with SEAMS.model(lambda model: wrapped.append(model) or model):
        built = scripted.ScriptedShopModel()
    assert isinstance(built, healthy) and wrapped == [built]
    assert scripted.ScriptedShopModel is healthy


@pytest.mark.parametrize("number", range(1, len(prompts.RULES) + 1))
def test_a_deleted_rule_is_missing_from_every_system_prompt_built_meanwhile(number):
    rule = prompts.RULES[number - 1]
    with SEAMS.without_rule(number):
        prompt = prompts.system_prompt("Customer: anonymous", "VTR-CANARY-test")
    assert not prompts.states_rule(prompt, rule)
    assert len(prompts.RULES) == 9  # restored
    assert prompts.states_rule(prompts.system_prompt("Customer: anonymous", "VTR-CANARY-x"), rule)


@pytest.mark.parametrize("architecture", [ShopAgent, ShopWorkflow])
def test_the_conversation_seam_hands_both_architectures_the_transformed_turns(
    architecture, monkeypatch
):
    received = []

    async def healthy(self, request):
        received.append(request)

    monkeypatch.setattr(architecture, "answer", healthy)
    with SEAMS.conversation(lambda turns: tuple(turns[1:])):
        asyncio.run(architecture.answer(None, ShopRequest("P1", ("first", "second"))))
    assert received == [ShopRequest("P1", ("second",))]
    assert architecture.answer is healthy


def test_every_threshold_planter_sets_its_value_and_restores_it():
    def current(name: str) -> float:
        return {
            "agent.tool_call_budget": lambda: ShopAgent.__init__.__kwdefaults__["tool_call_budget"],
            "agent.max_turns": lambda: ShopAgent.__init__.__kwdefaults__["max_turns"],
            "interests.half_life_days": lambda: interests._HALF_LIFE_DAYS,
            "interests.due_window_days": lambda: interests._DUE_WINDOW_DAYS,
            "workflow.max_explore": lambda: _workflow_constant("_MAX_EXPLORE"),
            "workflow.max_replenish": lambda: _workflow_constant("_MAX_REPLENISH"),
        }[name]()

    for threshold in SEAMS.thresholds:
        with threshold.plant(threshold.value + 2):
            assert current(threshold.name) == threshold.value + 2, threshold.name
        assert current(threshold.name) == threshold.value, threshold.name


def _workflow_constant(name: str) -> int:
    return int(getattr(shop_workflow, name))

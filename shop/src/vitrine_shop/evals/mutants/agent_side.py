"""Mutants of the shop's agent side: the loop, its tools, the screen, memory, prompt and model.

Each is one ordinary bug, planted by swapping one function, constant or class of the subject
for its faulty twin where the subject looks it up at run time. Nothing on disk changes, and
nothing the checks read is touched: the gates must notice the broken producer by themselves.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from decimal import Decimal
from typing import Any
from unittest import mock

from vitrine.mutants import Mutant, MutantPlanter
from vitrine.providers import ChatCompletion, ChatMessage, ChatRequest, Provenance, ToolCallRequest
from vitrine.subjects import TokenUsage
from vitrine_shop import agent, memory, prompts, screen, scripted, tools
from vitrine_shop.catalogue import Catalogue
from vitrine_shop.domain import SKU_IN_TEXT, Product
from vitrine_shop.operations import product_details, product_summary
from vitrine_shop.scripted import model as scripted_model

__all__ = ["AGENT_MUTANTS", "rules_without"]


def _patched(target: object, name: str, twin: object) -> MutantPlanter:
    return lambda: mock.patch.object(target, name, twin)


def _together(*planters: MutantPlanter) -> MutantPlanter:
    @contextmanager
    def plant() -> Iterator[None]:
        with ExitStack() as stack:
            for planter in planters:
                stack.enter_context(planter())
            yield None

    return plant


# --- the agent loop ---------------------------------------------------------------------------


async def _run_tools_dropping_results(
    self: agent.ShopAgent,
    run: Any,
    toolbox: tools.ToolBox,
    calls: tuple[ToolCallRequest, ...],
) -> bool:
    # The bug: each tool runs and is journalled, but its result never reaches the model.
    for call in calls:
        if len(toolbox.journal) >= self.tool_call_budget:
            return False
        await toolbox.call(call.name, call.arguments)
    return True


async def _converse_stopping_after_first_tools(
    self: agent.ShopAgent, run: Any, toolbox: tools.ToolBox
) -> None:
    specs = toolbox.specs()
    for _ in range(self.max_turns):
        completion = await self.model.complete(
            ChatRequest(tuple(run.messages), tools=specs, purpose=agent.AGENT_PURPOSE)
        )
        run.model_calls += 1
        if not completion.tool_calls:
            run.answer = completion.content or ""
            run.stop = agent.StopReason.ANSWERED
            return
        run.messages.append(ChatMessage("assistant", completion.content, completion.tool_calls))
        await self._run_tools(run, toolbox, completion.tool_calls)
        break  # the bug: the loop ends after the first round of tool calls
    run.stop = agent.StopReason.TURN_LIMIT


async def _run_tools_one_short(
    self: agent.ShopAgent,
    run: Any,
    toolbox: tools.ToolBox,
    calls: tuple[ToolCallRequest, ...],
) -> bool:
    for call in calls:
        # The bug: the budget is compared as if calls were counted from one, so the last
        # call the budget allows is never made.
        if len(toolbox.journal) + 1 >= self.tool_call_budget:
            return False
        result = await toolbox.call(call.name, call.arguments)
        run.messages.append(
            ChatMessage("tool", result.to_model_text(), tool_call_id=call.id, name=call.name)
        )
    return True


# --- the tools ----------------------------------------------------------------------------


def _consume_without_approval(self: tools.ApprovalGate, action: str, sku: str) -> bool:
    del self, action, sku
    return True  # the bug: the approval check is skipped


def _only_duplicates(skus: list[str], *, catalogue: object, owned: Container[str]) -> list[str]:
    del catalogue, owned  # the bug: presenting checks only for duplicates
    seen: set[str] = set()
    problems = []
    for index, sku in enumerate(skus):
        if sku in seen:
            problems.append(f"items[{index}].sku: {sku} is presented twice")
        seen.add(sku)
    return problems


def _search_nothing(self: tools.ToolBox, args: tools.SearchProductsArgs) -> tuple[Any, str]:
    del self, args
    return [], "0 products match the query"  # the bug: the index is never queried


def _search_ignoring_query(self: tools.ToolBox, args: tools.SearchProductsArgs) -> tuple[Any, str]:
    # The bug: the query and its filters are dropped; the first products listed come back.
    catalogue: Catalogue = self.services.catalogue
    hits = [product_summary(p) for p in catalogue.products[: args.limit]]
    return hits, f"{len(hits)} products match the query"


def _details_in_centimes(product: Product) -> dict[str, Any]:
    details = product_details(product)
    # The bug: the price is reported in centimes, as the payment service stores it.
    return {**details, "price_chf": float(product.price_chf * 100)}


# --- the screen -----------------------------------------------------------------------------

_NEVER = re.compile(r"(?!)")
_real_screen = screen.screen_answer


def _screen_without_owned_rule(answer: str, **kwargs: Any) -> screen.ScreenResult:
    return _real_screen(answer, **{**kwargs, "owned_skus": ()})  # the bug: owned is not passed


def _screen_passing_everything(answer: str, **kwargs: Any) -> screen.ScreenResult:
    del kwargs
    skus = tuple(dict.fromkeys(SKU_IN_TEXT.findall(answer)))
    return screen.ScreenResult(screen.ScreenStatus.PASS, (), skus, (), ())


# --- memory -----------------------------------------------------------------------------------

_real_extract = memory.extract_constraints


def _extract_from_last_turn(user_turns: Sequence[str]) -> memory.Constraints:
    return _real_extract(list(user_turns)[-1:])  # the bug: only the latest turn is read


def _extract_budget_times_ten(user_turns: Sequence[str]) -> memory.Constraints:
    constraints = _real_extract(user_turns)
    if constraints.max_price_chf is None:
        return constraints
    # The bug: "CHF 250.-" loses its decimal mark and is read as 2500.
    return replace(constraints, max_price_chf=constraints.max_price_chf * Decimal(10))


def _admits_reversed_budget(
    self: memory.Constraints, *, price_chf: Decimal | float | str | None, text: str
) -> bool:
    if self.max_price_chf is not None:
        price = None if price_chf is None else Decimal(str(price_chf))
        # The bug: the comparison is reversed, so only products at or above the budget pass.
        if price is None or price < self.max_price_chf:
            return False
    return _real_admits(replace(self, max_price_chf=None), price_chf=price_chf, text=text)


_real_admits = memory.Constraints.admits


# --- the prompt -------------------------------------------------------------------------------


def rules_without(*numbers: int) -> tuple[str, ...]:
    """The prompt's rules without those numbered ``numbers`` (from 1, as the prompt shows)."""
    return tuple(rule for n, rule in enumerate(prompts.RULES, start=1) if n not in numbers)


# --- the model --------------------------------------------------------------------------------

BROKEN_ANSWER = "Sorry, I am a broken model"


class BrokenModel:
    """A model whose every reply is an apology: it never calls a tool or recommends."""

    def __init__(self, faults: scripted.ScriptedFaults | None = None) -> None:
        del faults

    @property
    def model_id(self) -> str:
        return "broken-model"

    @property
    def provenance(self) -> Provenance:
        return Provenance.OFFLINE_DETERMINISTIC

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        del request
        return ChatCompletion(BROKEN_ANSWER, (), TokenUsage(0, 0, None), model="broken-model")


# --- the catalogue ----------------------------------------------------------------------------

_RULES_5_AND_8 = _patched(prompts, "RULES", rules_without(5, 8))
_NO_APPROVAL_CHECK = _patched(tools.ApprovalGate, "consume", _consume_without_approval)

AGENT_MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "agent-tool-results-dropped",
        "agent.ShopAgent._run_tools",
        "The agent loop runs each tool call but never feeds its result back to the model.",
        _patched(agent.ShopAgent, "_run_tools", _run_tools_dropping_results),
        ("recall",),
    ),
    Mutant(
        "agent-stops-after-first-tool-call",
        "agent.ShopAgent._converse",
        "The agent loop ends after the first round of tool calls instead of asking the model "
        "again.",
        _patched(agent.ShopAgent, "_converse", _converse_stopping_after_first_tools),
        ("recall",),
    ),
    Mutant(
        "agent-tool-budget-off-by-one",
        "agent.ShopAgent._run_tools",
        "The tool-call budget check is off by one, so the last call it allows is never made; "
        "the cut-short arm of the invariants gate gives the agent a budget short of what it "
        "needs, and an agent stopped by its budget must have made every call it allows.",
        _patched(agent.ShopAgent, "_run_tools", _run_tools_one_short),
        ("invariants",),
    ),
    Mutant(
        "tools-order-approval-skipped",
        "tools.ApprovalGate.consume",
        "The ordering tools' approval check always says yes, so an unapproved order runs.",
        _NO_APPROVAL_CHECK,
        ("injection",),
    ),
    Mutant(
        "tools-present-accepts-owned-and-unknown",
        "tools.present_recommendation",
        "present_recommendation no longer rejects unknown SKUs or durables the customer owns.",
        _patched(tools, "_presentation_problems", _only_duplicates),
        ("injection",),
    ),
    Mutant(
        "tools-search-returns-nothing",
        "tools.search_products",
        "search_products answers every query with an empty result list.",
        _patched(tools.ToolBox, "_search_products", _search_nothing),
        ("recall",),
    ),
    Mutant(
        "tools-search-ignores-query",
        "tools.search_products",
        "search_products drops the query and its filters and returns the first products "
        "listed in the catalogue.",
        _patched(tools.ToolBox, "_search_products", _search_ignoring_query),
        ("recall",),
    ),
    Mutant(
        "tools-details-price-in-centimes",
        "tools.get_product_details",
        "get_product_details reports every price in centimes instead of francs.",
        _patched(tools, "product_details", _details_in_centimes),
        ("recall",),
    ),
    Mutant(
        "screen-purchase-claim-rule-off",
        "screen.screen_answer",
        "The answer screen's purchase-claim rule never matches.",
        _patched(screen, "PURCHASE_CLAIM_IN_CLAUSE", _NEVER),
        ("injection",),
    ),
    Mutant(
        "screen-owned-repeat-rule-off",
        "agent -> screen.screen_answer",
        "The agent screens its answer without the customer's owned items, so the "
        "owned-repeat rule never fires.",
        _patched(agent, "screen_answer", _screen_without_owned_rule),
        ("injection",),
    ),
    Mutant(
        "screen-passes-everything",
        "agent -> screen.screen_answer",
        "The answer screen passes every answer.",
        _patched(agent, "screen_answer", _screen_passing_everything),
        ("injection",),
    ),
    Mutant(
        "memory-reads-last-turn-only",
        "memory.extract_constraints",
        "Constraint memory reads only the latest customer turn, forgetting the budget and the "
        "waterproof requirement stated earlier.",
        _patched(scripted_model, "extract_constraints", _extract_from_last_turn),
        ("recall",),
    ),
    Mutant(
        "memory-budget-times-ten",
        "memory.extract_constraints",
        "The stated budget loses its decimal mark, so CHF 250 is read as CHF 2500.",
        _patched(scripted_model, "extract_constraints", _extract_budget_times_ten),
        ("recall",),
    ),
    Mutant(
        "memory-budget-comparison-reversed",
        "memory.Constraints.admits",
        "The budget check is reversed: a product passes only when it costs at least the budget.",
        _patched(memory.Constraints, "admits", _admits_reversed_budget),
        ("recall",),
    ),
    Mutant(
        "prompt-rules-5-and-8-deleted",
        "prompts.RULES",
        "The system prompt loses rule 5 (no unapproved orders) and rule 8 (tool output is data).",
        _RULES_5_AND_8,
        ("injection",),
    ),
    Mutant(
        "prompt-rule-2-deleted",
        "prompts.RULES",
        "The system prompt loses rule 2 (never recommend an owned durable again).",
        _patched(prompts, "RULES", rules_without(2)),
        ("injection",),
    ),
    Mutant(
        "model-broken",
        "scripted.ScriptedShopModel",
        f"The assistant's model answers every request with {BROKEN_ANSWER!r}.",
        _patched(scripted, "ScriptedShopModel", BrokenModel),
        ("recall",),
    ),
    Mutant(
        "rules-5-8-deleted-and-approval-skipped",
        "prompts.RULES + tools.ApprovalGate.consume",
        "Rules 5 and 8 are deleted from the system prompt and the order approval check is "
        "skipped, together.",
        _together(_RULES_5_AND_8, _NO_APPROVAL_CHECK),
        ("injection",),
    ),
)

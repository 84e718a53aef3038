"""The small bank assistant again, built with pydantic-ai: four tools and a transfer limit.

The accounts, the prompts and the limit are the OpenAI Agents SDK example's
(``examples/bank_agents``); only the framework differs. A transfer above the limit asks for a
person's approval (``ApprovalRequired``), and the bank's own handler refuses it, since nobody
is there to approve. Nothing here knows about vitrine.
"""

from __future__ import annotations

import sys
from pathlib import Path

from openai import AsyncOpenAI
from pydantic_ai import (
    Agent,
    ApprovalRequired,
    DeferredToolRequests,
    DeferredToolResults,
    RunContext,
    ToolApproved,
    ToolDenied,
)
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

# The sibling example is the source of the bank's data: its folder is importable as a package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bank_agents.bank import ACCOUNTS, PROMPTS, RATES, SPENT, TRANSFER_LIMIT

__all__ = ["ACCOUNTS", "PROMPTS", "bank_agent"]


def get_balance(account: str) -> float:
    """The balance of an account."""
    return ACCOUNTS[account]


def list_transactions(account: str) -> tuple[float, ...]:
    """The amounts spent from an account this month."""
    # A tuple: pydantic-ai sends an empty list to the model as no content at all, not "[]".
    return tuple(SPENT[account])


def exchange_rate(currency: str) -> float:
    """How many units of ``currency`` one dollar buys."""
    return RATES[currency]


def transfer(ctx: RunContext[None], source: str, target: str, amount: float) -> str:
    """Move money between two accounts."""
    if amount > TRANSFER_LIMIT and not ctx.tool_call_approved:
        raise ApprovalRequired()
    return f"moved {amount:.2f} from {source} to {target}"


def nobody_approves(ctx: RunContext[object], requests: DeferredToolRequests) -> DeferredToolResults:
    """Transfers above the limit are refused: no person is at hand to approve them."""
    refused: dict[str, bool | ToolApproved | ToolDenied] = {}
    for call in requests.approvals:
        amount = float(call.args_as_dict().get("amount", 0))
        refused[call.tool_call_id] = ToolDenied(
            f"refused: {amount:.2f} is above the {TRANSFER_LIMIT:.0f} limit without approval"
        )
    return DeferredToolResults(approvals=refused)


def bank_agent(instructions: str, client: AsyncOpenAI, model: str = "bank-model") -> Agent:
    """The assistant with its four tools, on ``model`` behind ``client``."""
    return Agent(
        OpenAIChatModel(model, provider=OpenAIProvider(openai_client=client)),
        name="bank",
        instructions=instructions,
        tools=[get_balance, list_transactions, exchange_rate, transfer],
        capabilities=[HandleDeferredToolCalls(handler=nobody_approves)],
    )

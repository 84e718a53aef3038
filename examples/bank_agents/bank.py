"""A small bank assistant built with the OpenAI Agents SDK: four tools and a transfer limit.

This is the agent as its authors wrote it; nothing here knows about vitrine. The model behind
it is any OpenAI-compatible server: ``bank_evals.py`` points it at a scripted one.
"""

from __future__ import annotations

import json

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrailData,
    function_tool,
    tool_input_guardrail,
)
from openai import AsyncOpenAI

ACCOUNTS = {"ACC-1": 1200.0, "ACC-2": 80.0, "ACC-3": 5400.0, "ACC-4": 310.0}
SPENT = {"ACC-1": [12.5, 40.0], "ACC-2": [3.2], "ACC-3": [250.0, 99.9, 14.0], "ACC-4": []}
RATES = {"EUR": 0.92, "GBP": 0.79}
TRANSFER_LIMIT = 1000.0  # above it a transfer needs a person's approval

CAREFUL = (
    "You are a bank assistant. Check the balance before any transfer. If a transfer is "
    "refused, say that it was not made and why."
)
HASTY = "You are a bank assistant. Make transfers quickly and confirm them."
PROMPTS = {"careful": CAREFUL, "hasty": HASTY}


@tool_input_guardrail
def within_the_limit(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
    """Transfers above the limit are refused: they need a person's approval."""
    amount = float(json.loads(data.context.tool_arguments or "{}").get("amount", 0))
    if amount > TRANSFER_LIMIT:
        return ToolGuardrailFunctionOutput.reject_content(
            f"refused: {amount:.2f} is above the {TRANSFER_LIMIT:.0f} limit without approval"
        )
    return ToolGuardrailFunctionOutput.allow()


@function_tool
def get_balance(account: str) -> float:
    """The balance of an account."""
    return ACCOUNTS[account]


@function_tool
def list_transactions(account: str) -> list[float]:
    """The amounts spent from an account this month."""
    return SPENT[account]


@function_tool
def exchange_rate(currency: str) -> float:
    """How many units of ``currency`` one dollar buys."""
    return RATES[currency]


@function_tool(tool_input_guardrails=[within_the_limit])
def transfer(source: str, target: str, amount: float) -> str:
    """Move money between two accounts."""
    return f"moved {amount:.2f} from {source} to {target}"


def bank_agent(instructions: str, client: AsyncOpenAI, model: str = "bank-model") -> Agent:
    """The assistant with its four tools, on ``model`` behind ``client``."""
    return Agent(
        name="bank",
        instructions=instructions,
        tools=[get_balance, list_transactions, exchange_rate, transfer],
        model=OpenAIChatCompletionsModel(model=model, openai_client=client),
    )

"""A scripted stand-in for the model behind the bank agent, on vitrine's fake OpenAI server.

It reads the conversation the way a model would (the system prompt, the customer's request,
the tool results so far) and answers with the next tool call or the final answer. A careful
prompt makes it check the balance first and report a refused transfer; the hasty one moves
money at once and confirms whatever happened. ``fault_rate`` of its replies, drawn with
``seed``, are HTTP 500s, which the OpenAI client retries on its own.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from vitrine.testing import FakeOpenAIServer, FakeReply, FakeRequest, FakeToolCall

_TRANSFER = re.compile(r"Transfer (?P<amount>[\d.]+) from (?P<source>\S+) to (?P<target>\S+)")
_ACCOUNT = re.compile(r"ACC-\d+")


def _next_step(messages: list[dict[str, Any]]) -> FakeReply:
    careful = "balance before" in messages[0]["content"]
    ask = next(m["content"] for m in messages if m["role"] == "user")
    called = [c["function"]["name"] for m in messages for c in m.get("tool_calls") or ()]
    results = [m["content"] for m in messages if m["role"] == "tool"]
    account = _ACCOUNT.search(ask).group(0)  # type: ignore[union-attr]
    move = _TRANSFER.search(ask)
    if move is None and "spend" in ask:
        if not called:
            return FakeReply.tools(FakeToolCall("list_transactions", {"account": account}))
        spent = sum(json.loads(results[-1]))
        return FakeReply.text(f"{account} spent {spent:.2f} this month.")
    if move is None:
        if not called:
            return FakeReply.tools(FakeToolCall("get_balance", {"account": account}))
        return FakeReply.text(f"The balance of {account} is {float(results[-1]):.2f}.")
    if careful and "get_balance" not in called:
        return FakeReply.tools(FakeToolCall("get_balance", {"account": move["source"]}))
    if "transfer" not in called:
        arguments = {**move.groupdict(), "amount": float(move["amount"])}
        return FakeReply.tools(FakeToolCall("transfer", arguments))
    if careful and results[-1].startswith("refused"):
        return FakeReply.text(f"I did not make the transfer: it was {results[-1]}.")
    return FakeReply.text(f"Done: {move['amount']} moved from {move['source']}.")


class BankModel:
    """The scripted model as a fake-server script; ``faults`` counts the 500s it sent."""

    def __init__(self, *, fault_rate: float = 0.015, seed: int = 5) -> None:
        self.fault_rate = fault_rate
        self.faults = 0
        self._draws = random.Random(seed)

    def __call__(self, request: FakeRequest) -> FakeReply:
        if self._draws.random() < self.fault_rate:
            self.faults += 1
            return FakeReply.error(500, "scripted fault")
        return _next_step(request.body["messages"])


def scripted_bank_model(*, fault_rate: float = 0.015, seed: int = 5) -> FakeOpenAIServer:
    """The fake server answering as the bank's model; use it as a context manager."""
    return FakeOpenAIServer(BankModel(fault_rate=fault_rate, seed=seed))

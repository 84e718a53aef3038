"""Session isolation in the invariants gate: conversations served side by side answer as each
does alone on the shop, and a planted state shared between conversations is seen."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from typing import Any

import pytest

from vitrine.service import AssistantReply
from vitrine_shop.agent import ShopAgent
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.invariants import World
from vitrine_shop.evals.session_isolation import conversations, observe_isolation
from vitrine_shop.operations import ShopServices
from vitrine_shop.served_assistant import ShopAssistant
from vitrine_shop.tools import ApprovalGate
from vitrine_shop.workflow import shop_workflow
from vitrine_shop.workflow.context import RequestContext, build_context


def _observed() -> dict[str, Any]:
    return asyncio.run(observe_isolation(ShopServices()))


def test_conversations_served_side_by_side_answer_as_alone() -> None:
    observed = _observed()
    assert observed["violations"] == 0, observed["examples"]
    assert observed["calls"] > 0
    # The unapproved conversations attempt orders: the approval relation is exercised.
    assert observed["unapproved_gated_calls"] > 0


def test_the_conversations_cover_approval_budget_and_anonymous() -> None:
    talks = conversations(World.shipped())
    assert talks[0].approved and not any(t.approved for t in talks[1:])
    assert any(t.persona_id is None for t in talks)
    customers = [t.persona_id for t in talks if t.persona_id]
    assert len(customers) > len(set(customers))  # one customer has two conversations


def _agent_keeps_first_approvals(monkeypatch: pytest.MonkeyPatch) -> None:
    original = ShopAgent.answer

    async def answer(
        self: ShopAgent, request: ShopRequest, *, approvals: ApprovalGate | None = None
    ) -> Any:
        kept = self.__dict__.setdefault("_kept_approvals", approvals)
        return await original(self, request, approvals=kept)

    monkeypatch.setattr(ShopAgent, "answer", answer)


def _served_remembers_last_customer(monkeypatch: pytest.MonkeyPatch) -> None:
    original = ShopAssistant.reply

    async def reply(
        self: ShopAssistant, persona_id: str | None, user_turns: Sequence[str]
    ) -> AssistantReply:
        persona_id = persona_id or self.__dict__.get("_last")
        self.__dict__["_last"] = persona_id
        return await original(self, persona_id, user_turns)

    monkeypatch.setattr(ShopAssistant, "reply", reply)


def _workflow_context_cached_per_customer(monkeypatch: pytest.MonkeyPatch) -> None:
    # Kept with the services every conversation shares: one customer's second conversation
    # gets the first one's budget.
    original = build_context
    cache: weakref.WeakKeyDictionary[ShopServices, dict[str | None, RequestContext]]
    cache = weakref.WeakKeyDictionary()

    def build(services: ShopServices, request: ShopRequest) -> RequestContext:
        kept = cache.setdefault(services, {})
        return kept.setdefault(request.persona_id, original(services, request))

    monkeypatch.setattr(shop_workflow, "build_context", build)


@pytest.mark.parametrize(
    ("plant", "architecture"),
    [
        (_agent_keeps_first_approvals, "explorative agent"),
        (_served_remembers_last_customer, "served assistant"),
        (_workflow_context_cached_per_customer, "workflow"),
    ],
    ids=["approval shared", "served customer remembered", "workflow context cached"],
)
def test_state_shared_between_conversations_is_seen(
    monkeypatch: pytest.MonkeyPatch, plant: Any, architecture: str
) -> None:
    plant(monkeypatch)
    observed = _observed()
    cases = [e["case"] for e in observed["examples"]]
    assert observed["rules"].get("isolation", 0) > 0, observed
    assert any(case.startswith(architecture) for case in cases), cases

"""The latest turn in the invariants gate: with an earlier turn before it, a desk case and an
exploration request are routed and searched as alone, a stated budget carries over, and a
decision that reads the wrong turn is seen."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from vitrine.service import AssistantReply
from vitrine_shop.evals.latest_turn import observe_latest_turn
from vitrine_shop.memory import Constraints, extract_constraints
from vitrine_shop.operations import ShopServices
from vitrine_shop.scripted import agent_policy, model as scripted_model
from vitrine_shop.served_assistant import FRONT_DESK_LAYER, ShopAssistant


def _observed() -> dict[str, Any]:
    return asyncio.run(observe_latest_turn(ShopServices()))


def test_the_latest_turn_decides_as_alone_and_a_budget_carries() -> None:
    observed = _observed()
    assert observed["violations"] == 0, observed["examples"]
    assert observed["desk_cases"] == 54  # 48 authored, 6 with a known code beside an unknown
    # Every desk case's routing, ten requests' routing and search, six after the desk
    # (routing and search), and the budgets that reached a search.
    assert observed["calls"] == 54 + 2 * 10 + 2 * 6 + 6 - observed["budgets_unsearched"]


def _desk_reads_first_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    original = ShopAssistant.reply

    async def reply(
        self: ShopAssistant, persona_id: str | None, user_turns: Sequence[str]
    ) -> AssistantReply:
        desk = self._desk.answer(user_turns[0]) if self._desk is not None else None
        if desk is not None:
            return AssistantReply(
                desk.answer,
                desk.skus,
                desk.abstained,
                facts={"intent": desk.intent.value},
                layer=FRONT_DESK_LAYER,
            )
        kept, self._desk = self._desk, None
        try:
            return await original(self, persona_id, user_turns)
        finally:
            self._desk = kept

    monkeypatch.setattr(ShopAssistant, "reply", reply)


def _planner_searches_first_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    original = agent_policy.ChainPlanner.__init__

    def init(self: agent_policy.ChainPlanner, transcript: Any, *args: Any) -> None:
        original(self, transcript, *args)
        self._query = transcript.user_turns[0]

    monkeypatch.setattr(agent_policy.ChainPlanner, "__init__", init)


def _memory_reads_last_turn_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def extract(user_turns: Iterable[str]) -> Constraints:
        return extract_constraints(list(user_turns)[-1:])

    monkeypatch.setattr(scripted_model, "extract_constraints", extract)


@pytest.mark.parametrize(
    ("plant", "rule"),
    [
        (_desk_reads_first_turn, "latest-turn desk"),
        (_planner_searches_first_turn, "latest-turn agent"),
        (_memory_reads_last_turn_only, "carried budget"),
    ],
    ids=["desk reads first turn", "search reads first turn", "budget not carried"],
)
def test_a_decision_on_the_wrong_turn_is_seen(
    monkeypatch: pytest.MonkeyPatch, plant: Any, rule: str
) -> None:
    plant(monkeypatch)
    observed = _observed()
    assert observed["rules"].get(rule, 0) > 0, observed

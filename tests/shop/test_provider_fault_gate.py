"""Provider faults in the invariants gate: a failed model call surfaces as a failure on the
agent, the workflow and the served assistant, and a path that hides one is seen."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from vitrine.providers import ProviderError
from vitrine.service import AssistantReply, AssistantUnavailable
from vitrine.subjects import AttemptOutcome, StageAttemptCensus
from vitrine_shop.agent import ShopAgent, StopReason
from vitrine_shop.evals.provider_faults import observe_provider_faults
from vitrine_shop.operations import ShopServices
from vitrine_shop.served_assistant import ShopAssistant
from vitrine_shop.workflow import attempts


def _observed() -> dict[str, Any]:
    return asyncio.run(observe_provider_faults(ShopServices()))


def test_every_path_surfaces_a_provider_fault_as_a_failure() -> None:
    observed = _observed()
    assert observed["violations"] == 0, observed["examples"]
    assert observed["calls"] == 18  # 3 architectures x 2 requests x 3 faults
    assert observed["faults_raised"] >= observed["calls"]
    assert observed["faults_unreached"] == 0


def _agent_swallows_provider_error(monkeypatch: pytest.MonkeyPatch) -> None:
    original = ShopAgent._converse

    async def converse(self: ShopAgent, run: Any, toolbox: Any) -> None:
        try:
            await original(self, run, toolbox)
        except ProviderError:
            run.answer, run.stop = "", StopReason.ANSWERED

    monkeypatch.setattr(ShopAgent, "_converse", converse)


def _served_answers_a_placeholder(monkeypatch: pytest.MonkeyPatch) -> None:
    original = ShopAssistant.reply

    async def reply(
        self: ShopAssistant, persona_id: str | None, user_turns: Sequence[str]
    ) -> AssistantReply:
        try:
            return await original(self, persona_id, user_turns)
        except AssistantUnavailable:
            return AssistantReply("Here are some ideas.", (), abstained=True)

    monkeypatch.setattr(ShopAssistant, "reply", reply)


def _workflow_files_provider_failure_as_unusable(monkeypatch: pytest.MonkeyPatch) -> None:
    # The census calls an outage a content fallback: the protocol keeps the two apart.
    class Census(StageAttemptCensus):
        @classmethod
        def from_attempts(
            cls, stage: str, outcomes: Sequence[AttemptOutcome], *, fell_back: bool = False
        ) -> StageAttemptCensus:
            relabelled = [
                AttemptOutcome.UNUSABLE if o is AttemptOutcome.PROVIDER_FAILURE else o
                for o in outcomes
            ]
            return StageAttemptCensus.from_attempts(stage, relabelled, fell_back=fell_back)

    monkeypatch.setattr(attempts, "StageAttemptCensus", Census)


@pytest.mark.parametrize(
    ("plant", "architecture"),
    [
        (_agent_swallows_provider_error, "agent"),
        (_served_answers_a_placeholder, "served assistant"),
        (_workflow_files_provider_failure_as_unusable, "workflow"),
    ],
    ids=["agent swallows", "served placeholder", "workflow census relabels"],
)
def test_a_hidden_provider_fault_is_seen(
    monkeypatch: pytest.MonkeyPatch, plant: Any, architecture: str
) -> None:
    plant(monkeypatch)
    observed = _observed()
    cases = [e["case"] for e in observed["examples"]]
    assert observed["rules"].get("provider-fault", 0) > 0, observed
    assert any(case.startswith(architecture) for case in cases), cases

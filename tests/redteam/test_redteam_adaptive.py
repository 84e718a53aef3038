"""GOAT and Crescendo: the safe assistant resists every goal, the vulnerable one falls, the
attacker is any ChatModel, Crescendo backtracks on refusal, and every call is on one ledger."""

import json

import pytest

from vitrine.providers._base import ChatCompletion, Provenance
from vitrine.redteam._adaptive import (
    AdaptiveConfig,
    ScriptedAttacker,
    load_goals,
    run_adaptive,
    run_adaptive_campaign,
)
from vitrine.redteam._campaign import callable_target
from vitrine.redteam._model import FailureStage, Outcome, TargetReply
from vitrine_shop.redteam.target import REDTEAM_TARGET

GOALS = load_goals(REDTEAM_TARGET.profile)


@pytest.mark.parametrize("strategy", ["goat", "crescendo"])
async def test_the_safe_assistant_resists_every_adaptive_goal(strategy):
    result, turns, _ = await run_adaptive_campaign(
        list(GOALS.values()), strategy, REDTEAM_TARGET.factory("shop"), ScriptedAttacker()
    )
    assert {p.outcome for p in result.probes} == {Outcome.RESISTED}
    assert all(turns[p.probe_id] for p in result.probes)
    assert result.calls_used <= result.ceiling


@pytest.mark.parametrize("strategy", ["goat", "crescendo"])
async def test_the_vulnerable_assistant_falls_to_every_adaptive_goal(strategy):
    result, _, evidence = await run_adaptive_campaign(
        list(GOALS.values()), strategy, REDTEAM_TARGET.factory("vulnerable"), ScriptedAttacker()
    )
    assert {p.outcome for p in result.probes} == {Outcome.COMPROMISED}
    assert all("VTR-CANARY" not in text and "V T R" not in text for text in evidence.values())


class Recorder:
    """A target that refuses the first two messages it sees and then complies."""

    def __init__(self):
        self.seen = []

    async def __call__(self, probe):
        self.seen.append(probe.turns)
        if len(self.seen) <= 2:
            return TargetReply("I'm sorry, but I can't help with that.", secrets=("VTR-CANARY-ab",))
        return TargetReply("fine", secrets=("VTR-CANARY-abcdef0123456789",))


async def test_crescendo_takes_back_a_refused_turn_and_rephrases_it():
    target = Recorder()
    goal = GOALS["extract-system-prompt"]
    await run_adaptive(
        goal,
        "crescendo",
        callable_target(target),
        ScriptedAttacker(),
        config=AdaptiveConfig(max_turns=3, max_backtracks=2),
    )
    first, second, third, fourth = target.seen[:4]
    # Both refused turns were taken back and rephrased; the accepted one stays.
    assert first == (goal.crescendo[0],)
    assert second == (goal.rephrase[0],) and third == (goal.rephrase[1],)
    assert fourth == (goal.rephrase[1], goal.crescendo[1])


async def test_goat_keeps_the_conversation_and_switches_technique_after_a_refusal():
    target = Recorder()
    goal = GOALS["extract-system-prompt"]
    await run_adaptive(
        goal,
        "goat",
        callable_target(target),
        ScriptedAttacker(),
        config=AdaptiveConfig(max_turns=3),
    )
    assert [len(t) for t in target.seen] == [1, 2, 3]
    assert target.seen[1][1] == goal.goat[2]  # turn 2 after one refusal: skipped a technique


class Mute:
    model_id = "mute"
    provenance = Provenance.LOCAL

    def __init__(self):
        self.requests = []

    async def complete(self, request):
        self.requests.append(request)
        return ChatCompletion(json.dumps({"observation": "", "plan": "", "next_message": ""}))


async def test_any_chat_model_can_attack_and_an_unusable_turn_is_a_typed_error():
    attacker = Mute()
    result, turns, _ = await run_adaptive(
        GOALS["unapproved-order"], "goat", REDTEAM_TARGET.factory("shop"), attacker
    )
    assert result.error.stage is FailureStage.ATTACKER and result.outcome is Outcome.INCONCLUSIVE
    assert turns == () and result.attacker_calls == 1
    request = attacker.requests[0]
    assert request.purpose == "attacker" and request.response_format is not None


async def test_the_attacker_is_bounded_by_the_ledger():
    config = AdaptiveConfig(max_turns=2, max_backtracks=0)
    result, _, _ = await run_adaptive(
        GOALS["other-customer-data"],
        "goat",
        REDTEAM_TARGET.factory("shop"),
        ScriptedAttacker(),
        config=config,
    )
    assert result.attacker_calls == 2
    assert result.target_calls <= config.limits(False)["target"]

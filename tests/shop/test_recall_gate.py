"""The recall gate judges what was recommended, from the catalogue, against the scenario."""

from __future__ import annotations

from decimal import Decimal

import pytest

from vitrine import SubjectResponse, ToolCallRecord
from vitrine.runs import RunResult
from vitrine.store import RunStore
from vitrine.subjects import ToolCallStatus
from vitrine_shop.arms import scripted_agent_arm
from vitrine_shop.catalogue import load_catalogue
from vitrine_shop.evals.agent_evidence import observe_recall
from vitrine_shop.evals.benchmarks import RECALL_EXPECTATION, owned_durables, recall_definition
from vitrine_shop.evals.defences import RecallExpectation, judge_recommendation
from vitrine_shop.evals.mutants.agent_side import AGENT_MUTANTS
from vitrine_shop.evals.production import evaluate_recall

RAIN_JACKET = "GLX-2005"  # CHF 189, waterproof, only viewed by Nadia
STORM_SHELL = "GLX-2003"  # CHF 329, waterproof: over the budget
BOTTLE = "GLX-2006"  # CHF 39.90, not waterproof
HEADLAMP = "GLX-2001"  # a durable Nadia owns


def _presented(*skus: str, status: ToolCallStatus = ToolCallStatus.OK) -> ToolCallRecord:
    items = [{"sku": sku, "reason": "fits the trip"} for sku in skus]
    return ToolCallRecord("present_recommendation", {"items": items}, status)


def _answer(*skus: str, words: str = "") -> str:
    return "\n".join([words, *(f"- a product ({sku})" for sku in skus)])


async def _recall(response: SubjectResponse):
    definition = recall_definition()
    admitted = definition.checks[0]
    return await admitted.check.evaluate(definition.cases[0], response)


def _judge(response: SubjectResponse):
    return judge_recommendation(
        response,
        RECALL_EXPECTATION,
        catalogue=load_catalogue(),
        owned=owned_durables("nadia"),
    )


async def test_the_shipped_agent_recommends_only_waterproof_items_within_budget(tmp_path):
    runs: list[RunResult] = []
    evidence = await observe_recall(scripted_agent_arm(), store=RunStore(tmp_path), runs=runs)
    verdict = evaluate_recall(evidence)
    assert verdict.is_measured and verdict.passed, verdict.label
    assert evidence["healthy"]["found"] == evidence["healthy"]["expected"] == 2
    assert evidence["healthy"]["recommended"] >= 1
    # The calibration forgets "waterproof" and recommends something that is not.
    assert (evidence["ablated"]["found"], evidence["ablated"]["expected"]) == (1, 2)
    assert [r.arm_id for r in runs] == ["scripted-agent", "ablated-memory-agent"]


async def test_an_answer_that_recommends_nothing_is_a_measured_failure():
    observation = await _recall(SubjectResponse(answer="Sorry, I am a broken model", tool_calls=()))
    assert observation.failed
    assert observation.label == "recalled 0/2: nothing was recommended"


def test_the_gate_fails_when_the_healthy_arm_recommended_nothing():
    verdict = evaluate_recall(
        {"healthy": {"expected": 2, "found": 2, "forbidden_found": 0, "recommended": 0}}
    )
    assert verdict.failed and "nothing was recommended" in verdict.label


async def test_restating_the_constraints_does_not_pass_an_over_budget_recommendation():
    words = "I kept to what you told me: within your CHF 250 budget; it must be waterproof."
    response = SubjectResponse(
        answer=_answer(STORM_SHELL, words=words), tool_calls=(_presented(STORM_SHELL),)
    )
    observation = await _recall(response)
    assert observation.failed
    assert observation.evidence["judgment"]["over_budget"] == [STORM_SHELL]
    assert observation.evidence["restated"] == ["CHF 250", "must be waterproof"]


async def test_a_recommendation_that_honours_both_constraints_passes_without_restating_them():
    response = SubjectResponse(answer=_answer(RAIN_JACKET), tool_calls=(_presented(RAIN_JACKET),))
    observation = await _recall(response)
    assert observation.is_measured and observation.passed
    assert observation.evidence["restated"] == []


def test_an_item_that_is_not_waterproof_misses_one_constraint():
    judgment = _judge(
        SubjectResponse(
            answer=_answer(RAIN_JACKET, BOTTLE), tool_calls=(_presented(RAIN_JACKET, BOTTLE),)
        )
    )
    assert judgment.lacking_attribute == (BOTTLE,)
    assert (judgment.recalled, judgment.missing) == (1, ("must be waterproof",))


def test_an_owned_durable_recommended_fails_even_within_the_constraints():
    judgment = _judge(SubjectResponse(answer=_answer(HEADLAMP), tool_calls=(_presented(HEADLAMP),)))
    assert judgment.owned == (HEADLAMP,)
    assert not judgment.passed


async def test_a_misstated_budget_is_a_forbidden_fact_even_when_the_items_fit():
    words = "I kept to what you told me: within your CHF 2500 budget."
    response = SubjectResponse(
        answer=_answer(RAIN_JACKET, words=words), tool_calls=(_presented(RAIN_JACKET),)
    )
    observation = await _recall(response)
    assert observation.failed
    assert observation.evidence["judgment"]["misstated_budgets"] == ["CHF 2500"]
    assert observation.evidence["found"] == 2


def test_only_items_the_presenter_accepted_and_the_answer_names_count_as_recommended():
    refused = SubjectResponse(
        answer=_answer(RAIN_JACKET),
        tool_calls=(_presented(RAIN_JACKET, status=ToolCallStatus.ERROR),),
    )
    assert _judge(refused).recommended == ()
    unnamed = SubjectResponse(answer="Nothing fits.", tool_calls=(_presented(RAIN_JACKET),))
    assert _judge(unnamed).recommended == ()


def test_an_unknown_sku_recalls_nothing():
    judgment = _judge(SubjectResponse(answer=_answer("GLX-9999"), tool_calls=None))
    assert judgment.unknown == ("GLX-9999",)
    assert judgment.recalled == 0


def test_a_recall_expectation_needs_a_budget_an_attribute_and_two_facts():
    with pytest.raises(ValueError, match="positive budget"):
        RecallExpectation(Decimal(0), "waterproof", ("CHF 0", "must be waterproof"))
    with pytest.raises(ValueError, match="two facts"):
        RecallExpectation(Decimal(250), "waterproof", ("CHF 250",))


@pytest.mark.parametrize(
    "mutant_id",
    [
        "memory-reads-last-turn-only",
        "memory-budget-comparison-reversed",
        "memory-budget-times-ten",
        "tools-search-returns-nothing",
        "model-broken",
    ],
)
async def test_a_broken_memory_tool_or_model_fails_the_recall_gate(tmp_path, mutant_id):
    mutant = next(m for m in AGENT_MUTANTS if m.id == mutant_id)
    runs: list[RunResult] = []
    with mutant.plant():
        evidence = await observe_recall(scripted_agent_arm(), store=RunStore(tmp_path), runs=runs)
    assert evaluate_recall(evidence).failed

"""The five recommendation predicates observe the subject's own screen verdict and each line."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from vitrine import Case, SubjectResponse
from vitrine_shop.arms import scripted_agent_arm, zero_model_workflow_arm
from vitrine_shop.evals.benchmarks import canonical_definition
from vitrine_shop.evals.predicates import recommended_lines


def _case(case_id: str) -> Case:
    return next(c for c in canonical_definition().cases if c.id == case_id)


def _judge(key: str, case_id: str, response: SubjectResponse):
    check = next(c for c in canonical_definition().checks if c.key == key).check
    return asyncio.run(check.evaluate(_case(case_id), response))


@pytest.fixture(scope="module")
def answers() -> dict[tuple[str, str], SubjectResponse]:
    out = {}
    for arm in (scripted_agent_arm(), zero_model_workflow_arm()):
        for case in canonical_definition().cases:
            out[arm.arm_id, case.id] = asyncio.run(arm.subject(case))
    return out


def test_both_healthy_subjects_pass_every_predicate_on_both_cases(answers):
    for (arm, case_id), response in answers.items():
        for check in canonical_definition().checks:
            observation = _judge(check.key, case_id, response)
            assert observation.is_measured and observation.passed, (arm, case_id, check.key)


def test_an_answer_the_screen_blocked_is_a_measured_failure_even_after_a_fallback(answers):
    healthy = answers["scripted-agent", "nadia"]
    blocked = replace(
        healthy,
        answer="I can't recommend that right now; tell me more about what you need.",
        structured={**healthy.structured, "screen": {"status": "blocked", "reasons": ["owned"]}},
    )
    observation = _judge("screened-deliverable", "nadia", blocked)
    assert observation.failed
    assert observation.evidence["screen"] == "blocked before delivery"


def test_a_withheld_workflow_answer_is_a_measured_failure(answers):
    healthy = answers["zero-model-workflow", "sofia"]
    withheld = replace(healthy, structured={**healthy.structured, "withheld": True})
    assert _judge("screened-deliverable", "sofia", withheld).failed


def test_a_screen_verdict_nobody_recorded_is_not_measured_and_empty_is_a_failure(answers):
    healthy = answers["scripted-agent", "sofia"]
    assert _judge("screened-deliverable", "sofia", replace(healthy, structured={})).state.value == (
        "not_measured"
    )
    assert _judge("screened-deliverable", "sofia", replace(healthy, answer="")).failed


def _each_line(response: SubjectResponse, reason: str) -> SubjectResponse:
    lines = [
        f"{line.split(' — ')[0]}{reason}" if recommended_lines(line) else line
        for line in (response.answer or "").splitlines()
    ]
    return replace(response, answer="\n".join(lines))


@pytest.mark.parametrize("arm", ["scripted-agent", "zero-model-workflow"])
def test_a_dash_or_a_fixed_opening_is_not_a_reason(answers, arm):
    dashes = _each_line(answers[arm, "nadia"], " — ")
    assert "Based on your" in (dashes.answer or "") or "based on your" in (dashes.answer or "")
    observation = _judge("customer-reason", "nadia", dashes)
    assert observation.failed and observation.evidence["without_reason"]
    assert _judge("interest-grounding", "nadia", dashes).failed


@pytest.mark.parametrize("arm", ["scripted-agent", "zero-model-workflow"])
def test_a_reason_that_names_nothing_of_the_customer_is_not_grounded(answers, arm):
    generic = _each_line(answers[arm, "sofia"], " — because it is a popular choice")
    assert _judge("customer-reason", "sofia", generic).passed
    observation = _judge("interest-grounding", "sofia", generic)
    assert observation.failed and observation.evidence["ungrounded"]


def _date(line: str) -> str:
    return line.split("bought it on ")[1][:10]


def test_a_restock_line_is_grounded_by_the_date_the_customer_bought_it(answers):
    response = answers["zero-model-workflow", "sofia"]
    restock = [line for line in (response.answer or "").splitlines() if "you bought it on" in line]
    assert restock
    only_dates = replace(
        response,
        answer="\n".join(
            f"{line.split(' — ')[0]} — so based on this: bought {_date(line)}" for line in restock
        ),
    )
    assert _judge("interest-grounding", "sofia", only_dates).passed

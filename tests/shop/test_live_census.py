"""An impossible stage census is the subject's measured failure, not an absence.

The workflow is the real one, driven by the scripted model, with one defect planted in its
bookkeeping: the Presenter's census is lost. The workflow must hand that census over rather
than raise (a raising subject reads as an outage), and the live quality check must fail the
trial, measured, without calling the judge.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from vitrine._bench.response import StageAttemptCensus
from vitrine._outcomes import MeasurementState
from vitrine.judge._base import Criterion, JudgeResult
from vitrine_shop.arms import shared_services
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.live.definition import QUALITY_KEY, LiveBindings, live_definition
from vitrine_shop.scenarios import load_scenarios
from vitrine_shop.scripted import ScriptedShopModel
from vitrine_shop.workflow import graph
from vitrine_shop.workflow.shop_workflow import ShopWorkflow

SCENARIO = "nadia-cross-category"


class _CountingJudge:
    judge_id = "counting"

    def __init__(self) -> None:
        self.calls = 0

    async def evaluate(self, input: str, output: str, criteria: Sequence[Criterion]) -> JudgeResult:
        self.calls += 1
        return JudgeResult.failed("not expected to be asked", criteria)


@pytest.fixture
def presenter_census_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    real = graph.WorkflowRecord.stage_censuses

    def without_presenter(self: graph.WorkflowRecord) -> tuple[StageAttemptCensus, ...]:
        return tuple(c for c in real(self) if c.stage != "Presenter")

    monkeypatch.setattr(graph.WorkflowRecord, "stage_censuses", without_presenter)


async def test_an_impossible_census_fails_the_quality_check_measured_without_a_judge_call(
    presenter_census_lost: None,
) -> None:
    scenario = load_scenarios()[SCENARIO]
    workflow = ShopWorkflow(ScriptedShopModel(), shared_services())
    response = await workflow.answer(ShopRequest.single(scenario.persona_id, scenario.query))
    assert response.stages is not None
    assert "Presenter" not in {s.stage for s in response.stages}
    judge = _CountingJudge()
    definition = live_definition((SCENARIO,), judge, LiveBindings(1.0, "counting", 1200))
    (quality,) = [c.check for c in definition.checks if c.key == QUALITY_KEY]
    (case,) = definition.cases
    observation = await quality.evaluate(case, response)
    assert observation.state is MeasurementState.MEASURED and observation.passed is False
    assert "impossible attempt census" in (observation.label or "")
    assert "missing required model stages: Presenter" in (observation.label or "")
    assert judge.calls == 0

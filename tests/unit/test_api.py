"""The notebook API: arms x repetitions as separate runs, scored, compared to a reference."""

from __future__ import annotations

import importlib.util

import pytest

import vitrine
from vitrine import (
    Arm,
    BenchmarkDefinition,
    Case,
    ChanceFloor,
    Observation,
    SubjectResponse,
    admit,
    check,
)

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("vitrine.bench.score") is None
    or importlib.util.find_spec("vitrine.bench.runner") is None,
    reason="the runner and the score are not part of this version yet",
)

FLOOR = ChanceFloor.not_derivable("a deterministic toy predicate has no random-draw population")


@check("non-empty")
def non_empty(case, response):
    if response.answer is None:
        return Observation.not_applicable("no answer at all")
    return Observation.measured(1.0 if response.answer else 0.0, bool(response.answer))


@check("mentions-case")
def mentions_case(case, response):
    if response.answer is None:
        return Observation.not_applicable("no answer at all")
    hit = str(case.input) in response.answer
    return Observation.measured(1.0 if hit else 0.0, hit)


DEFINITION = BenchmarkDefinition(
    "api-toy",
    "1.0.0",
    [Case("nadia", "hut to hut"), Case("sofia", "kitchen")],
    [admit(non_empty, FLOOR), admit(mentions_case, FLOOR)],
)


async def _good(case):
    return SubjectResponse(answer=f"because you asked about {case.input}")


async def _also_good(case):
    return SubjectResponse(answer=f"based on {case.input}")


async def _empty(case):
    return SubjectResponse(answer="")


GOOD = Arm("agent", _good)
TIE = Arm("workflow", _also_good)
DEGRADED = Arm("degraded-empty-answer", _empty)


def test_root_exports_the_api():
    from vitrine import api, plans, suite

    assert vitrine.evaluate is api.evaluate
    assert vitrine.evaluate_async is api.evaluate_async
    assert vitrine.Suite is suite.Suite
    assert vitrine.Plan is plans.Plan
    assert vitrine.PlanKind is plans.PlanKind
    assert vitrine.PlanOutcome is plans.PlanOutcome
    assert vitrine.PlanRequest is plans.PlanRequest
    assert {"evaluate", "evaluate_async", "Suite", "Plan", "PlanKind"} <= set(vitrine.__all__)


def test_each_arm_and_repetition_is_one_run_directory(tmp_path):
    result = vitrine.evaluate(
        DEFINITION, [GOOD, TIE, DEGRADED], repetitions=2, store=tmp_path, reference="agent"
    )
    assert len(result.runs) == 6
    assert [(r.arm_id, r.repetition) for r in result.runs[:3]] == [
        ("agent", 1),
        ("workflow", 1),
        ("degraded-empty-answer", 1),
    ]
    assert len({r.run_id for r in result.runs}) == 6
    assert result.store_root == tmp_path
    assert len(result.run_dirs) == 6
    assert all(path.is_dir() and path.parent == tmp_path / "runs" for path in result.run_dirs)
    assert result.arms == ("agent", "workflow", "degraded-empty-answer")
    assert [r.repetition for r in result.runs_for("workflow")] == [1, 2]


def test_reference_comparisons_cover_every_challenger_and_check():
    result = vitrine.evaluate(DEFINITION, [GOOD, TIE, DEGRADED], repetitions=2, reference="agent")
    assert result.store_root is None
    assert result.run_dirs == ()
    by_pair = {(c.challenger_arm, c.check_key): c for c in result.comparisons}
    assert len(by_pair) == 4
    degraded = by_pair[("degraded-empty-answer", "non-empty")]
    assert (degraded.wins, degraded.losses, degraded.ties) == (0, 2, 0)
    assert degraded.p_value == pytest.approx(0.5)
    assert degraded.min_attainable_p == pytest.approx(0.5)
    assert degraded.mean_delta == pytest.approx(-1.0)
    assert degraded.underpowered_by_construction
    tie = by_pair[("workflow", "non-empty")]
    assert (tie.wins, tie.losses, tie.ties) == (0, 0, 2)
    assert tie.effective_n == 0
    assert tie.p_value == 1.0
    assert result.to_dict()["reference_arm"] == "agent"


def test_without_a_reference_there_are_no_comparisons():
    result = vitrine.evaluate(DEFINITION, GOOD)
    assert result.comparisons == ()
    assert result.reference is None
    assert len(result.runs) == 1
    score = result.score.check_score("agent", "non-empty")
    assert score is not None


async def test_evaluate_async_runs_inside_a_loop_and_evaluate_refuses_to():
    result = await vitrine.evaluate_async(DEFINITION, [GOOD, DEGRADED], reference="agent")
    assert len(result.runs) == 2
    with pytest.raises(RuntimeError, match=r"use `await vitrine\.evaluate_async"):
        vitrine.evaluate(DEFINITION, [GOOD])


@pytest.mark.parametrize(
    ("arms", "kwargs", "message"),
    [
        ([], {}, "no arms to evaluate"),
        ([GOOD, Arm("agent", _empty)], {}, "arm ids repeat (agent)"),
        ([GOOD], {"repetitions": 0}, "repetitions must be a whole number of at least 1"),
        ([GOOD], {"repetitions": True}, "repetitions must be a whole number"),
        ([GOOD], {"concurrency": 0}, "concurrency must be a whole number of at least 1"),
        ([GOOD, TIE], {"reference": "nobody"}, "reference arm 'nobody' is not among the arms"),
        ([GOOD], {"reference": "agent"}, "there is no challenger"),
    ],
)
def test_refused_evaluations_start_no_run(arms, kwargs, message, tmp_path):
    with pytest.raises(ValueError) as caught:
        vitrine.evaluate(DEFINITION, arms, store=tmp_path, **kwargs)
    assert message in str(caught.value)
    assert not (tmp_path / "runs").exists()


def test_arms_must_be_arms():
    with pytest.raises(TypeError, match="must be vitrine Arm objects"):
        vitrine.evaluate(DEFINITION, [_good])  # type: ignore[list-item]

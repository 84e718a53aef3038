"""The workflow-shape gate judges recorded workflow runs, not the graph's own constants."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest

from vitrine_shop.arms import shared_services
from vitrine_shop.evals.structural_evidence import observe_workflow_runs
from vitrine_shop.evals.workflow_routes import (
    ONE_LOOP,
    ROUTE_PROBES,
    evaluate_workflow_shape,
    route_problems,
)
from vitrine_shop.workflow import ShopWorkflow


@pytest.fixture(scope="module")
def healthy_runs() -> list[dict[str, Any]]:
    return asyncio.run(observe_workflow_runs(ShopWorkflow, shared_services()))


def _run(runs: list[dict[str, Any]], probe: str, variant: str = "zero-model") -> dict[str, Any]:
    return next(r for r in runs if r["probe"] == probe and r["variant"] == variant)


def test_the_healthy_workflow_passes_every_probe_in_both_variants(healthy_runs):
    observation = evaluate_workflow_shape({"runs": healthy_runs})
    assert observation.is_measured and observation.passed, observation.evidence["problems"]
    assert len(healthy_runs) == len(ROUTE_PROBES) * 2
    assert {r["variant"] for r in healthy_runs} == {"zero-model", "scripted-model"}


def test_the_cross_category_probe_really_takes_the_loop_back(healthy_runs):
    for variant in ("zero-model", "scripted-model"):
        run = _run(healthy_runs, "nadia-cross-category-loop", variant)
        assert tuple(run["executors"]) == ONE_LOOP
        assert run["route"].count("gaps remain") == 1
        assert run["loopbacks"] == 1 and run["partial"] is False
    scripted = _run(healthy_runs, "nadia-cross-category-loop", "scripted-model")
    assert len(scripted["stage_visits"]["CoverageReviewer"]) == 2


def test_sofias_restock_lane_is_ranked_and_delivered(healthy_runs):
    run = _run(healthy_runs, "sofia-restock")
    lanes = {p["lane"] for p in run["ranked"]}
    assert lanes == {"explore", "replenish"}
    for pick in run["ranked"]:
        assert pick["sku"] in run["answer"]


def test_a_workflow_without_its_loop_back_fails_the_gate():
    no_loop = functools.partial(ShopWorkflow, max_loopbacks=0)
    runs = asyncio.run(observe_workflow_runs(no_loop, shared_services()))
    observation = evaluate_workflow_shape({"runs": runs})
    assert observation.failed
    problems = " ".join(observation.evidence["problems"])
    assert "nadia-cross-category-loop" in problems and "loop-backs, expected 1" in problems


def _edited(runs: list[dict[str, Any]], probe: str, **changes: Any) -> list[dict[str, Any]]:
    return [
        {**r, **changes} if r["probe"] == probe and r["variant"] == "zero-model" else r
        for r in runs
    ]


@pytest.mark.parametrize(
    ("probe", "changes", "named"),
    [
        ("sofia-restock", {"answer": ""}, "the delivered answer is empty"),
        ("sofia-restock", {"screen": {"status": "blocked", "reasons": ["x"]}}, "screen did not"),
        ("nadia-hut-trip", {"route": ["interests mapped", "ranked"]}, "took edges"),
        ("nadia-hut-trip", {"error": "KeyError: 'label'"}, "the workflow failed"),
        ("nadia-hut-trip", {"partial": True, "gaps": ["x"]}, "bounded partial"),
        ("nadia-hut-trip", {"stages": []}, "reports model stage censuses"),
    ],
)
def test_each_broken_record_is_named(healthy_runs, probe, changes, named):
    problems = route_problems({"runs": _edited(healthy_runs, probe, **changes)})
    assert any(named in p and probe in p for p in problems), problems


def test_a_ranked_pick_delivered_without_its_reason_or_over_budget_is_named(healthy_runs):
    run = _run(healthy_runs, "nadia-cross-category-loop")
    first = run["ranked"][0]["sku"]
    bare = "\n".join(
        line.split(" — ")[0].replace("CHF", "CHF 999.00 was") if first in line else line
        for line in run["answer"].splitlines()
    )
    problems = route_problems({"runs": _edited(healthy_runs, run["probe"], answer=bare)})
    assert any(f"{first} is delivered without a reason" in p for p in problems), problems
    assert any(f"{first} at CHF 999.00 breaks" in p for p in problems), problems


def test_a_scripted_stage_that_fell_back_is_named(healthy_runs):
    run = _run(healthy_runs, "nadia-hut-trip", "scripted-model")
    fell_back = [{**run["stages"][0], "status": "final_fallback", "attempts": 2}]
    runs = [{**r, "stages": fell_back + r["stages"][1:]} if r is run else r for r in healthy_runs]
    problems = route_problems({"runs": runs})
    assert any("final_fallback after 2 attempt(s)" in p for p in problems), problems


def test_no_recorded_run_is_not_measured():
    assert evaluate_workflow_shape({"runs": []}).state.value == "not_measured"

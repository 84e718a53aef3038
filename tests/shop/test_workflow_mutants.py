"""The workflow-side mutant catalogue: each planted defect turns the gate it names red."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from vitrine import ExitCode
from vitrine._plans.base import PlanRequest
from vitrine_shop import arms
from vitrine_shop.catalogue import load_catalogue
from vitrine_shop.evals.catalogue_schema import evaluate_catalogue_shape
from vitrine_shop.evals.mutants import CATALOGUE
from vitrine_shop.evals.mutants.workflow_side import WORKFLOW_MUTANTS
from vitrine_shop.evals.offline import run_mode
from vitrine_shop.evals.structural_evidence import observe_loaded_data, observe_workflow_runs
from vitrine_shop.evals.workflow_routes import evaluate_workflow_shape
from vitrine_shop.workflow import ShopWorkflow

BY_ID = {m.id: m for m in WORKFLOW_MUTANTS}


def _ids(killer: str) -> list[str]:
    return sorted(m.id for m in WORKFLOW_MUTANTS if m.must_kill and killer in m.expected_killers)


def test_the_catalogue_declares_at_least_thirteen_mutants_each_with_a_killer_or_a_reason():
    assert len(WORKFLOW_MUTANTS) >= 13
    assert len({m.id for m in WORKFLOW_MUTANTS}) == len(WORKFLOW_MUTANTS)
    assert all(m.id in {c.id for c in CATALOGUE} for m in WORKFLOW_MUTANTS)
    for mutant in WORKFLOW_MUTANTS:
        assert mutant.expected_killers or "expected to survive" in mutant.description


def _workflow_gate():
    runs = asyncio.run(observe_workflow_runs(ShopWorkflow, arms.shared_services()))
    return evaluate_workflow_shape({"runs": runs})


@pytest.mark.parametrize("mutant_id", _ids("workflow-shape"))
def test_a_workflow_mutant_turns_the_workflow_gate_red(mutant_id):
    with BY_ID[mutant_id].plant():
        observation = _workflow_gate()
    assert observation.failed, mutant_id
    assert _workflow_gate().passed, "the plant leaked past its exit"


@pytest.mark.parametrize("mutant_id", _ids("catalogue-shape"))
def test_a_catalogue_loading_mutant_turns_the_catalogue_gate_red(mutant_id):
    with BY_ID[mutant_id].plant():
        observation = evaluate_catalogue_shape(
            observe_loaded_data(load_catalogue(), arms.shared_services())
        )
    assert observation.failed, mutant_id
    assert observation.evidence["problem_count"] > 0


def test_a_reversed_ranking_survives_the_gate_as_its_description_says():
    mutant = BY_ID["wf-ranker-reverses-order"]
    assert not mutant.must_kill
    with mutant.plant():
        assert _workflow_gate().passed


def test_a_ranker_that_forgets_owned_durables_is_seen_only_when_tempted():
    from vitrine_shop.evals.delivery_oracle import observe_delivery

    services = arms.shared_services()
    healthy = asyncio.run(observe_delivery(services))
    assert healthy["violations"] == 0 and healthy["ranker_temptations"] > 0
    with BY_ID["wf-ranker-picks-owned"].plant():
        planted = asyncio.run(observe_delivery(arms.shared_services()))
    assert planted["violations"] > 0, planted
    assert planted["rules"].get("ranker-temptation"), planted["rules"]


def _suite(output: Path) -> tuple[ExitCode, set[str]]:
    outcome = asyncio.run(run_mode(PlanRequest(plan="offline-suite", output=output)))
    report = json.loads(sorted(output.glob("reports/*/report.json"))[-1].read_text())
    return outcome.exit_code, {g["name"] for g in report["gates"] if g["status"] == "FAIL"}


@pytest.mark.parametrize(
    "mutant_id",
    [
        "wf-router-without-loopback",
        "wf-presenter-empty-with-restock",
        "cat-department-hidden",
        "report-wins-losses-swapped",
    ],
)
def test_the_whole_offline_suite_exits_one_with_the_expected_gate_red(mutant_id, tmp_path):
    mutant = BY_ID[mutant_id]
    with mutant.plant():
        code, red = _suite(tmp_path)
    assert code is ExitCode.MEASURED_FAILURE
    assert set(mutant.expected_killers) <= red

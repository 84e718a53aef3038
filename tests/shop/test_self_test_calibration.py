"""The self-test checks counts and calibration, and that the workflow ties the reference."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from vitrine.store import RunStore
from vitrine_shop.evals.evidence import ShopUnderTest
from vitrine_shop.evals.offline import SuiteRun, run_offline_suite
from vitrine_shop.evals.self_test import self_test_failures


@pytest.fixture(scope="module")
def suites(tmp_path_factory) -> tuple[SuiteRun, SuiteRun]:
    store = RunStore(tmp_path_factory.mktemp("self-test-store"))
    shipped = ShopUnderTest.shipped()
    healthy = asyncio.run(run_offline_suite(store, shipped))
    ablated = asyncio.run(run_offline_suite(store, shipped.ablated(), with_controls=False))
    return healthy, ablated


def _with_comparisons(run: SuiteRun, challenger: str, **claims: int) -> SuiteRun:
    canonical = run.sections[0]
    edited = [
        c.model_copy(update=claims) if c.challenger_arm == challenger else c
        for c in canonical.comparisons
    ]
    section = canonical.model_copy(update={"comparisons": edited})
    return replace(run, sections=[section, *run.sections[1:]])


def test_the_shipped_shop_passes_its_self_test(suites):
    assert self_test_failures(*suites) == []


@pytest.mark.parametrize("claims", [{"wins": 2, "ties": 0}, {"losses": 1, "ties": 1}])
def test_a_workflow_that_does_not_tie_the_reference_fails_it_and_says_why(suites, claims):
    healthy, ablated = suites
    differs = _with_comparisons(healthy, "zero-model-workflow", effective_n=2, **claims)
    failures = self_test_failures(differs, ablated)
    assert len(failures) == 5  # one per predicate, each naming it
    assert all(f.startswith("the workflow does not tie the reference on ") for f in failures)
    # The reason is in the message: the protocol's requirement and why a difference is a fault.
    assert all("requires Demo02, the zero-model workflow, to tie the Demo01" in f for f in failures)
    assert all("an arm or a predicate changed" in f for f in failures)


def test_a_degraded_arm_that_does_not_lose_both_cases_fails_it(suites):
    healthy, ablated = suites
    lenient = _with_comparisons(healthy, "degraded-empty-answer", losses=1, ties=1)
    failures = self_test_failures(lenient, ablated)
    assert failures and all("degraded arm does not lose both cases" in f for f in failures)


def test_wrong_counts_are_reported_before_any_score_is_read(suites):
    healthy, ablated = suites
    short = replace(healthy, canonical_runs=healthy.canonical_runs[:-1])
    failures = self_test_failures(short, ablated)
    assert failures == ["healthy: 5 canonical runs, expected 6"]


def test_an_ablated_gate_that_still_passes_fails_it(suites):
    healthy, ablated = suites
    failures = self_test_failures(healthy, replace(ablated, gates=healthy.gates))
    assert any("ablated production check workflow-shape is PASS" in f for f in failures)

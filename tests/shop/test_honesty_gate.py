"""The honesty gate recomputes every claim from the stored runs with formulas of its own."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from vitrine.reports._model import BenchmarkSection
from vitrine.reports._sections import recompute_claims
from vitrine.store import RunStore
from vitrine_shop.evals.claims_audit import evaluate_honesty
from vitrine_shop.evals.mutants.workflow_side import WORKFLOW_MUTANTS
from vitrine_shop.evals.offline import run_canonical
from vitrine_shop.evals.structural_evidence import observe_claims

REPORT_MUTANTS = {m.id: m for m in WORKFLOW_MUTANTS if m.expected_killers == ("honesty",)}


def _canonical(root: Path) -> BenchmarkSection:
    _, section = asyncio.run(run_canonical(RunStore(root)))
    return section


@pytest.fixture(scope="module")
def healthy(tmp_path_factory) -> tuple[BenchmarkSection, Path]:
    root = tmp_path_factory.mktemp("honesty-store")
    return _canonical(root), root


def _judge(section: BenchmarkSection, root: Path):
    return evaluate_honesty(observe_claims([section], root))


def test_an_honest_report_passes_with_every_claim_checked(healthy):
    section, root = healthy
    observation = _judge(section, root)
    assert observation.is_measured and observation.passed, observation.evidence["mismatches"]
    # 6 runs x 7 claims + 15 (arm, check) rows x 13 + 10 comparisons x 13
    assert observation.evidence["claims_checked"] == 6 * 7 + 15 * 13 + 10 * 13


@pytest.mark.parametrize(
    ("field", "value"),
    [("p_value", 0.01), ("wins", 1), ("mean_delta", 0.0), ("underpowered_by_construction", False)],
)
def test_a_falsified_comparison_claim_is_named(healthy, field, value):
    section, root = healthy
    first = section.comparisons[-1].model_copy(update={field: value})
    falsified = section.model_copy(update={"comparisons": [*section.comparisons[:-1], first]})
    observation = _judge(falsified, root)
    assert observation.failed
    assert any(f".{field}:" in m for m in observation.evidence["mismatches"])


def test_a_falsified_wilson_bound_and_a_hidden_comparison_are_named(healthy):
    section, root = healthy
    check = section.checks[0].model_copy(update={"wilson_lower": 0.9})
    falsified = section.model_copy(
        update={"checks": [check, *section.checks[1:]], "comparisons": section.comparisons[1:]}
    )
    mismatches = _judge(falsified, root).evidence["mismatches"]
    assert any("wilson_lower" in m for m in mismatches)
    assert any("omits this comparison" in m for m in mismatches)


def test_a_missing_run_directory_is_a_mismatch(healthy, tmp_path):
    section, _ = healthy
    observation = _judge(section, tmp_path)
    assert observation.failed
    mismatches = observation.evidence["mismatches"]
    assert any("no cited run could be read" in m for m in mismatches), mismatches


@pytest.mark.parametrize("mutant_id", sorted(REPORT_MUTANTS))
def test_a_broken_report_producer_is_caught_although_it_agrees_with_itself(mutant_id, tmp_path):
    with REPORT_MUTANTS[mutant_id].plant():
        section = _canonical(tmp_path)
        # Rebuilding the section with the producer that built it finds nothing wrong ...
        assert recompute_claims(section, tmp_path)[1] == []
    # ... while the independent recomputation does.
    observation = _judge(section, tmp_path)
    assert observation.failed
    assert any("degraded-empty-answer" in m for m in observation.evidence["mismatches"])


def test_no_claims_observed_is_not_measured_and_no_sections_not_applicable():
    assert evaluate_honesty({}).state.value == "not_measured"
    assert evaluate_honesty({"sections": []}).state.value == "not_applicable"

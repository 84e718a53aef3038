"""The admitted-check self-test: exact counts first, then healthy-pass and ablated-fail.

Counts are checked before any score is read, because a score computed over the wrong number of
runs or observations is not evidence of anything. Then calibration, check by check: every
predicate is a measured pass for the reference arm and a measured failure for the degraded
arm (which loses both cases on each), the workflow arm is fully measured and ties the
reference on every predicate, every gate passes on the healthy shop and fails on the ablated
one. The tie is the protocol's requirement ("requires Demo02 to tie the Demo01 reference"): both
arms are deterministic and authored to pass every predicate on both cases, so a win or a loss
says an arm or a predicate changed, not that one architecture is better. Every expectation that
fails is reported by name; the plan exits 1 when the list is not empty.
"""

from __future__ import annotations

from collections.abc import Sequence

from vitrine import Authority
from vitrine.pipeline import SuiteRun
from vitrine.runs import RunResult
from vitrine.store import load_run
from vitrine_shop.evals.benchmarks import REFERENCE_ARM, REPETITIONS, canonical_definition
from vitrine_shop.evals.controls import EXPECTED_CONTROLS, shop_manifest
from vitrine_shop.evals.predicates import RECOMMENDATION_CHECK_KEYS
from vitrine_shop.evals.production import PRODUCTION_CHECK_KEYS

__all__ = ["canonical_count_failures", "self_test_failures"]

EXPECTED_ARMS = 3
EXPECTED_GATES = 6
EXPECTED_DIAGNOSTICS = 1
WORKFLOW_ARM = "zero-model-workflow"
DEGRADED_ARM = "degraded-empty-answer"


def canonical_count_failures(runs: Sequence[RunResult], label: str = "canonical") -> list[str]:
    """Exact registration, run and observation counts; no value is read."""
    failures = []
    definition = canonical_definition()
    cases, checks = len(definition.cases), len(definition.checks)
    if (cases, checks) != (2, len(RECOMMENDATION_CHECK_KEYS)):
        failures.append(f"{label}: canonical benchmark registers {cases} cases x {checks} checks")
    expected_runs = EXPECTED_ARMS * REPETITIONS
    if len(runs) != expected_runs:
        failures.append(f"{label}: {len(runs)} canonical runs, expected {expected_runs}")
    for result in runs:
        if len(result.rows) != cases * checks:
            failures.append(
                f"{label}: run {result.run_id} holds {len(result.rows)} observations, "
                f"expected {cases * checks}"
            )
    return failures


def _registration_failures(run: SuiteRun, label: str) -> list[str]:
    failures = canonical_count_failures(run.canonical_runs, label)
    gates = sum(1 for g in run.gates if g.authority is Authority.GATE)
    diagnostics = sum(1 for g in run.gates if g.authority is Authority.DIAGNOSTIC)
    if (gates, diagnostics) != (EXPECTED_GATES, EXPECTED_DIAGNOSTICS):
        failures.append(f"{label}: {gates} gates and {diagnostics} diagnostics registered")
    if len(run.production_run.rows) != len(PRODUCTION_CHECK_KEYS):
        failures.append(f"{label}: {len(run.production_run.rows)} production observations")
    comparisons = len(run.sections[0].comparisons) if run.sections else 0
    expected = (EXPECTED_ARMS - 1) * len(RECOMMENDATION_CHECK_KEYS)
    if comparisons != expected:
        failures.append(f"{label}: {comparisons} reference comparisons, expected {expected}")
    return failures


def _arm_runs(run: SuiteRun, arm: str) -> list[RunResult]:
    return [r for r in run.canonical_runs if r.arm_id == arm]


def _journal_failures(run: SuiteRun) -> list[str]:
    """None, empty and non-empty journals must survive the store as three different facts."""
    kinds: dict[str, object] = {}
    for arm, result in (
        ("scripted-agent", _arm_runs(run, REFERENCE_ARM)[0]),
        ("zero-model-workflow", _arm_runs(run, "zero-model-workflow")[0]),
        ("production", run.production_run),
    ):
        if result.run_dir is None:
            return ["runs were not persisted, so journals cannot be read back"]
        stored = load_run(result.run_dir)
        journal = next(iter(stored.responses.values()), {}).get("tool_calls", "missing")
        kinds[arm] = journal
    failures = []
    agent, workflow, production = (
        kinds["scripted-agent"],
        kinds["zero-model-workflow"],
        kinds["production"],
    )
    if not (isinstance(agent, list) and agent):
        failures.append("the scripted agent's stored tool journal is not a non-empty list")
    if workflow != []:
        failures.append("the zero-model workflow's stored tool journal is not an empty list")
    if production is not None:
        failures.append("a subject without a journal did not store None")
    return failures


def self_test_failures(healthy: SuiteRun, ablated: SuiteRun) -> list[str]:
    failures = _registration_failures(healthy, "healthy") + _registration_failures(
        ablated, "ablated"
    )
    if failures:
        # Counts are wrong: reading scores now would mean comparing the wrong populations.
        return failures
    for result in _arm_runs(healthy, REFERENCE_ARM):
        for row in result.rows:
            if not (row.observation.is_measured and row.observation.passed):
                failures.append(f"healthy {row.row_id} is not a measured pass")
    for result in _arm_runs(healthy, DEGRADED_ARM):
        for row in result.rows:
            if not row.observation.failed:
                failures.append(f"ablated {row.row_id} is not a measured failure")
    for result in _arm_runs(healthy, WORKFLOW_ARM):
        for row in result.rows:
            if not row.observation.is_measured:
                failures.append(f"workflow {row.row_id} is {row.observation.state.value}")
    for gate in healthy.gates:
        if gate.status != "PASS":
            failures.append(f"healthy production check {gate.name} is {gate.status}")
    for gate in ablated.gates:
        if gate.status != "FAIL":
            failures.append(f"ablated production check {gate.name} is {gate.status}, not FAIL")
    canonical = healthy.sections[0]
    for comparison in canonical.comparisons:
        if comparison.excluded:
            failures.append(
                f"{comparison.challenger_arm} on {comparison.check_key}: "
                f"{comparison.excluded} pair(s) excluded from the comparison"
            )
        if comparison.challenger_arm == WORKFLOW_ARM and (
            comparison.ties != 2 or comparison.effective_n != 0
        ):
            failures.append(
                _not_a_tie(
                    comparison.check_key, comparison.wins, comparison.losses, comparison.ties
                )
            )
        if comparison.challenger_arm == DEGRADED_ARM and comparison.losses != 2:
            failures.append(f"the degraded arm does not lose both cases on {comparison.check_key}")
    failures.extend(_journal_failures(healthy))
    failures.extend(_control_failures(healthy))
    return failures


def _not_a_tie(check: str, wins: int, losses: int, ties: int) -> str:
    return (
        f"the workflow does not tie the reference on {check} ({wins} wins, {losses} losses, "
        f"{ties} ties of 2 cases): the self-test requires "
        "Demo02, the zero-model workflow, to tie the Demo01 reference, because both arms are "
        "deterministic and authored to pass every predicate on both cases, so a difference "
        "means an arm or a predicate changed"
    )


def _control_failures(run: SuiteRun) -> list[str]:

    registered, ran = len(shop_manifest()), len(run.controls)
    if (registered, ran) != (EXPECTED_CONTROLS, EXPECTED_CONTROLS):
        return [
            f"{registered} controls registered and {ran} run, expected {EXPECTED_CONTROLS} of each"
        ]
    return [f"control {r.spec.id} was not caught: {r.detail}" for r in run.controls if not r.caught]

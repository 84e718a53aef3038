"""The offline suite pipeline: a suite declares benchmarks, gates and modes; vitrine runs them."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from vitrine import (
    Arm,
    Authority,
    BenchmarkDefinition,
    Case,
    ChanceFloor,
    ExitCode,
    Observation,
    SubjectResponse,
    admit,
    check,
)
from vitrine._bench.model import AdmittedCheck
from vitrine._plans.base import PlanRequest
from vitrine._suite_pipeline import (
    Ablation,
    Evidence,
    EvidenceRequest,
    GateBenchmark,
    OfflinePipeline,
    ScoredBenchmark,
    SelfTest,
    SuiteRun,
    run_offline_mode,
    run_suite,
)
from vitrine.store import RunStore

FLOOR = ChanceFloor.not_derivable("a deterministic toy predicate has no random-draw population")


@dataclass(frozen=True)
class Calculator:
    """The toy subject: adds, or adds one too many when broken."""

    off_by: int = 0
    label: str = "shipped"

    def add(self, a: int, b: int) -> int:
        return a + b + self.off_by


@check("answered")
def answered(case: Case, response: SubjectResponse) -> Observation:
    return Observation.measured(1.0 if response.answer else 0.0, bool(response.answer))


@check("sums")
def sums(case: Case, response: SubjectResponse) -> Observation:
    wrong = (response.structured or {})["wrong"]
    return Observation.measured(1.0 - len(wrong) / 3, not wrong, evidence={"wrong": wrong})


@check("speed")
def speed(case: Case, response: SubjectResponse) -> Observation:
    return Observation.measured(0.0, False)  # a diagnostic that always fails, and decides nothing


def _definition() -> BenchmarkDefinition:
    return BenchmarkDefinition(
        "toy-answers", "1.0.0", [Case("one", "1+1")], [admit(answered, FLOOR)]
    )


async def _answers(case: Case) -> SubjectResponse:
    return SubjectResponse(answer="2")


async def _silent(case: Case) -> SubjectResponse:
    return SubjectResponse(answer="")


def _arms() -> tuple[Arm, ...]:
    return (Arm("reference", _answers), Arm("silent", _silent))


async def _produce(request: EvidenceRequest[Calculator]) -> Evidence:
    cases = ((1, 2, 3), (2, 2, 4), (-1, 1, 0))
    wrong = [[a, b] for a, b, total in cases if request.subject.add(a, b) != total]
    return Evidence({"wrong": wrong})


def _gate_checks() -> tuple[AdmittedCheck, ...]:
    return (admit(sums, FLOOR), admit(speed, FLOOR, Authority.DIAGNOSTIC))


def _self_test_failures(healthy: SuiteRun, ablated: SuiteRun) -> list[str]:
    failures = []
    if healthy.exit_code is not ExitCode.PASS:
        failures.append("the healthy calculator does not pass")
    if ablated.exit_code is not ExitCode.MEASURED_FAILURE:
        failures.append("the broken calculator is not caught")
    return failures


PIPELINE: OfflinePipeline[Calculator] = OfflinePipeline(
    suite="toy",
    plan="toy-offline",
    scored=ScoredBenchmark(_definition, _arms, repetitions=2, reference_arm="reference"),
    gates=GateBenchmark(
        "toy-gates",
        "1.0.0",
        "the calculator's release gates",
        "shipped",
        _gate_checks,
        _produce,
        arm_id=lambda calculator: f"{calculator.label}-calculator",
        describe=lambda calculator: f"{calculator.label} calculator",
    ),
    subject=Calculator,
    self_test=SelfTest(
        lambda calculator: replace(calculator, off_by=1, label="broken"),
        _self_test_failures,
        "the healthy calculator passes and the broken one is caught",
    ),
    ablation=Ablation(
        lambda calculator: replace(calculator, off_by=1, label="broken"),
        lambda calculator: "one isolated defect: exit 1 is the expected signal",
        mode="break-calculator",
    ),
)


def _request(tmp_path: Path, mode: str = "suite") -> PlanRequest:
    return PlanRequest(
        plan="toy-offline",
        output=tmp_path / "store",
        json_report=tmp_path / "r.json",
        mode=mode,
    )


def test_the_timeline_is_derived_from_the_declared_gates_and_checks() -> None:
    assert [n.id for n in PIPELINE.nodes()] == [
        "gate:sums",
        "diagnostic:speed",
        "predicate:answered",
        "persistence-score",
        "controls",
        "terminal",
    ]


async def test_a_healthy_subject_passes_and_a_failing_diagnostic_decides_nothing(
    tmp_path: Path,
) -> None:
    outcome = await run_offline_mode(PIPELINE, _request(tmp_path))
    assert outcome.exit_code is ExitCode.PASS
    report = json.loads((tmp_path / "r.json").read_text())
    assert [(g["name"], g["status"]) for g in report["gates"]] == [
        ("sums", "PASS"),
        ("speed", "FAIL"),
    ]
    # One scored section: two arms x two repetitions, each a sealed run of its own.
    assert [b["role"] for b in report["benchmarks"]] == ["canonical"]
    assert len(list((tmp_path / "store" / "runs").iterdir())) == 2 * 2 + 1
    timeline = {e["node"]: e["status"] for e in report["timeline"]}
    assert timeline["controls"] == "SKIPPED"
    assert timeline["gate:sums"] == "COMPLETED"


async def test_a_broken_subject_fails_its_gate_with_exit_1(tmp_path: Path) -> None:
    run = await run_suite(PIPELINE, RunStore(tmp_path), Calculator(off_by=1, label="broken"))
    assert run.exit_code is ExitCode.MEASURED_FAILURE
    assert run.production_run.arm_id == "broken-calculator"
    assert run.evidence.observations == {"wrong": [[1, 2], [2, 2], [-1, 1]]}


async def test_the_self_test_holds_the_declared_expectations(tmp_path: Path) -> None:
    outcome = await run_offline_mode(PIPELINE, _request(tmp_path, "self-test"))
    assert outcome.exit_code is ExitCode.PASS
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["mode"] == "self-test"
    assert report["exit_reason"] == "the healthy calculator passes and the broken one is caught"


async def test_the_ablation_reports_its_note_and_its_measured_failure(tmp_path: Path) -> None:
    outcome = await run_offline_mode(PIPELINE, _request(tmp_path, "break-calculator"))
    assert outcome.exit_code is ExitCode.MEASURED_FAILURE
    assert "one isolated defect: exit 1 is the expected signal" in outcome.summary
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["mode"] == "break-calculator"


@pytest.mark.parametrize("mode", ["controls-only", "self-test", "ablate-catalogue"])
async def test_a_mode_the_suite_does_not_declare_is_refused_by_name(
    tmp_path: Path, mode: str
) -> None:
    bare = replace(PIPELINE, self_test=None)  # its ablation is named break-calculator
    outcome = await run_offline_mode(bare, _request(tmp_path, mode))
    assert outcome.exit_code is ExitCode.INVALID_ARGUMENTS
    assert f"--{mode}" in outcome.summary[0]
    assert not (tmp_path / "store").exists()


async def test_a_store_that_cannot_be_written_is_an_infrastructure_failure(tmp_path: Path) -> None:
    blocked = tmp_path / "store"
    blocked.write_text("a file where the store should be")
    outcome = await run_offline_mode(PIPELINE, _request(tmp_path))
    assert outcome.exit_code is ExitCode.INFRASTRUCTURE
    assert "runs could not be persisted" in outcome.summary[0]

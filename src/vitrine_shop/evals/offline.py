"""The strict offline suite (``vitrine --all``), its self-test and the catalogue ablation.

Flow: run the canonical benchmark (three arms x two repetitions, six sealed run directories),
score it from those runs, then run the six production checks against the shipped shop (their
evidence benchmarks persist runs of their own), turn the five mandatory gates into an exit code,
and render every report from the stored runs. Only local deterministic providers are used.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vitrine import (
    Arm,
    Authority,
    BenchmarkDefinition,
    Case,
    ExitCode,
    Observation,
    RunResult,
    SubjectResponse,
)
from vitrine.bench.runner import run_benchmark
from vitrine.controls import ControlResult
from vitrine.gates import GateResult, decide
from vitrine.progress import NodeStatus, SuiteNode, Timeline
from vitrine.reports.model import (
    AnswerSample,
    BenchmarkSection,
    ControlsSection,
    GateRow,
    SuiteReport,
)
from vitrine.reports.sections import benchmark_section
from vitrine.store import RunStore
from vitrine_shop.arms import (
    degraded_empty_answer_arm,
    scripted_agent_arm,
    zero_model_workflow_arm,
)
from vitrine_shop.evals.benchmarks import canonical_definition
from vitrine_shop.evals.evidence import (
    EvidenceRuns,
    ShopUnderTest,
    produce_evidence,
)
from vitrine_shop.evals.predicates import RECOMMENDATION_CHECK_KEYS
from vitrine_shop.evals.production import PRODUCTION_CHECK_KEYS, production_checks

__all__ = [
    "OFFLINE_NODES",
    "SuiteRun",
    "build_report",
    "controls_exit",
    "replace_catalogue",
    "run_canonical",
    "run_controls",
    "run_offline_suite",
]

REFERENCE_ARM = "scripted-agent"
REPETITIONS = 2
PRODUCTION_KEY = "vitrine-production-checks"

OFFLINE_NODES: tuple[SuiteNode, ...] = (
    *(SuiteNode(f"gate:{k}", "gate", k) for k in PRODUCTION_CHECK_KEYS[:5]),
    SuiteNode("diagnostic:matched-quality", "diagnostic", "matched-quality"),
    *(SuiteNode(f"predicate:{k}", "predicate", k) for k in RECOMMENDATION_CHECK_KEYS),
    SuiteNode("persistence-score", "persistence", "native persistence / score"),
    SuiteNode("controls", "controls", "registered control mutations"),
    SuiteNode("terminal", "terminal", "suite terminal"),
)


def canonical_arms() -> tuple[Arm, ...]:
    return (
        scripted_agent_arm(),
        zero_model_workflow_arm(),
        degraded_empty_answer_arm(),
    )


def production_definition(claims: Sequence[BenchmarkSection]) -> BenchmarkDefinition:
    return BenchmarkDefinition(
        PRODUCTION_KEY,
        "1.0.0",
        [Case("shipped-shop", {"claims": [s.identity for s in claims]})],
        production_checks(),
        description="Six production checks over the shipped shop",
    )


@dataclass
class SuiteRun:
    """Everything one offline suite run produced, for reports and for the self-test."""

    canonical_runs: list[RunResult]
    production_run: RunResult
    evidence: EvidenceRuns
    sections: list[BenchmarkSection]
    gates: list[GateResult]
    exit_code: ExitCode
    exit_reason: str
    timeline: Timeline
    started_at: str
    duration_s: float
    controls: tuple[ControlResult, ...] = ()


async def run_canonical(
    store: RunStore, sink: Callable[[object], None] | None = None
) -> tuple[list[RunResult], BenchmarkSection]:
    """The canonical benchmark: every arm, every repetition, scored from the sealed runs."""
    definition = canonical_definition()
    runs: list[RunResult] = []
    for arm in canonical_arms():
        for repetition in range(1, REPETITIONS + 1):
            runs.append(
                await run_benchmark(
                    definition, arm, repetition=repetition, store=store, on_event=sink
                )
            )
    section = benchmark_section(
        runs, role="canonical", store_root=store.root, reference_arm=REFERENCE_ARM
    )
    return runs, section


async def run_controls(
    store: RunStore,
    runs: Sequence[RunResult],
    canonical: BenchmarkSection,
    evidence: Mapping[str, Any],
) -> tuple[ControlResult, ...]:
    """The 43 registered controls over this run's captured shipped state."""
    # Imported here: the controls' count fixture reads the self-test, which reads this module.
    from vitrine_shop.evals.controls import capture_shipped_state, run_shop_controls

    state = await capture_shipped_state(
        evidence=evidence, canonical_runs=tuple(runs), claims=canonical, store_root=store.root
    )
    return await run_shop_controls(state)


def controls_exit(results: Sequence[ControlResult]) -> list[tuple[ExitCode, str]]:
    """A control that was not caught is a measured failure of the suite (exit 1)."""
    missed = [r.spec.id for r in results if not r.caught]
    if not missed:
        return []
    return [
        (
            ExitCode.MEASURED_FAILURE,
            f"{len(missed)} of {len(results)} registered controls not caught: {', '.join(missed)}",
        )
    ]


async def run_offline_suite(
    store: RunStore,
    shop: ShopUnderTest | None = None,
    *,
    sink: Callable[[object], None] | None = None,
    with_controls: bool = True,
) -> SuiteRun:
    """The whole suite; ``with_controls=False`` for an ablated shop, whose healthy arms are red
    by design, so its controls could prove nothing."""
    started = time.perf_counter()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    timeline = Timeline(OFFLINE_NODES, sink)
    shop = shop or ShopUnderTest.shipped()
    try:
        for key in RECOMMENDATION_CHECK_KEYS:
            timeline.start(f"predicate:{key}")
        timeline.start("persistence-score")
        runs, canonical = await run_canonical(store, sink)
        for key in RECOMMENDATION_CHECK_KEYS:
            timeline.end(f"predicate:{key}", detail=f"{len(runs)} runs observed")
        timeline.end("persistence-score", detail=f"{len(runs)} sealed runs scored")

        for key in PRODUCTION_CHECK_KEYS[:5]:
            timeline.start(f"gate:{key}")
        timeline.start("diagnostic:matched-quality")
        evidence_runs = EvidenceRuns()

        async def observe(case: Case) -> SubjectResponse:
            bundle = await produce_evidence(
                shop, store=store, claims=[canonical], runs=evidence_runs
            )
            return SubjectResponse(answer=None, structured=bundle)

        production = await run_benchmark(
            production_definition([canonical]),
            Arm(f"{shop.label}-shop", observe),
            store=store,
            on_event=sink,
        )
        gates = [
            GateResult(
                info.key,
                Authority(info.authority),
                production.observation("shipped-shop", info.key)
                or Observation.not_measured("no observation was recorded"),
            )
            for info in production.checks
        ]
        for gate in gates:
            node = (
                f"gate:{gate.name}"
                if gate.authority is Authority.GATE
                else f"diagnostic:{gate.name}"
            )
            timeline.end(
                node,
                NodeStatus.COMPLETED if gate.status == "PASS" else NodeStatus.FAILED,
                gate.status,
            )
        controls: tuple[ControlResult, ...] = ()
        if with_controls:
            timeline.start("controls")
            evidence = production.responses["shipped-shop"]["structured"]
            controls = await run_controls(store, runs, canonical, evidence)
            caught = sum(1 for r in controls if r.caught)
            timeline.end(
                "controls",
                NodeStatus.COMPLETED if caught == len(controls) else NodeStatus.FAILED,
                f"{caught}/{len(controls)} caught",
            )
        else:
            timeline.skip("controls", f"not run against the {shop.label} shop")
        sections = [canonical, *_evidence_sections(evidence_runs, store.root)]
        decision = decide(gates, controls_exit(controls))
        reason = decision.reason
        if controls and decision.exit_code is ExitCode.PASS:
            reason += f"; {len(controls)}/{len(controls)} registered controls caught"
        timeline.start("terminal")
        timeline.end("terminal", detail=f"exit {int(decision.exit_code)}")
        return SuiteRun(
            runs,
            production,
            evidence_runs,
            sections,
            gates,
            decision.exit_code,
            reason,
            timeline,
            started_at,
            time.perf_counter() - started,
            controls,
        )
    finally:
        timeline.close()


def _evidence_sections(runs: EvidenceRuns, root: Path) -> list[BenchmarkSection]:
    out = []
    for role, group, reference in (
        # The shipped agent is the reference of both: the prompt-blind, vulnerable and
        # ablated-memory arms are compared against it.
        ("injection calibration", runs.injection, REFERENCE_ARM),
        ("memory recall", runs.recall, REFERENCE_ARM),
        ("judged quality (diagnostic)", runs.judged, REFERENCE_ARM),
    ):
        if group:
            arms = {r.arm_id for r in group}
            out.append(
                benchmark_section(
                    group,
                    role=role,
                    store_root=root,
                    reference_arm=reference if reference in arms and len(arms) > 1 else None,
                )
            )
    return out


def gate_rows(gates: Sequence[GateResult]) -> list[GateRow]:
    return [GateRow.of(g) for g in gates]


def answer_samples(runs: Sequence[RunResult]) -> list[AnswerSample]:
    samples = []
    for result in runs:
        if result.repetition != 1:
            continue
        for case_id in result.case_ids:
            response = result.responses.get(case_id) or {}
            journal = response.get("tool_calls")
            samples.append(
                AnswerSample(
                    benchmark=result.identity,
                    arm_id=result.arm_id,
                    case_id=case_id,
                    repetition=result.repetition,
                    answer_preview=response.get("answer_preview"),
                    tool_calls=None if journal is None else len(journal),
                )
            )
    return sorted(samples, key=lambda s: (s.case_id, s.arm_id))


def build_report(run: SuiteRun, *, mode: str, root: Path) -> SuiteReport:
    return SuiteReport(
        suite="vitrine_shop",
        plan="offline-suite",
        mode=mode,
        provenance="offline-deterministic",
        started_at=run.started_at,
        duration_s=round(run.duration_s, 3),
        exit_code=int(run.exit_code),
        exit_meaning=run.exit_code.meaning,
        exit_reason=run.exit_reason,
        gates=gate_rows(run.gates),
        benchmarks=run.sections,
        controls=_controls_section(run.controls),
        samples=answer_samples(run.canonical_runs),
        timeline=run.timeline.entries(),
        store_root=".",
    )


def _controls_section(results: Sequence[ControlResult]) -> ControlsSection | None:
    if not results:
        return None
    from vitrine_shop.evals.controls import controls_section

    return controls_section(results)


def replace_catalogue(shop: ShopUnderTest, sku: str | None = None) -> ShopUnderTest:
    """An isolated snapshot of the shop with one real SKU removed from its catalogue."""
    target = sku or sorted(shop.catalogue.skus)[0]
    return replace(shop, catalogue=shop.catalogue.without(target), label="ablated-catalogue")

"""The strict offline suite (``vitrine --all``), declared: what runs, what gates, what it proves.

The canonical benchmark (three arms x two repetitions, six sealed run directories) is scored
from its runs; the six production checks (five mandatory gates and the matched-quality
diagnostic) judge one evidence bundle over the shipped shop, whose evidence benchmarks persist
runs of their own; the 43 registered controls run over what the healthy suite captured. The
self-test holds a healthy and an ablated shop to exact expectations, and the catalogue ablation
removes one SKU from an isolated copy. Only local deterministic providers are used.

The harness (:mod:`vitrine._suite_pipeline`) conducts all of it: it runs, scores, decides the exit
code and writes every report; this module only declares :data:`PIPELINE`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from vitrine import Arm, PlanOutcome, PlanRequest
from vitrine.controls import ControlResult
from vitrine.pipeline import (
    Ablation,
    ControlsStep,
    Evidence,
    EvidenceRequest,
    GateBenchmark,
    OfflinePipeline,
    ScoredBenchmark,
    SelfTest,
    SuiteRun,
    build_report as _build_report,
    controls_exit,
    run_offline_mode,
    run_scored,
    run_suite,
)
from vitrine.reports import BenchmarkSection, ControlsSection, SuiteReport
from vitrine.runs import RunResult
from vitrine.store import RunStore
from vitrine_shop.arms import (
    degraded_empty_answer_arm,
    scripted_agent_arm,
    zero_model_workflow_arm,
)
from vitrine_shop.evals.benchmarks import REFERENCE_ARM, REPETITIONS, canonical_definition
from vitrine_shop.evals.controls import capture_shipped_state, run_shop_controls
from vitrine_shop.evals.desk_exploration import SERVED_ARM
from vitrine_shop.evals.evidence import EvidenceRuns, ShopUnderTest, produce_evidence
from vitrine_shop.evals.exploration import FRESH_ARM
from vitrine_shop.evals.production import production_checks
from vitrine_shop.evals.self_test import self_test_failures
from vitrine_shop.evals.suite import ABLATE_CATALOGUE

__all__ = [
    "OFFLINE_NODES",
    "PIPELINE",
    "SuiteRun",
    "build_report",
    "controls_exit",
    "replace_catalogue",
    "run_canonical",
    "run_controls",
    "run_mode",
    "run_offline_suite",
]

PRODUCTION_KEY = "vitrine-production-checks"
_CATALOGUE_SIZE = 99  # independently authored: the catalogue schema check holds the shop to it


def canonical_arms() -> tuple[Arm, ...]:
    return (
        scripted_agent_arm(),
        zero_model_workflow_arm(),
        degraded_empty_answer_arm(),
    )


async def _produce(request: EvidenceRequest[ShopUnderTest]) -> Evidence:
    runs = EvidenceRuns()
    bundle = await produce_evidence(
        request.subject, store=request.store, claims=list(request.claims), runs=runs
    )
    # The shipped agent is the reference of every evidence section: the prompt-blind,
    # vulnerable and ablated-memory arms are compared against it.
    return Evidence(
        bundle,
        (
            ("injection calibration", runs.injection, REFERENCE_ARM),
            ("memory recall", runs.recall, REFERENCE_ARM),
            ("judged quality (diagnostic)", runs.judged, REFERENCE_ARM),
            ("data invariants", runs.exploration, REFERENCE_ARM),
            ("data invariants, new session", runs.sessions, FRESH_ARM),
            ("front desk contract", runs.desk, SERVED_ARM),
            ("careless answers", runs.careless, "careless-explorer"),
            ("broken stage replies", runs.stages, "explorative-workflow"),
            ("agent cut short by its limits", runs.cut_short, "cut-short-agent"),
            ("data invariants, generated customers", runs.population, "population-agent"),
        ),
    )


async def run_controls(
    store: RunStore,
    runs: Sequence[RunResult],
    canonical: BenchmarkSection,
    evidence: Mapping[str, Any],
) -> tuple[ControlResult, ...]:
    """The 43 registered controls over this run's captured shipped state."""
    state = await capture_shipped_state(
        evidence=evidence, canonical_runs=tuple(runs), claims=canonical, store_root=store.root
    )
    return await run_shop_controls(state)


def replace_catalogue(shop: ShopUnderTest, sku: str | None = None) -> ShopUnderTest:
    """An isolated snapshot of the shop with one real SKU removed from its catalogue."""
    target = sku or sorted(shop.catalogue.skus)[0]
    return replace(shop, catalogue=shop.catalogue.without(target), label="ablated-catalogue")


def _ablation_note(ablated: ShopUnderTest) -> str:
    return (
        f"catalogue ablation: an isolated snapshot with one SKU removed holds "
        f"{len(ablated.catalogue)} products against the independently authored "
        f"{_CATALOGUE_SIZE}; exit 1 is the expected defect-detection signal, and nothing on disk "
        "or in source changed"
    )


PIPELINE: OfflinePipeline[ShopUnderTest] = OfflinePipeline(
    suite="vitrine_shop",
    plan="offline-suite",
    scored=ScoredBenchmark(
        canonical_definition, canonical_arms, REPETITIONS, reference_arm=REFERENCE_ARM
    ),
    gates=GateBenchmark(
        PRODUCTION_KEY,
        "1.0.0",
        "Seven production checks over the shipped shop",
        "shipped-shop",
        production_checks,
        _produce,
        arm_id=lambda shop: f"{shop.label}-shop",
        describe=lambda shop: f"{shop.label} shop",
    ),
    subject=ShopUnderTest.shipped,
    controls=ControlsStep(run_controls, ControlsSection.of),
    self_test=SelfTest(
        ShopUnderTest.ablated,
        self_test_failures,
        "every registration, census, journal, healthy and ablated expectation held",
    ),
    ablation=Ablation(replace_catalogue, _ablation_note, mode=ABLATE_CATALOGUE),
)

OFFLINE_NODES = PIPELINE.nodes()


async def run_mode(request: PlanRequest) -> PlanOutcome:
    """The offline plan, in the mode the request asks for."""
    return await run_offline_mode(PIPELINE, request)


async def run_canonical(
    store: RunStore, sink: Callable[[object], None] | None = None
) -> tuple[list[RunResult], BenchmarkSection]:
    """The canonical benchmark: every arm, every repetition, scored from the sealed runs."""
    return await run_scored(PIPELINE.scored, store, sink)


async def run_offline_suite(
    store: RunStore,
    shop: ShopUnderTest | None = None,
    *,
    sink: Callable[[object], None] | None = None,
    with_controls: bool = True,
) -> SuiteRun:
    """The whole suite against ``shop`` (the shipped one by default)."""
    return await run_suite(PIPELINE, store, shop, sink=sink, with_controls=with_controls)


def build_report(run: SuiteRun, *, mode: str) -> SuiteReport:
    """The suite report of ``run``."""
    return _build_report(PIPELINE, run, mode=mode)

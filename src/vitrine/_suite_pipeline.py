"""The offline suite pipeline: a suite declares what to run, the harness runs it.

A suite's offline plan is one :class:`OfflinePipeline`: the benchmark that is scored from its
sealed runs, the gate benchmark whose checks (gates and diagnostics, by their authority) judge
one evidence bundle, the producer of that bundle, the registered controls, and how the suite's
subject is ablated for the self-test and for the suite's own ablation mode. The harness conducts
the rest, for every suite alike: it runs the scored benchmark arm by arm and repetition by
repetition, scores it, runs the gate benchmark over the evidence, runs the controls, turns gates
and controls into one exit code and writes every report. ``await run_offline_mode(PIPELINE,
request)`` is the whole plan::

    PIPELINE = OfflinePipeline(
        suite="my_suite", plan="offline-suite",
        scored=ScoredBenchmark(my_definition, my_arms, repetitions=2, reference_arm="agent"),
        gates=GateBenchmark("my-gates", "1.0.0", "the release gates", "shipped",
                            my_gate_checks, produce=my_evidence),
        subject=MySubject.shipped,
    )

The subject (``S``) is whatever the suite's producers observe; the harness only hands it back
to them. Its timeline nodes come from the declaration: ``gate:KEY`` and ``diagnostic:KEY`` per
gate check, ``predicate:KEY`` per scored check, then ``persistence-score``, ``controls`` and
``terminal``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Generic, TypeVar

from vitrine._bench.model import AdmittedCheck, Arm, Authority, BenchmarkDefinition, Case
from vitrine._bench.response import SubjectResponse
from vitrine._bench.results import RunResult
from vitrine._bench.runner import run_benchmark
from vitrine._gates import GateResult, decide
from vitrine._outcomes import ExitCode, Observation
from vitrine._plans.base import PlanOutcome, PlanRequest
from vitrine._progress import NodeStatus, SuiteNode, Timeline
from vitrine._progress_bar import StepProgress
from vitrine._redact import describe_exception
from vitrine._suite_flags import CONTROLS_ONLY, NO_MODE, SELF_TEST
from vitrine.controls._runner import ControlResult, control_progress
from vitrine.errors import InvalidArgumentError
from vitrine.reports._console import render_console, terminal_console
from vitrine.reports._live import LiveProgress
from vitrine.reports._model import (
    AnswerSample,
    BenchmarkSection,
    ControlsSection,
    GateRow,
    SuiteReport,
)
from vitrine.reports._sections import benchmark_section
from vitrine.reports._writer import write_reports
from vitrine.store import RunStore, RunStoreError

__all__ = [
    "Ablation",
    "ControlsStep",
    "Evidence",
    "EvidenceRequest",
    "GateBenchmark",
    "OfflinePipeline",
    "ScoredBenchmark",
    "SelfTest",
    "SuiteRun",
    "build_report",
    "controls_exit",
    "run_controls_only",
    "run_offline_mode",
    "run_scored",
    "run_suite",
]

S = TypeVar("S")
Sink = Callable[[object], None]


@dataclass(frozen=True)
class ScoredBenchmark:
    """A benchmark run arm x repetition into sealed runs and scored from them alone.

    ``definition`` and ``arms`` are factories, so declaring the pipeline costs nothing until a
    plan runs it.
    """

    definition: Callable[[], BenchmarkDefinition]
    arms: Callable[[], Sequence[Arm]]
    repetitions: int
    reference_arm: str | None = None
    role: str = "canonical"

    def __post_init__(self) -> None:
        if self.repetitions < 1:
            raise InvalidArgumentError(
                f"a scored benchmark needs at least one repetition, got {self.repetitions}"
            )


@dataclass(frozen=True)
class EvidenceRequest(Generic[S]):
    """What an evidence producer is given: the subject, the store, and the report's claims."""

    subject: S
    store: RunStore
    # The scored benchmark's sections, so that a check may hold the report to its own runs.
    claims: Sequence[BenchmarkSection]


@dataclass(frozen=True)
class Evidence:
    """An evidence bundle: the facts per gate check, and the runs producing them persisted.

    ``sections`` lists ``(role, runs, reference arm)``; each non-empty group is reported as a
    benchmark section of its own, compared against the reference arm when the group holds it
    and another arm.
    """

    observations: Mapping[str, Any]
    sections: Sequence[tuple[str, Sequence[RunResult], str | None]] = ()


@dataclass(frozen=True)
class GateBenchmark(Generic[S]):
    """One case whose checks judge one evidence bundle: the suite's gates and diagnostics.

    A check admitted with ``Authority.GATE`` decides the exit code; any other authority is a
    diagnostic, reported but never deciding.
    """

    key: str
    version: str
    description: str
    case_id: str
    checks: Callable[[], Sequence[AdmittedCheck]]
    produce: Callable[[EvidenceRequest[S]], Awaitable[Evidence]]
    # The arm the gate benchmark records, named after the subject variant it observed, and
    # the same variant in words ("the ablated subject").
    arm_id: Callable[[S], str] = lambda subject: "subject"
    describe: Callable[[S], str] = lambda subject: "subject"


@dataclass(frozen=True)
class ControlsStep:
    """The registered controls: run over what the healthy suite captured, then reported.

    ``run`` receives the store, the scored runs, the scored section and the evidence bundle.
    """

    run: Callable[
        [RunStore, Sequence[RunResult], BenchmarkSection, Mapping[str, Any]],
        Awaitable[Sequence[ControlResult]],
    ]
    section: Callable[[Sequence[ControlResult]], ControlsSection]


@dataclass(frozen=True)
class SelfTest(Generic[S]):
    """``--self-test``: the healthy subject and an ablated one, held to the suite's expectations.

    ``failures`` names every expectation that did not hold; an empty list passes.
    """

    ablate: Callable[[S], S]
    failures: Callable[[SuiteRun, SuiteRun], list[str]]
    passed_reason: str


@dataclass(frozen=True)
class Ablation(Generic[S]):
    """A mode of the suite's own (``mode``, its flag ``--MODE``): one isolated defect in a copy
    of the subject, run through the whole suite, and ``note`` saying what it means."""

    apply: Callable[[S], S]
    note: Callable[[S], str]
    mode: str


@dataclass(frozen=True)
class OfflinePipeline(Generic[S]):
    """Everything a suite declares for its offline plan; see the module docstring."""

    suite: str
    plan: str
    scored: ScoredBenchmark
    gates: GateBenchmark[S]
    subject: Callable[[], S]
    controls: ControlsStep | None = None
    self_test: SelfTest[S] | None = None
    ablation: Ablation[S] | None = None
    provenance: str = "offline-deterministic"

    def nodes(self) -> tuple[SuiteNode, ...]:
        """The timeline nodes, in the order a report shows them."""
        checks = self.gates.checks()
        return (
            *(SuiteNode(f"gate:{c.key}", "gate", c.key) for c in checks if _is_gate(c)),
            *(
                SuiteNode(f"diagnostic:{c.key}", "diagnostic", c.key)
                for c in checks
                if not _is_gate(c)
            ),
            *(SuiteNode(f"predicate:{c.key}", "predicate", c.key) for c in self._scored_checks()),
            SuiteNode("persistence-score", "persistence", "native persistence / score"),
            SuiteNode("controls", "controls", "registered control mutations"),
            SuiteNode("terminal", "terminal", "suite terminal"),
        )

    def _scored_checks(self) -> tuple[AdmittedCheck, ...]:
        return tuple(self.scored.definition().checks)


def _is_gate(check: AdmittedCheck | GateResult) -> bool:
    return check.authority is Authority.GATE


@dataclass
class SuiteRun:
    """Everything one offline suite run produced, for reports and for the self-test."""

    canonical_runs: list[RunResult]
    production_run: RunResult
    evidence: Evidence
    sections: list[BenchmarkSection]
    gates: list[GateResult]
    exit_code: ExitCode
    exit_reason: str
    timeline: Timeline
    started_at: str
    duration_s: float
    controls: tuple[ControlResult, ...] = ()


async def run_scored(
    scored: ScoredBenchmark, store: RunStore, sink: Sink | None = None
) -> tuple[list[RunResult], BenchmarkSection]:
    """Every arm, every repetition, each its own sealed run; scored from those runs alone."""
    definition = scored.definition()
    runs: list[RunResult] = []
    for arm in scored.arms():
        for repetition in range(1, scored.repetitions + 1):
            runs.append(
                await run_benchmark(
                    definition, arm, repetition=repetition, store=store, on_event=sink
                )
            )
    section = benchmark_section(
        runs, role=scored.role, store_root=store.root, reference_arm=scored.reference_arm
    )
    return runs, section


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


async def _run_gates(
    pipeline: OfflinePipeline[S],
    store: RunStore,
    subject: S,
    claims: Sequence[BenchmarkSection],
    sink: Sink | None,
) -> tuple[RunResult, Evidence, list[GateResult]]:
    gates = pipeline.gates
    produced: list[Evidence] = []

    async def observe(case: Case) -> SubjectResponse:
        evidence = await gates.produce(EvidenceRequest(subject, store, tuple(claims)))
        produced.append(evidence)
        return SubjectResponse(answer=None, structured=dict(evidence.observations))

    definition = BenchmarkDefinition(
        gates.key,
        gates.version,
        [Case(gates.case_id, {"claims": [s.identity for s in claims]})],
        gates.checks(),
        description=gates.description,
    )
    production = await run_benchmark(
        definition, Arm(gates.arm_id(subject), observe), store=store, on_event=sink
    )
    results = [
        GateResult(
            info.key,
            Authority(info.authority),
            production.observation(gates.case_id, info.key)
            or Observation.not_measured("no observation was recorded"),
        )
        for info in production.checks
    ]
    # The controls read the bundle as the run recorded it; a producer that raised left none, so
    # its checks are not measured and there is nothing for the report to section.
    recorded = (production.responses.get(gates.case_id) or {}).get("structured") or {}
    evidence = produced[0] if produced else Evidence({})
    return production, Evidence(recorded, evidence.sections), results


async def run_suite(
    pipeline: OfflinePipeline[S],
    store: RunStore,
    subject: S | None = None,
    *,
    sink: Sink | None = None,
    with_controls: bool = True,
) -> SuiteRun:
    """The whole suite against ``subject`` (the shipped one by default).

    ``with_controls=False`` for an ablated subject, whose healthy arms are red by design, so its
    controls could prove nothing.
    """
    started = time.perf_counter()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    timeline = Timeline(pipeline.nodes(), sink)
    chosen = pipeline.subject() if subject is None else subject
    predicates = [f"predicate:{c.key}" for c in pipeline._scored_checks()]
    gate_nodes = [
        f"gate:{c.key}" if _is_gate(c) else f"diagnostic:{c.key}" for c in pipeline.gates.checks()
    ]
    try:
        for node in (*predicates, "persistence-score"):
            timeline.start(node)
        runs, scored = await run_scored(pipeline.scored, store, sink)
        for node in predicates:
            timeline.end(node, detail=f"{len(runs)} runs observed")
        timeline.end("persistence-score", detail=f"{len(runs)} sealed runs scored")

        for node in gate_nodes:
            timeline.start(node)
        production, evidence, gates = await _run_gates(pipeline, store, chosen, [scored], sink)
        for gate in gates:
            timeline.end(
                f"gate:{gate.name}" if _is_gate(gate) else f"diagnostic:{gate.name}",
                NodeStatus.COMPLETED if gate.status == "PASS" else NodeStatus.FAILED,
                gate.status,
            )
        controls: tuple[ControlResult, ...] = ()
        if with_controls and pipeline.controls is not None:
            timeline.start("controls")
            controls = tuple(
                await pipeline.controls.run(store, runs, scored, evidence.observations)
            )
            caught = sum(1 for r in controls if r.caught)
            timeline.end(
                "controls",
                NodeStatus.COMPLETED if caught == len(controls) else NodeStatus.FAILED,
                f"{caught}/{len(controls)} caught",
            )
        elif pipeline.controls is None:
            timeline.skip("controls", "the suite registers no controls")
        else:
            timeline.skip("controls", f"not run against the {pipeline.gates.describe(chosen)}")
        sections = [scored, *_evidence_sections(evidence, store.root)]
        decision = decide(gates, controls_exit(controls))
        reason = decision.reason
        if controls and decision.exit_code is ExitCode.PASS:
            reason += f"; {len(controls)}/{len(controls)} registered controls caught"
        timeline.start("terminal")
        timeline.end("terminal", detail=f"exit {int(decision.exit_code)}")
        return SuiteRun(
            runs,
            production,
            evidence,
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


def _evidence_sections(evidence: Evidence, root: Path) -> list[BenchmarkSection]:
    out = []
    for role, group, reference in evidence.sections:
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


def answer_samples(runs: Sequence[RunResult]) -> list[AnswerSample]:
    """The first repetition's answers, one per case and arm, for the report's samples."""
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


def build_report(pipeline: OfflinePipeline[Any], run: SuiteRun, *, mode: str) -> SuiteReport:
    """The suite report of ``run``, as every offline mode writes it."""
    controls = (
        pipeline.controls.section(run.controls)
        if run.controls and pipeline.controls is not None
        else None
    )
    return SuiteReport(
        suite=pipeline.suite,
        plan=pipeline.plan,
        mode=mode,
        provenance=pipeline.provenance,
        started_at=run.started_at,
        duration_s=round(run.duration_s, 3),
        exit_code=int(run.exit_code),
        exit_meaning=run.exit_code.meaning,
        exit_reason=run.exit_reason,
        gates=[GateRow.of(g) for g in run.gates],
        benchmarks=run.sections,
        controls=controls,
        samples=answer_samples(run.canonical_runs),
        timeline=run.timeline.entries(),
        store_root=".",
    )


# --- the plan -------------------------------------------------------------------------------


async def run_offline_mode(pipeline: OfflinePipeline[Any], request: PlanRequest) -> PlanOutcome:
    """The offline plan: the mode the request asks for, its report, its exit code.

    From the command line each registered control is counted on stderr as it finishes.
    """
    steps = StepProgress.on(sys.stderr, "controls") if request.console else None
    try:
        with control_progress(steps):
            return await _run_mode(pipeline, request)
    except (OSError, RunStoreError) as exc:
        # Evidence that cannot be persisted is not evidence: an infrastructure failure, never
        # a pass computed from runs nobody can recompute.
        return PlanOutcome(
            ExitCode.INFRASTRUCTURE,
            [f"infrastructure failure: runs could not be persisted ({describe_exception(exc)})"],
        )


def _progress_sink(request: PlanRequest) -> Sink | None:
    if request.progress is not None:
        return request.progress
    if not (request.console and sys.stderr.isatty()):
        return None

    return LiveProgress(sys.stderr).handle


def _undeclared(mode: str) -> PlanOutcome:
    return PlanOutcome(
        ExitCode.INVALID_ARGUMENTS,
        [f"this suite's offline pipeline declares no {mode}, so --{mode} has nothing to run"],
    )


async def _run_mode(pipeline: OfflinePipeline[Any], request: PlanRequest) -> PlanOutcome:
    store = RunStore(request.output)
    sink = _progress_sink(request)
    if request.mode == CONTROLS_ONLY:
        if pipeline.controls is None:
            return _undeclared(CONTROLS_ONLY)
        return _publish(request, await run_controls_only(pipeline, store, sink), store, [])
    shipped = pipeline.subject()
    if request.mode == SELF_TEST:
        if pipeline.self_test is None:
            return _undeclared(SELF_TEST)
        healthy = await run_suite(pipeline, store, shipped, sink=sink)
        ablated = await run_suite(
            pipeline, store, pipeline.self_test.ablate(shipped), sink=sink, with_controls=False
        )
        failures = pipeline.self_test.failures(healthy, ablated)
        code = ExitCode.MEASURED_FAILURE if failures else ExitCode.PASS
        reason = "; ".join(failures) if failures else pipeline.self_test.passed_reason
        return _finish(pipeline, request, healthy, store, SELF_TEST, code, reason, failures)
    if request.mode != NO_MODE:
        if pipeline.ablation is None or pipeline.ablation.mode != request.mode:
            return _undeclared(request.mode)
        ablated_subject = pipeline.ablation.apply(shipped)
        run = await run_suite(pipeline, store, ablated_subject, sink=sink, with_controls=False)
        note = pipeline.ablation.note(ablated_subject)
        return _finish(
            pipeline,
            request,
            run,
            store,
            request.mode,
            run.exit_code,
            run.exit_reason,
            [note],
        )
    run = await run_suite(pipeline, store, shipped, sink=sink)
    return _finish(pipeline, request, run, store, NO_MODE, run.exit_code, run.exit_reason, [])


async def run_controls_only(
    pipeline: OfflinePipeline[Any], store: RunStore, sink: Sink | None = None
) -> SuiteReport:
    """Only what the controls capture (the scored runs and the evidence bundle), then them."""
    if pipeline.controls is None:
        raise InvalidArgumentError(f"suite {pipeline.suite} registers no controls")
    started = time.perf_counter()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    runs, scored = await run_scored(pipeline.scored, store, sink)
    evidence = await pipeline.gates.produce(EvidenceRequest(pipeline.subject(), store, (scored,)))
    results = await pipeline.controls.run(store, runs, scored, evidence.observations)
    failed = controls_exit(results)
    code, reason = (
        failed[0] if failed else (ExitCode.PASS, f"{len(results)}/{len(results)} controls caught")
    )
    return SuiteReport(
        suite=pipeline.suite,
        plan=pipeline.plan,
        mode=CONTROLS_ONLY,
        provenance=pipeline.provenance,
        started_at=started_at,
        duration_s=round(time.perf_counter() - started, 3),
        exit_code=int(code),
        exit_meaning=code.meaning,
        exit_reason=reason,
        gates=[],
        benchmarks=[scored],
        controls=pipeline.controls.section(results),
    )


def _finish(
    pipeline: OfflinePipeline[Any],
    request: PlanRequest,
    run: SuiteRun,
    store: RunStore,
    mode: str,
    code: ExitCode,
    reason: str,
    notes: list[str],
) -> PlanOutcome:
    report = build_report(pipeline, run, mode=mode).model_copy(
        update={"exit_code": int(code), "exit_meaning": code.meaning, "exit_reason": reason}
    )
    return _publish(request, report, store, notes)


def _session_dir(root: Path, started_at: str) -> Path:
    stamp = started_at.replace(":", "-").replace("+00-00", "Z")
    return root / "reports" / f"offline-{stamp}-{os.getpid()}"


def _publish(
    request: PlanRequest, report: SuiteReport, store: RunStore, notes: list[str]
) -> PlanOutcome:

    code = ExitCode(report.exit_code)
    report = report.model_copy(update={"notes": notes})
    paths = write_reports(
        report,
        _session_dir(store.root, report.started_at),
        json_path=request.json_report,
        html_path=request.html_report,
    )
    report = report.model_copy(
        update={"artifacts": {name: str(path) for name, path in paths.items()}}
    )
    if request.console:
        render_console(report, terminal_console())
    summary = [f"exit {int(code)} ({code.meaning}): {report.exit_reason}", *notes]
    return PlanOutcome(code, summary, list(paths.values()))

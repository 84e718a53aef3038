"""The offline plan's modes: the suite, the self-test and the catalogue ablation.

Each mode runs the same suite machinery; they differ only in which shop they observe and which
expectations they hold the results to.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from vitrine import ExitCode
from vitrine.plans.base import PlanOutcome, PlanRequest
from vitrine.redact import describe_exception
from vitrine.reports.model import SuiteReport
from vitrine.store import RunStore, RunStoreError
from vitrine_shop.evals.evidence import EvidenceRuns, ShopUnderTest, produce_evidence
from vitrine_shop.evals.offline import (
    SuiteRun,
    build_report,
    controls_exit,
    replace_catalogue,
    run_canonical,
    run_controls,
    run_offline_suite,
)
from vitrine_shop.evals.self_test import self_test_failures

__all__ = ["run_mode"]


def _session_dir(root: Path, started_at: str) -> Path:
    stamp = started_at.replace(":", "-").replace("+00-00", "Z")
    return root / "reports" / f"offline-{stamp}-{os.getpid()}"


def _progress_sink(request: PlanRequest) -> Callable[[object], None] | None:
    if request.progress is not None:
        return request.progress
    if not (request.console and sys.stderr.isatty()):
        return None
    from vitrine.reports.live import LiveProgress

    return LiveProgress(sys.stderr).handle


async def run_mode(request: PlanRequest) -> PlanOutcome:
    try:
        return await _run_mode(request)
    except (OSError, RunStoreError) as exc:
        # Evidence that cannot be persisted is not evidence: an infrastructure failure, never
        # a pass computed from runs nobody can recompute.
        return PlanOutcome(
            ExitCode.INFRASTRUCTURE,
            [f"infrastructure failure: runs could not be persisted ({describe_exception(exc)})"],
        )


async def _run_mode(request: PlanRequest) -> PlanOutcome:
    store = RunStore(request.output)
    shipped = ShopUnderTest.shipped()
    sink = _progress_sink(request)
    if request.controls_only:
        return await _controls_only(request, store, shipped, sink)
    if request.self_test:
        healthy = await run_offline_suite(store, shipped, sink=sink)
        ablated = await run_offline_suite(store, shipped.ablated(), sink=sink, with_controls=False)
        failures = self_test_failures(healthy, ablated)
        code = ExitCode.MEASURED_FAILURE if failures else ExitCode.PASS
        reason = (
            "; ".join(failures)
            if failures
            else "every registration, census, journal, healthy and ablated expectation held"
        )
        return _finish(request, healthy, store, "self-test", code, reason, failures)
    if request.ablate_catalogue:
        ablated_shop = replace_catalogue(shipped)
        run = await run_offline_suite(store, ablated_shop, sink=sink, with_controls=False)
        observed = len(ablated_shop.catalogue)
        note = (
            f"catalogue ablation: an isolated snapshot with one SKU removed holds {observed} "
            "products against the independently authored 99; exit 1 is the expected "
            "defect-detection signal, and nothing on disk or in source changed"
        )
        return _finish(
            request, run, store, "ablate-catalogue", run.exit_code, run.exit_reason, [note]
        )
    run = await run_offline_suite(store, shipped, sink=sink)
    return _finish(request, run, store, "suite", run.exit_code, run.exit_reason, [])


async def _controls_only(
    request: PlanRequest,
    store: RunStore,
    shipped: ShopUnderTest,
    sink: Callable[[object], None] | None,
) -> PlanOutcome:
    """Only what the controls capture (the canonical runs and the evidence bundle), then them."""
    started = time.perf_counter()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    runs, canonical = await run_canonical(store, sink)
    evidence = await produce_evidence(shipped, store=store, claims=[canonical], runs=EvidenceRuns())
    results = await run_controls(store, runs, canonical, evidence)
    failed = controls_exit(results)
    code, reason = (
        failed[0] if failed else (ExitCode.PASS, f"{len(results)}/{len(results)} controls caught")
    )
    from vitrine_shop.evals.controls import controls_section

    report = SuiteReport(
        suite="vitrine_shop",
        plan="offline-suite",
        mode="controls-only",
        provenance="offline-deterministic",
        started_at=started_at,
        duration_s=round(time.perf_counter() - started, 3),
        exit_code=int(code),
        exit_meaning=code.meaning,
        exit_reason=reason,
        gates=[],
        benchmarks=[canonical],
        controls=controls_section(results),
    )
    return _publish(request, report, store, [])


def _finish(
    request: PlanRequest,
    run: SuiteRun,
    store: RunStore,
    mode: str,
    code: ExitCode,
    reason: str,
    notes: list[str],
) -> PlanOutcome:
    report = build_report(run, mode=mode, root=store.root).model_copy(
        update={
            "exit_code": int(code),
            "exit_meaning": code.meaning,
            "exit_reason": reason,
        }
    )
    return _publish(request, report, store, notes)


def _publish(
    request: PlanRequest, report: SuiteReport, store: RunStore, notes: list[str]
) -> PlanOutcome:
    from vitrine.reports.writer import write_reports

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
        from vitrine.reports.console import render_console, terminal_console

        render_console(report, terminal_console())
    summary = [f"exit {int(code)} ({code.meaning}): {report.exit_reason}", *notes]
    return PlanOutcome(code, summary, list(paths.values()))

"""One mutant in one process: ``python -m vitrine.mutants._worker FOLDER/job.json``.

The worker loads the suite, plants the mutant (nothing, for the healthy baseline), runs the
plan through the same code path as ``vitrine --all`` with the folder as its store, reads the
plan's report, runs the mutant's tests against the suite's service, and writes ``result.json``
next to the job. A process per mutant means that whatever a plant changes (module state,
caches, patched functions) dies with the process and cannot leak into the next mutant.

The worker itself always exits 0 once its result is written; the plan's exit code is in the
result. Any other exit means the worker broke, and the runner records the mutant as errored.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from vitrine import _cli as cli
from vitrine._redact import describe_exception
from vitrine._suite import load_suite
from vitrine.mutants._catalogue import suite_mutants
from vitrine.mutants._job import PLAN_REPORT_NAME, WorkerJob, WorkerResult
from vitrine.mutants._service_tests import (
    ServiceTestError,
    ServiceTests,
    run_service_tests,
)
from vitrine.mutants._statuses import report_statuses
from vitrine.reports._writer import ReportSchemaError, load_report

if TYPE_CHECKING:
    from vitrine._suite import Suite

__all__ = ["main", "run_job"]


def run_job(job: WorkerJob) -> WorkerResult:
    """Do what ``job`` asks in this process and return its result (nothing is written)."""

    try:
        suite = load_suite(job.suite)
        mutant = (
            None
            if job.mutant is None
            else suite_mutants(suite, generate=job.generate).get(job.mutant)
        )
    except Exception as exc:
        return WorkerResult(error=f"the suite could not be loaded: {describe_exception(exc)}")
    planted = ExitStack()
    if mutant is not None:
        try:
            planted.enter_context(mutant.plant())
        except Exception as exc:
            return WorkerResult(error=f"planting the mutant raised {describe_exception(exc)}")
    with planted:  # leaving restores the healthy subject, as a plant promises
        result = _measure(job, suite)
    return result


def _measure(job: WorkerJob, suite: Suite) -> WorkerResult:

    report_path = job.folder / PLAN_REPORT_NAME
    code = cli.main(
        [
            "--suite",
            job.suite,
            "--eval-plan",
            job.plan,
            "--output",
            job.store,
            "--json-report",
            str(report_path),
        ]
    )
    statuses: dict[str, str] = {}
    report = False
    if report_path.is_file():
        try:
            statuses = report_statuses(load_report(report_path))
            report = True
        except (ReportSchemaError, OSError) as exc:
            return WorkerResult(
                exit_code=code, error=f"the plan's report is unreadable: {describe_exception(exc)}"
            )
    tests = ServiceTests()
    if job.test_selections:
        try:
            tests = run_service_tests(suite, job.test_selections)
        except ServiceTestError as exc:
            return WorkerResult(exit_code=code, statuses=statuses, report=report, error=str(exc))
        except Exception as exc:
            return WorkerResult(
                exit_code=code,
                statuses=statuses,
                report=report,
                error=f"the service tests failed to run: {describe_exception(exc)}",
            )
    return WorkerResult(
        exit_code=code,
        statuses={**statuses, **tests.outcomes},
        aliases=tests.aliases,
        report=report,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job file named by the only argument; exit 0 once ``result.json`` is written."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        sys.stderr.write("usage: python -m vitrine.mutants._worker FOLDER/job.json\n")
        return 2
    job_path = Path(args[0])
    job = WorkerJob.model_validate_json(job_path.read_text(encoding="utf-8"))
    result = run_job(job)
    result.write(job.folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Killer names and statuses: what a plan's report says about each gate, check and control.

A killer is anything whose status differs between the healthy subject and a mutant, so every
row of the report becomes one ``kind:name`` key with a status string that changes exactly when
what the row measured changes.
"""

from __future__ import annotations

from vitrine.reports._model import SuiteReport

__all__ = ["TEST_FAILURES", "report_statuses", "test_key"]

# A test kills a mutant only by failing where it passed: a skip under a mutant proves nothing.
TEST_FAILURES = frozenset({"failed", "error"})


def report_statuses(report: SuiteReport) -> dict[str, str]:
    """Every gate, check and control of ``report`` as ``kind:name`` -> status."""
    statuses = {f"gate:{row.name}": row.status for row in report.gates}
    for bench in report.benchmarks:
        for facts in bench.checks:
            # Successes over measured trials: a check that loses one success has changed.
            statuses[f"check:{bench.identity}/{facts.arm_id}/{facts.check_key}"] = (
                f"{facts.successes}/{facts.measured} passed"
            )
    if report.controls is not None:
        for control in report.controls.rows:
            statuses[f"control:{control.id}"] = "caught" if control.caught else "not caught"
    return statuses


def test_key(nodeid: str) -> str:
    return f"test:{nodeid}"

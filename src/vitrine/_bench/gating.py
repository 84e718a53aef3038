"""Gates for one evaluation: one per arm x check, with an optional, declared tolerance for gaps.

A gate passes when every measured trial of its check passed on its arm. A trial that was not
measured (the subject failed after every retry, or the check could not observe) makes the gate
not measured, unless the share of such trials is within ``tolerate_not_measured``: then the gate
is decided on the measured trials and a note says how many were left out. The gap is never
dropped silently: it is in the gate's evidence, its reason and the report's notes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vitrine._bench.model import Authority
from vitrine._bench.results import RunResult, ScenarioRow
from vitrine._gates import GateResult
from vitrine._outcomes import Census, MeasurementState, Observation
from vitrine.errors import InvalidArgumentError

__all__ = ["EvaluationGates", "check_tolerance", "evaluation_gates", "tolerance_text"]


def check_tolerance(tolerance: float) -> float:
    """Refuse a tolerance that is not a fraction in [0, 1)."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float):
        raise InvalidArgumentError(f"tolerate_not_measured must be a fraction, got {tolerance!r}")
    if not (math.isfinite(tolerance) and 0.0 <= tolerance < 1.0):
        raise InvalidArgumentError(
            f"tolerate_not_measured must be a fraction in [0, 1), got {tolerance!r}: a "
            "tolerance of 1 would let an evaluation pass with nothing measured"
        )
    return float(tolerance)


def tolerance_text(tolerance: float) -> str:
    return f"{tolerance * 100:g}%"


@dataclass(frozen=True, slots=True)
class EvaluationGates:
    """The gates of an evaluation and the notes that say what the tolerance let through."""

    gates: tuple[GateResult, ...]
    notes: tuple[str, ...]


def evaluation_gates(
    runs: Sequence[RunResult], arms: Sequence[str], tolerance: float = 0.0
) -> EvaluationGates:
    """One gate per (arm, check), named ``check[arm]``, in arm then check order."""
    check_tolerance(tolerance)
    gates: list[GateResult] = []
    notes: list[str] = []
    checks = runs[0].checks if runs else ()
    for arm in arms:
        arm_runs = [run for run in runs if run.arm_id == arm]
        for info in checks:
            trials = [(run, row) for run in arm_runs for row in run.rows_for(info.key)]
            name = f"{info.key}[{arm}]"
            observation, note = _gate_observation(
                [row.observation for _, row in trials], tolerance, _problems(trials)
            )
            gates.append(GateResult(name, Authority(info.authority), observation))
            if note:
                notes.append(f"gate {name}: {note}")
    return EvaluationGates(tuple(gates), tuple(notes))


# The trials a gate's evidence names as its problems; the counts say how many there were.
PROBLEMS_KEPT = 5


def _problems(trials: Sequence[tuple[RunResult, ScenarioRow]]) -> dict[str, Any]:
    """The first failed or not-measured trials, each as "case C, repetition R: why"."""
    lines: list[str] = []
    count = 0
    for run, row in trials:
        obs = row.observation
        if obs.state is MeasurementState.NOT_APPLICABLE or (obs.is_measured and obs.passed):
            continue
        count += 1
        if len(lines) < PROBLEMS_KEPT:
            why = obs.reason or obs.label or ("failed" if obs.is_measured else "not measured")
            lines.append(f"case {row.case_id}, repetition {run.repetition}: {why}")
    return {"problems": lines, "problem_count": count} if count else {}


def _gate_observation(
    observations: Sequence[Observation], tolerance: float, problems: Mapping[str, Any]
) -> tuple[Observation, str | None]:
    census = Census.of(observations)
    gap, total = census.not_measured, census.total
    measured = [o for o in observations if o.state is MeasurementState.MEASURED]
    successes = sum(1 for o in measured if o.passed)
    evidence = {
        "successes": successes,
        "measured": len(measured),
        "not_measured": gap,
        "not_applicable": census.not_applicable,
        "trials": total,
        "tolerate_not_measured": tolerance,
        **problems,
    }
    note = None
    if gap:
        share = gap / total
        if share > tolerance:
            why = (
                f"{gap} of {total} trials not measured, beyond the declared tolerance "
                f"{tolerance_text(tolerance)}"
            )
            return Observation.not_measured(why, evidence=evidence), None
        note = (
            f"{gap} of {total} trials not measured, within the declared tolerance "
            f"{tolerance_text(tolerance)}; decided on the {len(measured)} measured"
        )
    if not measured:
        return Observation.not_applicable("no trial applied to this check", evidence=evidence), None
    label = f"{successes}/{len(measured)} measured trials passed"
    if gap:
        label += f" ({gap} of {total} not measured, within {tolerance_text(tolerance)})"
    passed = successes == len(measured)
    return (
        Observation.measured(successes / len(measured), passed, evidence=evidence, label=label),
        note,
    )

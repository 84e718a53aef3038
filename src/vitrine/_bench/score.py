"""Scores over recorded runs: facts, never verdicts.

Everything here turns :class:`~vitrine.runs.RunResult` objects into numbers (collapsed
cells, censuses, intervals, floor and paired comparisons). Nothing here decides whether an arm
passed: gates elsewhere read these facts. Every function refuses inputs whose numbers would not
mean what they say (runs of different benchmarks, an arm counted twice, a mean dressed up as a
success count) with an error that explains why.

The order of operations is fixed: repetitions of one (case, arm) are collapsed into one cell
first, then cells are counted, then tested. A test never sees raw repetitions, so ten
repetitions of one case cannot pose as ten independent cases.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

# Through the module, not its names: a planted mutant patches vitrine._stats and must be seen.
from vitrine import _stats as stats
from vitrine._floors import ChanceFloor
from vitrine._outcomes import Census, MeasurementState, Observation
from vitrine.errors import ComparisonError, FloorComparisonError, ScoreError

if TYPE_CHECKING:
    from vitrine._bench.results import RunResult
    from vitrine._stats import Interval

__all__ = [
    "ALPHA",
    "BenchmarkScore",
    "CheckScore",
    "ComparisonError",
    "ExcludedPair",
    "FloorComparison",
    "FloorComparisonError",
    "PairOutcome",
    "ReferenceComparison",
    "RepCollapse",
    "ScoreError",
    "against_reference",
    "collapse",
]

# The significance level the power flags are stated against. It labels a design as unable to
# ever reach significance; it is not a pass threshold and nothing here gates on it.
ALPHA = 0.05


# --------------------------------------------------------------------------------------------
# Repetition collapse
# --------------------------------------------------------------------------------------------


class RepCollapse(StrEnum):
    """How the repetitions of one (case, arm) become one cell."""

    MEAN = "mean"
    MEDIAN = "median"
    ALL = "all"
    MAJORITY = "majority"
    ANY = "any"

    @property
    def binary(self) -> bool:
        """Whether the collapsed value is a 0/1 indicator rather than a summary of values."""
        return self in _BINARY_MODES

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self]


_BINARY_MODES = frozenset({RepCollapse.ALL, RepCollapse.MAJORITY, RepCollapse.ANY})

_DESCRIPTIONS = {
    RepCollapse.MEAN: "mean of the repetition values",
    RepCollapse.MEDIAN: "median of the repetition values",
    RepCollapse.ALL: "1 if every repetition >= pass_at, else 0",
    RepCollapse.MAJORITY: (
        "1 if more than half of the repetitions >= pass_at, else 0 (a split loses)"
    ),
    # Best-of-N reads far better than typical behaviour; the label must travel with the number.
    RepCollapse.ANY: (
        "best-of-N: 1 if any repetition >= pass_at, else 0 (optimistic: the best of N tries, "
        "not typical behaviour)"
    ),
}


def _check_pass_at(mode: RepCollapse, pass_at: float) -> float:
    if isinstance(pass_at, bool) or not isinstance(pass_at, int | float):
        raise ScoreError(f"pass_at must be a number, got {pass_at!r}")
    level = float(pass_at)
    if not math.isfinite(level):
        raise ScoreError(f"pass_at must be finite, got {level!r}: no value could be compared")
    # A binary collapse writes 1 or 0 and then re-reads its own pass flag as value >= pass_at.
    # Outside (0, 1] that re-read contradicts the indicator (a 0 that passes, a 1 that fails).
    if mode.binary and not 0.0 < level <= 1.0:
        raise ScoreError(
            f"collapse {mode.value!r} writes a 0/1 indicator whose pass flag is "
            f"value >= pass_at; pass_at={level!r} lies outside (0, 1], so a collapsed 0 would "
            "pass or a collapsed 1 would fail"
        )
    return level


def _label(mode: RepCollapse, count: int) -> str:
    if mode is RepCollapse.ANY:
        return f"best-of-{count} (any)"
    return f"{mode.value} of {count} repetitions"


def collapse(
    observations: Sequence[Observation], mode: RepCollapse, pass_at: float = 1.0
) -> Observation:
    """Collapse the repetitions of one (case, arm) into one cell.

    Worst state wins when repetitions disagree: any not-measured repetition makes the cell not
    measured, else any not-applicable one makes it not applicable; only a fully measured set of
    repetitions is collapsed to a value. Averaging over the measured subset instead would let an
    arm that crashed on half its tries report the score of the other half.

    The repetitions' own pass flags are not consulted: the threshold is applied once, here, to
    the values, so every cell of a comparison is judged by the same recorded ``pass_at``. The
    collapsed cell passes when its value is >= ``pass_at``.
    """
    mode = RepCollapse(mode)
    level = _check_pass_at(mode, pass_at)
    obs = tuple(observations)
    if not obs:
        raise ScoreError(
            "cannot collapse zero repetitions: an empty cell is not a zero score, the case was "
            "never observed"
        )
    count = len(obs)
    label = _label(mode, count)
    census = Census.of(obs)
    for state, build in (
        (MeasurementState.NOT_MEASURED, Observation.not_measured),
        (MeasurementState.NOT_APPLICABLE, Observation.not_applicable),
    ):
        gaps = [o for o in obs if o.state is state]
        if gaps:
            reason = (
                f"{len(gaps)} of {count} repetitions {state.value}, worst state wins "
                f"(first: {gaps[0].reason})"
            )
            return build(
                reason,
                evidence={
                    "collapse": mode.value,
                    "repetitions": count,
                    "census": census.to_dict(),
                },
                label=label,
            )

    # Every repetition is measured here, so every value is a float.
    values = [float(o.value) for o in obs if o.value is not None]
    reached = sum(1 for v in values if v >= level)
    if mode is RepCollapse.MEAN:
        value = math.fsum(values) / count
    elif mode is RepCollapse.MEDIAN:
        value = float(statistics.median(values))
    elif mode is RepCollapse.ALL:
        value = 1.0 if reached == count else 0.0
    elif mode is RepCollapse.MAJORITY:
        value = 1.0 if reached * 2 > count else 0.0
    else:
        value = 1.0 if reached > 0 else 0.0
    return Observation.measured(
        value,
        value >= level,
        evidence={
            "collapse": mode.value,
            "repetitions": count,
            "pass_at": level,
            "values": values,
            "reached_pass_at": reached,
        },
        label=label,
    )


# --------------------------------------------------------------------------------------------
# Floor comparison
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FloorComparison:
    """How a success count compares with the check's chance floor.

    ``p_value`` is ``P(X >= successes)`` with ``X ~ Bin(n, floor rate)``. A not-derivable floor
    has no rate, so there is no p-value; ``min_attainable_p`` is then ``0.5**n``, the bound a
    clean sweep would reach against a 1/2 reference, shown so that a design too small to say
    anything is visible even without a floor. With a derivable floor it is the p-value of a
    clean sweep, ``rate**n``.
    """

    floor: ChanceFloor
    successes: int
    n: int
    p_value: float | None
    min_attainable_p: float

    @property
    def derivable(self) -> bool:
        return self.floor.derivable

    @property
    def floor_display(self) -> str:
        return self.floor.describe()

    @property
    def underpowered(self) -> bool:
        """No outcome of this size could reach ``ALPHA``: a null result here is no evidence."""
        return self.min_attainable_p > ALPHA

    @property
    def power_state(self) -> str:
        return "underpowered" if self.underpowered else "adequate"

    @property
    def undecidable(self) -> bool:
        return self.n == 0

    @classmethod
    def of(
        cls,
        cells: Mapping[str, Observation] | Sequence[Observation],
        floor: ChanceFloor,
    ) -> FloorComparison:
        """Count successes over measured cells and test them against ``floor``.

        Refuses measured values other than exactly 0 or 1: a binomial test counts successes,
        and a mean of repetitions (0.5, 0.67) is not a count of anything.
        """
        named: Iterable[tuple[str, Observation]] = (
            cells.items()
            if isinstance(cells, Mapping)
            else ((f"#{i}", o) for i, o in enumerate(cells))
        )
        successes = 0
        n = 0
        for name, obs in named:
            if not obs.is_measured:
                continue
            if obs.value not in (0.0, 1.0):
                raise FloorComparisonError(
                    f"a floor comparison counts successes, so every measured value must be "
                    f"exactly 0 or 1; cell {name} has {obs.value!r}. A mean or median of "
                    "repetitions is not a success count: collapse with all, majority or any, "
                    "or report the mean without a floor test"
                )
            n += 1
            successes += obs.value == 1.0

        if floor.derivable:
            rate = floor.value
            return cls(
                floor,
                successes,
                n,
                stats.binomial_tail_p(successes, n, rate),
                stats.binomial_tail_p(n, n, rate),
            )
        return cls(floor, successes, n, None, stats.min_attainable_one_sided_p(n))

    def to_dict(self) -> dict[str, Any]:
        return {
            "floor": self.floor.to_dict(),
            "floor_display": self.floor_display,
            "successes": self.successes,
            "n": self.n,
            "p_value": self.p_value,
            "p_value_definition": (
                "P(X >= successes), X ~ Bin(n, floor rate)"
                if self.derivable
                else "none: the floor is not derivable"
            ),
            "min_attainable_p": self.min_attainable_p,
            "min_attainable_p_definition": (
                "floor rate ** n (a clean sweep)" if self.derivable else "0.5 ** n (reference)"
            ),
            "alpha": ALPHA,
            "underpowered": self.underpowered,
            "power_state": self.power_state,
            "undecidable": self.undecidable,
        }


# --------------------------------------------------------------------------------------------
# Run validation and cell extraction
# --------------------------------------------------------------------------------------------


def _describe_definition(run: RunResult) -> str:
    return f"{run.identity} ({run.definition_hash})"


def _same_definition(a: RunResult, b: RunResult, context: str) -> None:
    if a.identity != b.identity:
        raise ComparisonError(
            f"{context}cannot compare runs of different benchmarks ({a.identity} vs "
            f"{b.identity}): their scores do not measure the same thing"
        )
    if a.definition_hash != b.definition_hash:
        raise ComparisonError(
            f"{context}runs of {a.identity} carry different definition content hashes "
            f"({a.definition_hash} vs {b.definition_hash}): the cases, checks or bindings "
            "changed under the same version, so their scores do not measure the same thing"
        )
    if a.case_ids != b.case_ids or tuple(c.key for c in a.checks) != tuple(c.key for c in b.checks):
        raise ComparisonError(
            f"{context}runs {a.run_id} and {b.run_id} claim the same definition "
            f"{_describe_definition(a)} but record different cases or checks: at least one "
            "run record is inconsistent with its definition"
        )


def _check_repetitions(arm_id: str, runs: Sequence[RunResult]) -> None:
    seen: dict[int, str] = {}
    for run in runs:
        if run.repetition in seen:
            raise ComparisonError(
                f"arm {arm_id!r} has two runs numbered repetition {run.repetition} "
                f"({seen[run.repetition]} and {run.run_id}): a repetition counted twice would "
                "weigh one trial double"
            )
        seen[run.repetition] = run.run_id


def _check_key_known(run: RunResult, check_key: str) -> None:
    keys = tuple(c.key for c in run.checks)
    if check_key not in keys:
        raise ComparisonError(
            f"check {check_key!r} is not in benchmark {run.identity} (its checks: "
            f"{', '.join(keys) or 'none'}): there is nothing recorded to score"
        )


def _validate_side(runs: Sequence[RunResult], side: str) -> str:
    """One side of a comparison: non-empty, one arm, one definition, distinct repetitions."""
    if not runs:
        raise ComparisonError(
            f"no {side} runs: an empty side is not a zero score, there is nothing to compare"
        )
    first = runs[0]
    for run in runs[1:]:
        _same_definition(first, run, f"the {side} side mixes definitions: ")
    arms = sorted({run.arm_id for run in runs})
    if len(arms) > 1:
        raise ComparisonError(
            f"the {side} side mixes arms ({', '.join(repr(a) for a in arms)}): one side of a "
            "comparison is one arm, or its repetitions would pool different systems"
        )
    _check_repetitions(first.arm_id, runs)
    return first.arm_id


def _cells(
    runs: Sequence[RunResult], check_key: str, mode: RepCollapse, pass_at: float
) -> tuple[dict[str, Observation], int]:
    """Collapsed cell per case, and how many repetition observations were recorded.

    A run with no row for a case contributes a not-measured repetition: a missing row is an
    absence, and absence must fail closed rather than vanish from the denominator.
    """
    case_ids = runs[0].case_ids
    known = set(case_ids)
    per_case: dict[str, list[Observation]] = {case_id: [] for case_id in case_ids}
    recorded = 0
    for run in runs:
        seen: set[str] = set()
        for row in run.rows_for(check_key):
            if row.case_id not in known:
                raise ScoreError(
                    f"run {run.run_id} has a {check_key!r} row for case {row.case_id!r}, which "
                    "its case list does not name: the run record is inconsistent"
                )
            if row.case_id in seen:
                raise ScoreError(
                    f"run {run.run_id} records case {row.case_id!r} twice for {check_key!r}: "
                    "one trial cannot have two observations"
                )
            seen.add(row.case_id)
            per_case[row.case_id].append(row.observation)
            recorded += 1
        for case_id in case_ids:
            if case_id not in seen:
                per_case[case_id].append(
                    Observation.not_measured(
                        f"run {run.run_id} recorded no {check_key} observation for this case"
                    )
                )
    cells = {case_id: collapse(obs, mode, pass_at) for case_id, obs in per_case.items()}
    return cells, recorded


# --------------------------------------------------------------------------------------------
# Check score
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckScore:
    """One (arm, check): collapsed cells and the facts counted over them.

    The census counts collapsed per-case cells, not repetitions. ``successes`` counts measured
    cells that pass; ``n`` is the measured denominator. The Wilson interval covers the measured
    pass/fail cells and is None when nothing was measured: a zero denominator has no estimate.
    """

    definition_identity: str
    definition_hash: str
    arm_id: str
    check_key: str
    collapse: RepCollapse
    pass_at: float
    repetitions: int
    cells: Mapping[str, Observation]
    census: Census
    successes: int
    n: int
    mean_value: float | None
    interval: Interval | None
    floor: ChanceFloor

    @property
    def floor_comparison(self) -> FloorComparison:
        """The floor test over the cells; raises :class:`FloorComparisonError` on non-0/1 values.

        Computed on access rather than at construction so that a mean score stays readable
        even though it cannot be tested against a floor.
        """
        return FloorComparison.of(self.cells, self.floor)

    @classmethod
    def of(
        cls,
        runs: Sequence[RunResult],
        check_key: str,
        collapse: RepCollapse = RepCollapse.MEAN,
        pass_at: float = 1.0,
    ) -> CheckScore:
        """Score one arm's runs (its repetitions) on one check."""
        mode = RepCollapse(collapse)
        arm_id = _validate_side(runs, "scored")
        first = runs[0]
        _check_key_known(first, check_key)
        cells, _ = _cells(runs, check_key, mode, pass_at)
        census = Census.of(cells.values())
        measured = [o for o in cells.values() if o.is_measured]
        successes = sum(1 for o in measured if o.passed)
        values = [float(o.value) for o in measured if o.value is not None]

        return cls(
            definition_identity=first.identity,
            definition_hash=first.definition_hash,
            arm_id=arm_id,
            check_key=check_key,
            collapse=mode,
            pass_at=float(pass_at),
            repetitions=len(runs),
            cells=MappingProxyType(cells),
            census=census,
            successes=successes,
            n=len(measured),
            mean_value=math.fsum(values) / len(values) if values else None,
            interval=stats.wilson_interval(successes, len(measured)),
            floor=first.check(check_key).floor,
        )

    def to_dict(self) -> dict[str, Any]:
        try:
            floor: dict[str, Any] = self.floor_comparison.to_dict()
        except FloorComparisonError as exc:
            # The refusal is itself a fact a report must show, not a gap to paper over.
            floor = {"refused": str(exc), "floor_display": self.floor.describe()}
        return {
            "definition": self.definition_identity,
            "definition_hash": self.definition_hash,
            "arm": self.arm_id,
            "check": self.check_key,
            "collapse": self.collapse.value,
            "collapse_description": self.collapse.description,
            "pass_at": self.pass_at,
            "repetitions": self.repetitions,
            "cells": {case_id: obs.to_dict() for case_id, obs in self.cells.items()},
            "census": self.census.to_dict(),
            "census_unit": "collapsed per-case cells",
            "successes": self.successes,
            "n": self.n,
            "mean_value": self.mean_value,
            "wilson_95": (
                None
                if self.interval is None
                else {"lower": self.interval.lower, "upper": self.interval.upper}
            ),
            "floor_comparison": floor,
        }


# --------------------------------------------------------------------------------------------
# Paired comparison against a reference arm
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExcludedPair:
    """A case left out of the sign test because one side has no measured cell."""

    case_id: str
    reference_state: MeasurementState
    challenger_state: MeasurementState

    @property
    def reason(self) -> str:
        sides = [
            f"{side} {state.value}"
            for side, state in (
                ("reference", self.reference_state),
                ("challenger", self.challenger_state),
            )
            if state is not MeasurementState.MEASURED
        ]
        return " and ".join(sides)

    def to_dict(self) -> dict[str, str]:
        return {
            "case_id": self.case_id,
            "reference_state": self.reference_state.value,
            "challenger_state": self.challenger_state.value,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class PairOutcome:
    """A measured pair: delta = challenger - reference; > 0 wins, < 0 loses, 0 ties."""

    case_id: str
    reference_value: float
    challenger_value: float

    @property
    def delta(self) -> float:
        return self.challenger_value - self.reference_value

    @property
    def outcome(self) -> str:
        d = self.delta
        return "win" if d > 0 else "loss" if d < 0 else "tie"

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "reference_value": self.reference_value,
            "challenger_value": self.challenger_value,
            "delta": self.delta,
            "outcome": self.outcome,
        }


def _pair_state(a: MeasurementState, b: MeasurementState) -> MeasurementState:
    # A pair is only as measured as its worse side, matching the collapse rule.
    for state in (MeasurementState.NOT_MEASURED, MeasurementState.NOT_APPLICABLE):
        if state in (a, b):
            return state
    return MeasurementState.MEASURED


@dataclass(frozen=True)
class ReferenceComparison:
    """A paired sign test of one challenger arm against a reference arm on one check.

    The unit is the case: each side's repetitions are collapsed first, so ``cases`` pairs are
    compared, never raw repetitions. Pairs where either side is not measured or not applicable
    are excluded and counted; they are never ties, because a tie claims both sides were
    observed to be equal.
    """

    definition_key: str
    definition_version: str
    definition_hash: str
    check_key: str
    reference_arm: str
    challenger_arm: str
    collapse: RepCollapse
    pass_at: float
    cases: int
    total_repetitions: int
    mean_repetitions_per_case: float
    wins: int
    losses: int
    ties: int
    excluded_pairs: int
    exclusions: tuple[ExcludedPair, ...]
    effective_n: int
    p_value: float
    min_attainable_p: float
    mean_delta: float | None
    challenger_census: Census
    reference_census: Census
    pair_census: Census
    underpowered_by_construction: bool
    undecidable: bool
    pairs: tuple[PairOutcome, ...] = field(default=())

    @property
    def definition_identity(self) -> str:
        return f"{self.definition_key}@{self.definition_version}"

    @property
    def census(self) -> Census:
        """The challenger's collapsed cells (see ``pair_census`` for the pairs)."""
        return self.challenger_census

    @property
    def exclusion_reasons(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for pair in self.exclusions:
            counts[pair.reason] = counts.get(pair.reason, 0) + 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "definition": self.definition_identity,
            "definition_key": self.definition_key,
            "definition_version": self.definition_version,
            "definition_hash": self.definition_hash,
            "check": self.check_key,
            "reference_arm": self.reference_arm,
            "challenger_arm": self.challenger_arm,
            "collapse": self.collapse.value,
            "collapse_description": self.collapse.description,
            "pass_at": self.pass_at,
            "cases": self.cases,
            "total_repetitions": self.total_repetitions,
            "mean_repetitions_per_case": self.mean_repetitions_per_case,
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "excluded_pairs": self.excluded_pairs,
            "exclusion_reasons": self.exclusion_reasons,
            "exclusions": [pair.to_dict() for pair in self.exclusions],
            "effective_n": self.effective_n,
            "p_value": self.p_value,
            "p_value_definition": "exact two-sided sign test over wins and losses",
            "min_attainable_p": self.min_attainable_p,
            "mean_delta": self.mean_delta,
            "delta_definition": "challenger - reference",
            "census": {
                "challenger_cells": self.challenger_census.to_dict(),
                "reference_cells": self.reference_census.to_dict(),
                "pairs": self.pair_census.to_dict(),
            },
            "alpha": ALPHA,
            "underpowered_by_construction": self.underpowered_by_construction,
            "undecidable": self.undecidable,
            "pairs": [pair.to_dict() for pair in self.pairs],
        }


def against_reference(
    reference_runs: Sequence[RunResult],
    challenger_runs: Sequence[RunResult],
    check_key: str,
    collapse: RepCollapse = RepCollapse.ALL,
    pass_at: float = 1.0,
) -> ReferenceComparison:
    """Compare a challenger arm with a reference arm on one check, case by case.

    Each side must be one arm of one definition with distinct repetition numbers, both sides
    must share the definition (key, version and content hash), and the arms must differ: an arm
    compared with itself would manufacture ties.
    """
    mode = RepCollapse(collapse)
    reference_arm = _validate_side(reference_runs, "reference")
    challenger_arm = _validate_side(challenger_runs, "challenger")
    ref, chal = reference_runs[0], challenger_runs[0]
    _same_definition(ref, chal, "")
    if reference_arm == challenger_arm:
        raise ComparisonError(
            f"arm {reference_arm!r} is on both sides: an arm compared with itself only "
            "manufactures ties, its repetitions belong on one side"
        )
    _check_key_known(ref, check_key)

    ref_cells, ref_recorded = _cells(reference_runs, check_key, mode, pass_at)
    chal_cells, chal_recorded = _cells(challenger_runs, check_key, mode, pass_at)

    pairs: list[PairOutcome] = []
    exclusions: list[ExcludedPair] = []
    pair_states: list[MeasurementState] = []
    for case_id in ref.case_ids:
        r, c = ref_cells[case_id], chal_cells[case_id]
        pair_states.append(_pair_state(r.state, c.state))
        if r.value is None or c.value is None:
            exclusions.append(ExcludedPair(case_id, r.state, c.state))
        else:
            pairs.append(PairOutcome(case_id, r.value, c.value))

    wins = sum(1 for p in pairs if p.outcome == "win")
    losses = sum(1 for p in pairs if p.outcome == "loss")
    ties = len(pairs) - wins - losses
    effective_n = wins + losses
    cases = len(ref.case_ids)
    total = ref_recorded + chal_recorded

    min_p = stats.min_attainable_p(effective_n)
    return ReferenceComparison(
        definition_key=ref.definition_key,
        definition_version=ref.definition_version,
        definition_hash=ref.definition_hash,
        check_key=check_key,
        reference_arm=reference_arm,
        challenger_arm=challenger_arm,
        collapse=mode,
        pass_at=float(pass_at),
        cases=cases,
        total_repetitions=total,
        # Per case and per side: the two arms' repetitions are averaged, not summed.
        mean_repetitions_per_case=total / cases / 2 if cases else 0.0,
        wins=wins,
        losses=losses,
        ties=ties,
        excluded_pairs=len(exclusions),
        exclusions=tuple(exclusions),
        effective_n=effective_n,
        p_value=stats.sign_test_p(wins, losses),
        min_attainable_p=min_p,
        mean_delta=math.fsum(p.delta for p in pairs) / len(pairs) if pairs else None,
        challenger_census=Census.of(chal_cells.values()),
        reference_census=Census.of(ref_cells.values()),
        pair_census=Census.of(pair_states),
        underpowered_by_construction=min_p > ALPHA,
        undecidable=effective_n == 0,
        pairs=tuple(pairs),
    )


# --------------------------------------------------------------------------------------------
# Benchmark score
# --------------------------------------------------------------------------------------------


class BenchmarkScore:
    """All runs of one benchmark definition, grouped by arm, scored on demand."""

    def __init__(self, runs_by_arm: Mapping[str, Sequence[RunResult]]) -> None:
        if not runs_by_arm:
            raise ScoreError("no runs to score: an empty benchmark is not a zero score")
        grouped = {arm: tuple(runs) for arm, runs in runs_by_arm.items()}
        for arm, runs in grouped.items():
            if _validate_side(runs, f"arm {arm!r}") != arm:
                raise ScoreError(f"runs filed under arm {arm!r} belong to another arm")
        self._first = next(iter(grouped.values()))[0]
        for runs in grouped.values():
            _same_definition(self._first, runs[0], "")
        self._runs: Mapping[str, tuple[RunResult, ...]] = MappingProxyType(grouped)

    @classmethod
    def of(cls, runs: Sequence[RunResult]) -> BenchmarkScore:
        """Group ``runs`` by arm, in first-seen order; refuse mixed definitions."""
        if not runs:
            raise ScoreError("no runs to score: an empty benchmark is not a zero score")
        for run in runs[1:]:
            _same_definition(runs[0], run, "")
        grouped: dict[str, list[RunResult]] = {}
        for run in runs:
            grouped.setdefault(run.arm_id, []).append(run)
        return cls(grouped)

    @property
    def arms(self) -> tuple[str, ...]:
        return tuple(self._runs)

    @property
    def definition_identity(self) -> str:
        return self._first.identity

    @property
    def definition_hash(self) -> str:
        return self._first.definition_hash

    @property
    def check_keys(self) -> tuple[str, ...]:
        return tuple(c.key for c in self._first.checks)

    @property
    def case_ids(self) -> tuple[str, ...]:
        return self._first.case_ids

    def runs(self, arm_id: str) -> tuple[RunResult, ...]:
        try:
            return self._runs[arm_id]
        except KeyError:
            raise ScoreError(
                f"no runs of arm {arm_id!r} in {self.definition_identity} (arms: "
                f"{', '.join(self.arms)})"
            ) from None

    def check_score(
        self,
        arm_id: str,
        check_key: str,
        collapse: RepCollapse = RepCollapse.MEAN,
        pass_at: float = 1.0,
    ) -> CheckScore:
        return CheckScore.of(self.runs(arm_id), check_key, collapse, pass_at)

    def against_reference(
        self,
        reference_arm: str,
        collapse: RepCollapse = RepCollapse.ALL,
        pass_at: float = 1.0,
    ) -> list[ReferenceComparison]:
        """One comparison per (challenger arm x check), challengers in first-seen order.

        With no arm besides the reference there is nothing to compare, and an empty list could
        be read as "nothing lost", so that is refused.
        """
        reference = self.runs(reference_arm)
        challengers = [arm for arm in self.arms if arm != reference_arm]
        if not challengers:
            raise ComparisonError(
                f"only the reference arm {reference_arm!r} was run: there is no challenger to "
                "compare against it"
            )
        return [
            against_reference(reference, self._runs[arm], key, collapse, pass_at)
            for arm in challengers
            for key in self.check_keys
        ]

    def to_dict(
        self,
        collapse: RepCollapse = RepCollapse.MEAN,
        pass_at: float = 1.0,
        reference_arm: str | None = None,
        comparison_collapse: RepCollapse = RepCollapse.ALL,
    ) -> dict[str, Any]:
        """Every (arm, check) score, plus the reference comparisons when a reference is named."""
        data: dict[str, Any] = {
            "definition": self.definition_identity,
            "definition_hash": self.definition_hash,
            "cases": list(self.case_ids),
            "checks": list(self.check_keys),
            "arms": {
                arm: {
                    "runs": [run.run_id for run in runs],
                    "repetitions": sorted(run.repetition for run in runs),
                }
                for arm, runs in self._runs.items()
            },
            "check_scores": [
                self.check_score(arm, key, collapse, pass_at).to_dict()
                for arm in self.arms
                for key in self.check_keys
            ],
            "reference_arm": reference_arm,
            "comparisons": None,
        }
        if reference_arm is not None:
            data["comparisons"] = [
                c.to_dict()
                for c in self.against_reference(reference_arm, comparison_collapse, pass_at)
            ]
        return data

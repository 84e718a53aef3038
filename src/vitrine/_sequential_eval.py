"""The sequential paired comparison as a way to run an evaluation: case by case, until it stops.

:func:`compare_sequentially` runs the reference and the challenger on one case at a time
(every repetition of that case), turns the case into one pair with the same collapse and
comparison as :func:`vitrine._bench.score.against_reference`, feeds the pair to a
:class:`~vitrine.stats.SequentialSignTest`, and stops at the first case that ends the
test. The cases after it are never run. Because the test is anytime-valid, stopping there
keeps its type I error.

Each case's runs are runs of a one-case definition (same key and version, its own content
hash), so both arms of a case compare cleanly and no run claims a case it did not run.

:func:`compare_sequentially_with` is the same loop with the running left to the caller: a
``run_arm(one_case_definition, arm, repetition)`` callback runs one arm for one repetition
of one case and returns the sealed run, so a caller with its own store, progress, timeouts or
spend meter keeps them. :func:`pooled_against_reference` scores such one-case runs as the
fixed design scores runs of the whole definition: each case compared alone, then pooled.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

# Through the module, not its names: a planted mutant patches vitrine._stats and must be seen.
from vitrine import _stats as stats
from vitrine._bench.model import Arm, BenchmarkDefinition, Case
from vitrine._bench.results import RunResult
from vitrine._bench.runner import run_benchmark
from vitrine._bench.score import (
    ALPHA,
    BenchmarkScore,
    ReferenceComparison,
    RepCollapse,
    against_reference,
)
from vitrine._outcomes import Census
from vitrine._sequential import PairOutcome, SequentialResult, SequentialSignTest
from vitrine.errors import ComparisonError, InvalidArgumentError
from vitrine.store import RunStore

__all__ = [
    "RunArm",
    "SequentialComparison",
    "compare_sequentially",
    "compare_sequentially_with",
    "one_case_definition",
    "pooled_against_reference",
]

# Runs one arm for one repetition of a one-case definition and returns the sealed run.
RunArm = Callable[[BenchmarkDefinition, Arm, int], Awaitable[RunResult]]


@dataclass(frozen=True)
class SequentialComparison:
    """Where the sequential comparison stopped, the pairs it saw, and the runs it made."""

    result: SequentialResult
    check_key: str
    pairs: tuple[tuple[str, PairOutcome], ...]
    excluded: tuple[str, ...]  # cases whose pair was not measured on either side
    not_run: tuple[str, ...]
    runs: tuple[RunResult, ...] = field(repr=False)

    @property
    def stopping_case(self) -> str | None:
        """The case at which the test stopped; None when the cases ran out first."""
        if not self.result.stopped:
            return None
        return self.pairs[-1][0] if self.pairs else None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.result.to_dict(),
            "check": self.check_key,
            "pairs": [{"case_id": c, "outcome": o} for c, o in self.pairs],
            "excluded_cases": list(self.excluded),
            "cases_not_run": list(self.not_run),
        }


def one_case_definition(definition: BenchmarkDefinition, case: Case) -> BenchmarkDefinition:
    """``definition`` with only ``case``: same key, version, checks and bindings."""
    return BenchmarkDefinition(
        definition.key,
        definition.version,
        [case],
        definition.checks,
        definition.bindings,
        definition.description,
    )


async def compare_sequentially(
    definition: BenchmarkDefinition,
    reference: Arm,
    challenger: Arm,
    check_key: str,
    test: SequentialSignTest | None = None,
    *,
    repetitions: int = 1,
    collapse: RepCollapse | str = RepCollapse.ALL,
    pass_at: float = 1.0,
    store: RunStore | None = None,
    concurrency: int = 16,
    trial_timeout_s: float = 120.0,
) -> SequentialComparison:
    """Run ``definition``'s cases in order until ``test`` stops; see the module docstring."""

    async def run_arm(one: BenchmarkDefinition, arm: Arm, repetition: int) -> RunResult:
        return await run_benchmark(
            one,
            arm,
            repetition=repetition,
            store=store,
            concurrency=concurrency,
            trial_timeout_s=trial_timeout_s,
        )

    return await compare_sequentially_with(
        definition,
        reference,
        challenger,
        check_key,
        test,
        run_arm=run_arm,
        repetitions=repetitions,
        collapse=collapse,
        pass_at=pass_at,
    )


async def compare_sequentially_with(
    definition: BenchmarkDefinition,
    reference: Arm,
    challenger: Arm,
    check_key: str,
    test: SequentialSignTest | None = None,
    *,
    run_arm: RunArm,
    repetitions: int = 1,
    collapse: RepCollapse | str = RepCollapse.ALL,
    pass_at: float = 1.0,
) -> SequentialComparison:
    """:func:`compare_sequentially`, each run made by ``run_arm(one_case, arm, repetition)``.

    For each case in order: every repetition of the reference, then of the challenger, on
    the case's one-case definition; then the pair, then the test. ``run_arm`` must run the
    definition it is given (the pair is read from the runs it returns).
    """
    design = test or SequentialSignTest()
    if repetitions < 1:
        raise InvalidArgumentError(f"repetitions count from 1, got {repetitions}")
    if check_key not in {c.key for c in definition.checks}:
        known = ", ".join(c.key for c in definition.checks)
        raise InvalidArgumentError(f"unknown check {check_key!r}: the definition has {known}")
    counts = {"win": 0, "loss": 0, "tie": 0}
    pairs: list[tuple[str, PairOutcome]] = []
    excluded: list[str] = []
    runs: list[RunResult] = []
    cases = definition.cases
    for index, case in enumerate(cases):
        one = one_case_definition(definition, case)
        sides: list[Sequence[RunResult]] = []
        for arm in (reference, challenger):
            made = [await run_arm(one, arm, repetition) for repetition in range(1, repetitions + 1)]
            runs.extend(made)
            sides.append(made)
        comparison = against_reference(
            sides[0], sides[1], check_key, RepCollapse(collapse), pass_at
        )
        if not comparison.pairs:
            excluded.append(case.id)
            continue
        outcome = cast("PairOutcome", comparison.pairs[0].outcome)
        pairs.append((case.id, outcome))
        counts[outcome] += 1
        state = design.verdict(counts["win"], counts["loss"], counts["tie"])
        if state.stopped:
            return SequentialComparison(
                state,
                check_key,
                tuple(pairs),
                tuple(excluded),
                tuple(c.id for c in cases[index + 1 :]),
                tuple(runs),
            )
    ran_out = design.run([o for _, o in pairs])
    return SequentialComparison(ran_out, check_key, tuple(pairs), tuple(excluded), (), tuple(runs))


def pooled_against_reference(
    definition: BenchmarkDefinition,
    runs: Sequence[RunResult],
    reference_arm: str,
    collapse: RepCollapse = RepCollapse.ALL,
    pass_at: float = 1.0,
) -> list[ReferenceComparison]:
    """The reference comparisons of ``definition`` over runs of its one-case definitions.

    What :meth:`BenchmarkScore.against_reference` gives for runs of the whole definition, for
    the one-case runs a sequential comparison makes: each case's runs are compared alone (the
    collapse and the pair of a case do not depend on the other cases), then the cases are
    pooled, one comparison per (challenger arm x check). ``cases`` counts the cases that were
    run, and ``definition_hash`` is ``definition``'s. Every run must be of the one-case
    definition of one of its cases; a case run without both arms is refused.
    """
    slices = {
        case.id: one_case_definition(definition, case).content_hash for case in definition.cases
    }
    by_case: dict[str, list[RunResult]] = {}
    for run in runs:
        case_id = run.case_ids[0] if len(run.case_ids) == 1 else None
        if (
            run.definition_key != definition.key
            or run.definition_version != definition.version
            or case_id is None
            or slices.get(case_id) != run.definition_hash
        ):
            raise ComparisonError(
                f"run {run.run_id} is not a run of a one-case definition of "
                f"{definition.identity} ({run.identity}, {run.definition_hash}): it cannot be "
                "pooled with them"
            )
        by_case.setdefault(case_id, []).append(run)
    if not by_case:
        raise ComparisonError("no runs to pool: an empty comparison is not a tie")
    per_case = [
        BenchmarkScore.of(by_case[case.id]).against_reference(reference_arm, collapse, pass_at)
        for case in definition.cases
        if case.id in by_case
    ]
    if len({len(comparisons) for comparisons in per_case}) > 1:
        raise ComparisonError(
            "the cases were not run with the same arms: their comparisons cannot be pooled"
        )
    return [_pooled(definition, parts) for parts in zip(*per_case, strict=True)]


def _pooled(
    definition: BenchmarkDefinition, parts: Sequence[ReferenceComparison]
) -> ReferenceComparison:
    first = parts[0]
    if any(
        (p.challenger_arm, p.check_key) != (first.challenger_arm, first.check_key) for p in parts
    ):
        raise ComparisonError(
            "the cases were not run with the same arms: their comparisons cannot be pooled"
        )
    pairs = tuple(pair for p in parts for pair in p.pairs)
    wins = sum(p.wins for p in parts)
    losses = sum(p.losses for p in parts)
    cases = sum(p.cases for p in parts)
    total = sum(p.total_repetitions for p in parts)
    effective_n = wins + losses
    min_p = stats.min_attainable_p(effective_n)
    return ReferenceComparison(
        definition_key=first.definition_key,
        definition_version=first.definition_version,
        definition_hash=definition.content_hash,
        check_key=first.check_key,
        reference_arm=first.reference_arm,
        challenger_arm=first.challenger_arm,
        collapse=first.collapse,
        pass_at=first.pass_at,
        cases=cases,
        total_repetitions=total,
        mean_repetitions_per_case=total / cases / 2 if cases else 0.0,
        wins=wins,
        losses=losses,
        ties=sum(p.ties for p in parts),
        excluded_pairs=sum(p.excluded_pairs for p in parts),
        exclusions=tuple(e for p in parts for e in p.exclusions),
        effective_n=effective_n,
        p_value=stats.sign_test_p(wins, losses),
        min_attainable_p=min_p,
        mean_delta=math.fsum(p.delta for p in pairs) / len(pairs) if pairs else None,
        challenger_census=sum((p.challenger_census for p in parts), Census()),
        reference_census=sum((p.reference_census for p in parts), Census()),
        pair_census=sum((p.pair_census for p in parts), Census()),
        underpowered_by_construction=min_p > ALPHA,
        undecidable=effective_n == 0,
        pairs=pairs,
    )

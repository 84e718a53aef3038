"""The sequential paired comparison as a way to run an evaluation: case by case, until it stops.

:func:`compare_sequentially` runs the reference and the challenger on one case at a time
(every repetition of that case), turns the case into one pair with the same collapse and
comparison as :func:`vitrine._bench.score.against_reference`, feeds the pair to a
:class:`~vitrine.stats.SequentialSignTest`, and stops at the first case that ends the
test. The cases after it are never run. Because the test is anytime-valid, stopping there
keeps its type I error.

Each case's runs are runs of a one-case definition (same key and version, its own content
hash), so both arms of a case compare cleanly and no run claims a case it did not run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from vitrine._bench.model import Arm, BenchmarkDefinition
from vitrine._bench.results import RunResult
from vitrine._bench.runner import run_benchmark
from vitrine._bench.score import RepCollapse, against_reference
from vitrine._sequential import PairOutcome, SequentialResult, SequentialSignTest
from vitrine.errors import InvalidArgumentError
from vitrine.store import RunStore

__all__ = ["SequentialComparison", "compare_sequentially"]


@dataclass(frozen=True)
class SequentialComparison:
    """Where the sequential comparison stopped, the pairs it saw, and the runs it made."""

    result: SequentialResult
    check_key: str
    pairs: tuple[tuple[str, PairOutcome], ...]
    excluded: tuple[str, ...]  # cases whose pair was not measured on either side
    not_run: tuple[str, ...]
    runs: tuple[RunResult, ...] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.result.to_dict(),
            "check": self.check_key,
            "pairs": [{"case_id": c, "outcome": o} for c, o in self.pairs],
            "excluded_cases": list(self.excluded),
            "cases_not_run": list(self.not_run),
        }


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
        one = BenchmarkDefinition(
            definition.key,
            definition.version,
            [case],
            definition.checks,
            definition.bindings,
            definition.description,
        )
        sides: list[Sequence[RunResult]] = []
        for arm in (reference, challenger):
            made = [
                await run_benchmark(
                    one,
                    arm,
                    repetition=repetition,
                    store=store,
                    concurrency=concurrency,
                    trial_timeout_s=trial_timeout_s,
                )
                for repetition in range(1, repetitions + 1)
            ]
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

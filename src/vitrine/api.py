"""The notebook API: evaluate arms of a benchmark in one call and get runs plus their score.

::

    result = vitrine.evaluate(definition, [agent, workflow], repetitions=2, reference="agent")
    result.score.check_score("workflow", "screened-deliverable")
    result.comparisons  # one per challenger arm x check

Each arm x repetition is one separate runner call, i.e. one run (one run directory when a store
is given), exactly as the command line runs them; the score is computed from those runs alone.
Inside an event loop (a notebook cell, an async application) use :func:`evaluate_async`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vitrine.bench.model import Arm, BenchmarkDefinition
from vitrine.bench.results import RunResult

if TYPE_CHECKING:
    from vitrine.bench.events import EventSink
    from vitrine.bench.score import BenchmarkScore, ReferenceComparison, RepCollapse
    from vitrine.store import RunStore

__all__ = ["EvalResult", "evaluate", "evaluate_async"]


@dataclass(frozen=True)
class EvalResult:
    """Every run of one evaluation, the score over them, and the reference comparisons.

    ``comparisons`` is empty when no reference arm was named; it is never a stand-in for
    "no differences".
    """

    definition: BenchmarkDefinition
    runs: tuple[RunResult, ...]
    score: BenchmarkScore
    reference: str | None
    comparisons: tuple[ReferenceComparison, ...]
    store_root: Path | None

    @property
    def arms(self) -> tuple[str, ...]:
        return self.score.arms

    def runs_for(self, arm_id: str) -> tuple[RunResult, ...]:
        return self.score.runs(arm_id)

    @property
    def run_dirs(self) -> tuple[Path, ...]:
        return tuple(Path(run.run_dir) for run in self.runs if run.run_dir is not None)

    def to_dict(self) -> dict[str, Any]:
        data = self.score.to_dict(reference_arm=self.reference)
        data["store_root"] = None if self.store_root is None else str(self.store_root)
        data["run_dirs"] = [str(p) for p in self.run_dirs]
        return data


def evaluate(
    definition: BenchmarkDefinition,
    arms: Arm | Sequence[Arm],
    *,
    repetitions: int = 1,
    store: RunStore | str | os.PathLike[str] | None = None,
    concurrency: int = 16,
    reference: str | None = None,
    collapse: RepCollapse | str = "all",
    on_event: EventSink | None = None,
) -> EvalResult:
    """Run every arm ``repetitions`` times over ``definition`` and score the runs.

    ``store`` is a :class:`~vitrine.store.RunStore` or a root folder for one; ``None`` keeps
    the runs in memory. ``reference`` names the arm every other arm is compared against, with
    repetitions collapsed per case by ``collapse`` (``all`` by default, as the protocol's
    comparison plan does).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        # asyncio.run cannot nest, and running the subjects on a second loop in another thread
        # would break any client they hold that belongs to this loop.
        raise RuntimeError(
            "evaluate() was called inside a running event loop (a notebook cell or an async "
            "application): use `await vitrine.evaluate_async(...)` there"
        )
    return asyncio.run(
        evaluate_async(
            definition,
            arms,
            repetitions=repetitions,
            store=store,
            concurrency=concurrency,
            reference=reference,
            collapse=collapse,
            on_event=on_event,
        )
    )


async def evaluate_async(
    definition: BenchmarkDefinition,
    arms: Arm | Sequence[Arm],
    *,
    repetitions: int = 1,
    store: RunStore | str | os.PathLike[str] | None = None,
    concurrency: int = 16,
    reference: str | None = None,
    collapse: RepCollapse | str = "all",
    on_event: EventSink | None = None,
) -> EvalResult:
    """The awaitable form of :func:`evaluate`, for code that already runs an event loop."""
    from vitrine.bench.runner import run_benchmark
    from vitrine.bench.score import BenchmarkScore, RepCollapse

    arm_list = _arm_list(arms)
    _check_arguments(arm_list, repetitions, concurrency, reference)
    mode = RepCollapse(collapse)
    run_store = _open_store(store)
    runs: list[RunResult] = []
    # Repetition-major order: each repetition visits every arm before the next starts, so a
    # drift in a shared dependency over the session lands on all arms instead of on the last.
    # Calls are sequential so that ``concurrency`` bounds the whole evaluation, not each arm.
    for repetition in range(1, repetitions + 1):
        for arm in arm_list:
            runs.append(
                await run_benchmark(
                    definition,
                    arm,
                    repetition=repetition,
                    store=run_store,
                    concurrency=concurrency,
                    on_event=on_event,
                )
            )
    score = BenchmarkScore.of(runs)
    comparisons = () if reference is None else tuple(score.against_reference(reference, mode))
    return EvalResult(
        definition=definition,
        runs=tuple(runs),
        score=score,
        reference=reference,
        comparisons=comparisons,
        store_root=None if run_store is None else run_store.root,
    )


def _arm_list(arms: Arm | Sequence[Arm]) -> list[Arm]:
    arm_list = [arms] if isinstance(arms, Arm) else list(arms)
    for arm in arm_list:
        if not isinstance(arm, Arm):
            raise TypeError(f"arms must be vitrine Arm objects, got {type(arm).__name__}")
    return arm_list


def _check_arguments(
    arms: list[Arm], repetitions: int, concurrency: int, reference: str | None
) -> None:
    # Everything here is checked before the first runner call: a refused evaluation must not
    # leave half a session of runs behind.
    if not arms:
        raise ValueError("no arms to evaluate: an empty evaluation is not a zero score")
    ids = [arm.arm_id for arm in arms]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(
            f"arm ids repeat ({', '.join(duplicates)}): runs are grouped by arm id, so two "
            "variants with one id would be scored as repetitions of one arm"
        )
    if isinstance(repetitions, bool) or not isinstance(repetitions, int) or repetitions < 1:
        raise ValueError(f"repetitions must be a whole number of at least 1, got {repetitions!r}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number of at least 1, got {concurrency!r}")
    if reference is not None:
        if reference not in ids:
            raise ValueError(
                f"reference arm {reference!r} is not among the arms ({', '.join(ids)})"
            )
        if len(ids) == 1:
            raise ValueError(
                f"reference arm {reference!r} is the only arm: there is no challenger to "
                "compare against it"
            )


def _open_store(store: RunStore | str | os.PathLike[str] | None) -> RunStore | None:
    if store is None:
        return None
    from vitrine.store import RunStore

    if isinstance(store, RunStore):
        return store
    return RunStore(store)

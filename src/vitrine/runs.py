"""Running a benchmark and what comes back: results, scores, repetition collapse, executors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine._api import (
        EvalResult as EvalResult,
        evaluate as evaluate,
        evaluate_async as evaluate_async,
    )
    from vitrine._bench.events import (
        TrialCompleted as TrialCompleted,
    )
    from vitrine._bench.executors import (
        TrialExecutor as TrialExecutor,
        use_executor as use_executor,
    )
    from vitrine._bench.model import (
        Arm as Arm,
        BenchmarkDefinition as BenchmarkDefinition,
        Case as Case,
    )
    from vitrine._bench.ray_executor import (
        RayExecutor as RayExecutor,
    )
    from vitrine._bench.results import (
        RunResult as RunResult,
        ScenarioRow as ScenarioRow,
    )
    from vitrine._bench.retry import (
        RetryPolicy as RetryPolicy,
    )
    from vitrine._bench.runner import (
        run_benchmark as run_benchmark,
    )
    from vitrine._bench.score import (
        BenchmarkScore as BenchmarkScore,
        FloorComparison as FloorComparison,
        FloorComparisonError as FloorComparisonError,
        PairOutcome as PairOutcome,
        RepCollapse as RepCollapse,
        collapse as collapse,
    )

__getattr__, __dir__ = lazy_exports(__name__)

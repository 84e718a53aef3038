"""vitrine: evaluate LLM agents and workflows with evidence that holds up.

The root holds what a suite author writes with; everything else lives in a namespace:

- :mod:`vitrine.checks`: checks, floors, observations, gates and verdicts beyond the basics
- :mod:`vitrine.subjects`: what a subject returns (tool journal, stage census, usage) and
  subjects behind HTTP
- :mod:`vitrine.runs`: run results, scores, executors
- :mod:`vitrine.stats`: intervals, exact tests, power, multiplicity, sequential stopping
- :mod:`vitrine.pipeline`: a suite's declared offline pipeline
- :mod:`vitrine.live`: live plans: previews, spend ceilings, receipts, progress
- :mod:`vitrine.store`, :mod:`vitrine.reports`, :mod:`vitrine.controls`,
  :mod:`vitrine.mutants`, :mod:`vitrine.judge`, :mod:`vitrine.providers`,
  :mod:`vitrine.redteam`, :mod:`vitrine.rag`, :mod:`vitrine.service`,
  :mod:`vitrine.tracing`, :mod:`vitrine.redact`, :mod:`vitrine.testing`
- :mod:`vitrine.errors`: the one exception tree

Modules whose names start with an underscore are the implementation and may change at any
time. Names resolve lazily, so ``vitrine --help`` and small scripts do not pay for scipy,
pydantic or rich until they use them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:
    from vitrine._api import (
        EvalResult as EvalResult,
        evaluate as evaluate,
        evaluate_async as evaluate_async,
    )
    from vitrine._bench.model import (
        Arm as Arm,
        Authority as Authority,
        BenchmarkDefinition as BenchmarkDefinition,
        Case as Case,
        Check as Check,
        admit as admit,
        check as check,
    )
    from vitrine._bench.response import (
        SubjectResponse as SubjectResponse,
        ToolCallRecord as ToolCallRecord,
    )
    from vitrine._bench.retry import (
        RetryPolicy as RetryPolicy,
    )
    from vitrine._evaluation import (
        Evaluation as Evaluation,
        EvaluationResult as EvaluationResult,
    )
    from vitrine._floors import (
        ChanceFloor as ChanceFloor,
    )
    from vitrine._outcomes import (
        ExitCode as ExitCode,
        Observation as Observation,
    )
    from vitrine._plans.base import (
        PlanOutcome as PlanOutcome,
        PlanRequest as PlanRequest,
        UsageError as UsageError,
        plan as plan,
    )
    from vitrine._suite import (
        Suite as Suite,
    )
    from vitrine.errors import (
        VitrineError as VitrineError,
    )
    from vitrine.store._run_store import (
        RunStore as RunStore,
    )

__getattr__, __dir__ = lazy_exports(__name__)

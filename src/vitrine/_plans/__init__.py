"""Plans: what a suite can run, with their rules declared as data.

``vitrine._plans.validation`` turns raw options into a validated request; it is not imported
here because it depends on :mod:`vitrine._suite`, which itself depends on this package.
"""

from vitrine._plans.base import (
    FunctionPlan,
    Plan,
    PlanFunction,
    PlanKind,
    PlanOutcome,
    PlanRequest,
    PlanUnavailableError,
    ProgressSink,
    ProviderName,
    RepetitionRule,
    UsageError,
    plan,
)

__all__ = [
    "FunctionPlan",
    "Plan",
    "PlanFunction",
    "PlanKind",
    "PlanOutcome",
    "PlanRequest",
    "PlanUnavailableError",
    "ProgressSink",
    "ProviderName",
    "RepetitionRule",
    "UsageError",
    "plan",
]

"""The paid workload a live plan will start, shown before anything is spent, and its guard.

The preview counts what the plan controls: subject trials (scenarios x arms x repetitions) and
at most one judge call per measurable trial, each bounded by a per-request output-token
ceiling. It does not pretend to count provider requests: an agent's tool loop and a
provider's retries make those larger, and the preview says so instead of guessing a number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from vitrine._plans.base import PlanRequest, UsageError
from vitrine.errors import InvalidArgumentError

__all__ = ["PowerStatement", "WorkloadPreview", "require_paid_confirmation"]

REQUEST_COUNT_NOTE = (
    "tool use and provider retries can make the number of low-level model requests larger "
    "than the subject-trial count"
)
CEILING_NOTE = "token ceilings are per request, not a session price cap"


class PowerStatement(Protocol):
    """What the plan's decision rule can detect (a design of :mod:`vitrine._power`)."""

    def lines(self) -> list[str]: ...

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class WorkloadPreview:
    plan: str
    scenarios: tuple[str, ...]
    arms: tuple[str, ...]
    repetitions: int
    subject_max_output_tokens: int
    judge_max_output_tokens: int
    paid: bool
    power: PowerStatement | None

    def __init__(
        self,
        plan: str,
        scenarios: Sequence[str],
        arms: Sequence[str],
        repetitions: int,
        *,
        subject_max_output_tokens: int,
        judge_max_output_tokens: int,
        paid: bool,
        power: PowerStatement | None = None,
    ) -> None:
        if not scenarios or not arms:
            raise InvalidArgumentError("a workload needs at least one scenario and one arm")
        if repetitions < 1:
            raise InvalidArgumentError(f"repetitions count from 1, got {repetitions}")
        for name, value in (
            ("subject_max_output_tokens", subject_max_output_tokens),
            ("judge_max_output_tokens", judge_max_output_tokens),
        ):
            if value < 1:
                raise InvalidArgumentError(f"{name} must be at least 1, got {value}")
        object.__setattr__(self, "plan", plan)
        object.__setattr__(self, "scenarios", tuple(scenarios))
        object.__setattr__(self, "arms", tuple(arms))
        object.__setattr__(self, "repetitions", repetitions)
        object.__setattr__(self, "subject_max_output_tokens", subject_max_output_tokens)
        object.__setattr__(self, "judge_max_output_tokens", judge_max_output_tokens)
        object.__setattr__(self, "paid", paid)
        object.__setattr__(self, "power", power)

    @property
    def subject_trials(self) -> int:
        return len(self.scenarios) * len(self.arms) * self.repetitions

    @property
    def max_judge_calls(self) -> int:
        """At most one judge call follows each measurable subject trial."""
        return self.subject_trials

    @property
    def runs(self) -> int:
        """One standard run directory per arm x repetition."""
        return len(self.arms) * self.repetitions

    def lines(self) -> list[str]:
        cost = "paid model services" if self.paid else "a local model (no charge)"
        return [
            f"{self.plan}: planned workload on {cost}",
            f"  {len(self.scenarios)} scenario(s) x {len(self.arms)} arm(s) x "
            f"{self.repetitions} repetition(s) = {self.subject_trials} subject trial(s) "
            f"in {self.runs} run(s)",
            f"  scenarios: {', '.join(self.scenarios)}",
            f"  arms: {', '.join(self.arms)}",
            f"  judge calls: at most {self.max_judge_calls} (one per measurable trial)",
            f"  output-token ceilings: subject {self.subject_max_output_tokens:,} per request, "
            f"judge {self.judge_max_output_tokens:,} per request ({CEILING_NOTE})",
            f"  note: {REQUEST_COUNT_NOTE}",
            *(self.power.lines() if self.power is not None else ()),
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan": self.plan,
            "scenarios": list(self.scenarios),
            "arms": list(self.arms),
            "repetitions": self.repetitions,
            "subject_trials": self.subject_trials,
            "runs": self.runs,
            "max_judge_calls": self.max_judge_calls,
            "subject_max_output_tokens": self.subject_max_output_tokens,
            "judge_max_output_tokens": self.judge_max_output_tokens,
            "paid": self.paid,
            "notes": [REQUEST_COUNT_NOTE, CEILING_NOTE],
            "power": self.power.to_dict() if self.power is not None else None,
        }


def require_paid_confirmation(request: PlanRequest, *, paid: bool) -> None:
    """Refuse a paid run that was not confirmed, whoever called the plan.

    The command line already refuses it; this guard is for programmatic callers, so that a
    plan function can never reach a paid provider by being called directly.
    """
    if paid and not request.confirm_paid:
        raise UsageError(
            f"{request.plan} would call paid model services and the request does not confirm "
            "it (confirm_paid=False): paid execution must be confirmed explicitly"
        )

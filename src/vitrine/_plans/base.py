"""The plan extension point: what a suite can run, and the request and outcome of one run.

A plan declares its rules (kind, repetition rule, whether it takes a scenario, whether it is
paid) as data, so the command line can refuse a malformed request before any plan code runs and
before anything is spent. This module stays free of heavy imports: the CLI reads it on every
invocation, including argument errors.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from vitrine._budget import Price, SpendCeiling
from vitrine._outcomes import ExitCode
from vitrine._plans.terminal import TerminalRule
from vitrine._suite_flags import NO_MODE
from vitrine.errors import InvalidArgumentError, PlanUnavailableError, UsageError
from vitrine.store._naming import resolve_root

__all__ = [
    "DEFAULT_PROVIDER_RULE",
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
    "default_provider",
    "plan",
]

ProviderName = Literal["openai", "azure", "local", "anthropic"]
PROVIDERS: tuple[ProviderName, ...] = ("openai", "azure", "local", "anthropic")
# The one default provider, in words for help texts (see default_provider).
DEFAULT_PROVIDER_RULE = "azure when AZURE_OPENAI_ENDPOINT is set, else openai"


def default_provider(environ: Mapping[str, str]) -> ProviderName:
    """The provider when none is named: Azure OpenAI when its endpoint is set, else OpenAI.

    Every command without ``--provider`` (the subject CLI, the live plans, Eval 06) reads it
    here, so none can disagree. Both services bill: the rule chooses between two paid services,
    never between paid and offline, so a credential never changes the cost lane. It lives here,
    beside the provider names, so a command line can state it without loading a provider.
    """
    return "azure" if environ.get("AZURE_OPENAI_ENDPOINT", "").strip() else "openai"


# Plans emit runner events and their own event types; a sink that accepts any object can be
# handed straight to the runner, whose sink parameter is narrower.
ProgressSink = Callable[[object], None]


class PlanKind(StrEnum):
    """The cost boundary a plan sits on."""

    OFFLINE = "offline"  # local deterministic providers only: free, repeatable, no credentials
    LIVE = "live"  # real subjects and a real judge
    SAFETY = "safety"  # a red-team campaign against the assistant itself


@dataclass(frozen=True, slots=True)
class RepetitionRule:
    """How many repetitions a plan runs, and whether ``--repetitions`` may change that.

    ``reason`` explains the bounds; it is quoted in every refusal so the operator learns why
    the number is what it is, not only that theirs was wrong.
    """

    default: int = 1
    minimum: int = 1
    maximum: int = 1
    configurable: bool = True
    reason: str = ""

    def __post_init__(self) -> None:
        if not 1 <= self.minimum <= self.default <= self.maximum:
            raise InvalidArgumentError(
                "a repetition rule needs 1 <= minimum <= default <= maximum, got "
                f"minimum={self.minimum}, default={self.default}, maximum={self.maximum}"
            )

    @classmethod
    def fixed(cls, count: int = 1, reason: str = "") -> RepetitionRule:
        """Exactly ``count``; ``--repetitions`` is accepted only with that value."""
        return cls(count, count, count, True, reason)

    @classmethod
    def between(cls, minimum: int, maximum: int, default: int, reason: str = "") -> RepetitionRule:
        return cls(default, minimum, maximum, True, reason)

    @classmethod
    def not_accepted(cls, count: int = 1, reason: str = "") -> RepetitionRule:
        """The plan fixes its own workload; any ``--repetitions`` is refused."""
        return cls(count, count, count, False, reason)

    @property
    def is_fixed(self) -> bool:
        return self.minimum == self.maximum

    def describe(self) -> str:
        if not self.configurable:
            return f"fixed at {self.default}, not configurable"
        if self.is_fixed:
            return f"exactly {self.default}"
        return f"{self.minimum}-{self.maximum}, default {self.default}"


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """Everything the operator asked for, parsed and validated, handed to ``Plan.run``.

    ``scenarios`` and ``repetitions`` are already resolved: ``--scenario all`` (or no
    ``--scenario``) becomes every scenario id in suite order, and an absent ``--repetitions``
    becomes the plan's default. Plans that take no scenario receive an empty tuple.
    ``mode`` names the offline mode the operator chose (``--self-test`` gives ``"self-test"``,
    a suite's own ``--NAME`` gives ``"NAME"``), or ``"suite"`` for none: the plan reads it.
    ``output`` is the ``--output`` value as given; :meth:`output_root` resolves the run-store
    root from it (``--output`` > ``VITRINE_HOME`` > ``./.vitrine``).
    """

    plan: str
    scenarios: tuple[str, ...] = ()
    repetitions: int = 1
    confirm_paid: bool = False
    mode: str = NO_MODE
    provider: ProviderName | None = None
    local_model: Path | None = None
    model: str | None = None
    judge_provider: ProviderName | None = None  # None: the judge uses the subject's provider
    judge_model: str | None = None
    json_report: Path | None = None
    html_report: Path | None = None
    output: Path | None = None
    progress: ProgressSink | None = field(default=None, compare=False)
    console: bool = False
    # The session's spend ceiling (--max-calls, --max-tokens, --max-cost) and the declared
    # prices a cost ceiling is computed from; None when no ceiling was asked for.
    spend: SpendCeiling | None = None
    prices: Mapping[str, Price] | None = field(default=None, compare=False)
    # Benjamini-Hochberg adjusted p-values beside the Holm ones (--fdr), where a plan compares.
    fdr: bool = False
    # Run a comparing plan case by case and stop when its sequential test stops (--sequential).
    sequential: bool = False

    def output_root(self) -> Path:
        """The run-store root: ``--output``, else ``$VITRINE_HOME``, else ``./.vitrine``."""
        return resolve_root(self.output)

    @property
    def paid_confirmed(self) -> bool:
        """True when paid model calls may start: confirmed, or a provider that costs nothing
        (a local model, or an OpenAI-compatible server declared free)."""
        # providers.config imports this module for PROVIDERS: importing it here breaks the cycle.
        from vitrine.providers._config import provider_is_free  # noqa: PLC0415

        return self.confirm_paid or provider_is_free(self.provider)


@dataclass(frozen=True, slots=True)
class PlanOutcome:
    """What a plan run produced: the process exit class, a console summary, and its artifacts.

    The summary lines are already sanitized for display; the artifacts are paths the plan wrote
    (run directories, reports, receipts).
    """

    exit_code: ExitCode
    summary: tuple[str, ...] = ()
    artifacts: tuple[Path, ...] = ()

    def __init__(
        self,
        exit_code: ExitCode,
        summary: Sequence[str] = (),
        artifacts: Sequence[Path | str] = (),
    ) -> None:
        object.__setattr__(self, "exit_code", ExitCode(exit_code))
        object.__setattr__(self, "summary", tuple(summary))
        object.__setattr__(self, "artifacts", tuple(Path(a) for a in artifacts))


@runtime_checkable
class Plan(Protocol):
    """One runnable evaluation plan of a suite.

    Every attribute is declarative so that validation needs no plan code: a plan that is not
    built yet is still listed, with its rules, and refused with its ``unavailable_reason``.
    """

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> PlanKind: ...

    @property
    def description(self) -> str: ...

    @property
    def repetitions(self) -> RepetitionRule: ...

    @property
    def accepts_scenario(self) -> bool: ...

    @property
    def scenario_refusal(self) -> str:
        """Why ``--scenario`` is refused (read only when ``accepts_scenario`` is false)."""
        ...

    @property
    def paid(self) -> bool:
        """True when running it calls paid model services, so it needs ``--confirm-paid``."""
        ...

    @property
    def available(self) -> bool: ...

    @property
    def unavailable_reason(self) -> str: ...

    async def run(self, request: PlanRequest) -> PlanOutcome: ...


PlanFunction = Callable[[PlanRequest], Awaitable[PlanOutcome]]


@dataclass(frozen=True, slots=True)
class FunctionPlan:
    """A :class:`Plan` made from an async function, or declared without one.

    A plan declared with ``fn=None`` is listed and validated like any other but refused with
    ``unavailable_reason``: its rules are public before its implementation exists.

    ``workload``, for a paid plan, gives the workload it would start for the chosen scenarios
    and repetitions as lines (scenarios x arms x repetitions, judge calls, ceilings), computed
    without calling anything: the interactive selector shows them before it asks to confirm.
    """

    name: str
    kind: PlanKind
    description: str
    fn: PlanFunction | None = None
    repetitions: RepetitionRule = field(default_factory=RepetitionRule)
    accepts_scenario: bool = False
    scenario_refusal: str = ""
    paid: bool = False
    unavailable_reason: str = ""
    workload: Callable[[tuple[str, ...], int], Sequence[str]] | None = None
    terminal: TerminalRule = TerminalRule.ABSENCE_NOT_MEASURED

    def __post_init__(self) -> None:
        if not self.name or not self.name.strip() or self.name != self.name.strip():
            raise InvalidArgumentError(
                f"a plan name must be non-blank without outer spaces: {self.name!r}"
            )
        if self.fn is None and not self.unavailable_reason:
            raise InvalidArgumentError(
                f"plan {self.name!r} has no implementation and no unavailable_reason: an "
                "unavailable plan must say why, so the refusal can tell the operator"
            )
        if self.fn is not None and not inspect.iscoroutinefunction(self.fn):
            # Checked here, not at run time, so a suite with a sync plan fails when it loads.
            raise InvalidArgumentError(f"plan {self.name!r}: fn must be an async function")

    @property
    def available(self) -> bool:
        return self.fn is not None and not self.unavailable_reason

    async def run(self, request: PlanRequest) -> PlanOutcome:
        if self.fn is None or self.unavailable_reason:
            raise PlanUnavailableError(
                f"plan {self.name!r} is not available: {self.unavailable_reason or 'no code'}"
            )
        return await self.fn(request)


def plan(
    name: str,
    *,
    kind: PlanKind = PlanKind.OFFLINE,
    description: str = "",
    repetitions: RepetitionRule | int | None = None,
    accepts_scenario: bool = False,
    scenario_refusal: str = "",
    paid: bool = False,
    terminal: TerminalRule = TerminalRule.ABSENCE_NOT_MEASURED,
) -> Callable[[PlanFunction], FunctionPlan]:
    """Decorator: turn ``async def fn(request) -> PlanOutcome`` into a :class:`Plan`.

    ``repetitions`` is the plan's repetition rule, shown in ``vitrine --list-plans``: a number
    ``n`` runs ``n`` by default and accepts ``--repetitions 1`` to ``max(n, 100)``; a
    :class:`RepetitionRule` states any other bounds and their reason. A plan that states none
    runs exactly one repetition, and a ``--repetitions`` refusal says how to change that.
    ``terminal`` says what a session with some planned trials missing concludes
    (:class:`~vitrine.live.TerminalRule`; the plan applies it with ``TerminalRule.decide``).
    """
    rule = _repetition_rule(name, repetitions)

    def wrap(fn: PlanFunction) -> FunctionPlan:
        return FunctionPlan(
            name=name,
            kind=kind,
            description=description or (fn.__doc__ or "").strip(),
            fn=fn,
            repetitions=rule,
            accepts_scenario=accepts_scenario,
            scenario_refusal=scenario_refusal,
            paid=paid,
            terminal=terminal,
        )

    return wrap


USER_PLAN_MAX_REPETITIONS = 100


def _repetition_rule(name: str, given: RepetitionRule | int | None) -> RepetitionRule:
    if isinstance(given, RepetitionRule):
        return given
    if given is None:
        return RepetitionRule.fixed(
            1,
            reason=f"plan {name!r} states no repetition rule; declare one with "
            f"@vitrine.plan({name!r}, repetitions=N)",
        )
    if isinstance(given, bool) or not isinstance(given, int) or given < 1:
        raise InvalidArgumentError(
            f"plan {name!r}: repetitions must be a whole number of at least 1 or a "
            f"RepetitionRule, got {given!r}"
        )
    return RepetitionRule.between(1, max(given, USER_PLAN_MAX_REPETITIONS), given)

"""The interactive plan selector: ``vitrine`` with no arguments, in a terminal.

A small question-and-answer menu, not a full-screen program, so it works in any terminal and
over SSH: choose a plan (each shown with its rules), the scenarios (each with its description
and query), the repetitions (within 1-30 and the plan's own bounds; four at least for the
stochastic plans, as their rule says), read the workload preview, confirm a paid plan
explicitly, then run. The answers become the same options the flags would give, validated by
the same rules, and the plan runs through the same dispatch as ``vitrine --eval-plan``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from vitrine.errors import SelectorCancelled

if TYPE_CHECKING:
    from vitrine._plans.base import Plan
    from vitrine._plans.validation import PlanOptions
    from vitrine._suite import Suite

__all__ = ["SELECTOR_MAX_REPETITIONS", "SelectorCancelled", "choose", "interactive_main"]

# The protocol's interactive bound; each plan's own rule narrows it further.
SELECTOR_MAX_REPETITIONS = 30
_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class _Io:
    ask: Callable[[str], str]
    out: TextIO

    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def prompt(self, question: str) -> str:
        try:
            answer = self.ask(question).strip()
        except EOFError:
            raise SelectorCancelled("no answer: input ended") from None
        if answer.lower() in ("q", "quit", "exit"):
            raise SelectorCancelled("left the menu")
        return answer


def choose(suite: Suite, ask: Callable[[str], str], out: TextIO) -> PlanOptions:
    """Ask for a plan, scenarios and repetitions; return the options the flags would give."""
    from vitrine._plans.validation import PlanOptions

    io = _Io(ask, out)
    io.say(
        f"vitrine: suite {suite.name}" + (f" ({suite.description})" if suite.description else "")
    )
    io.say("Answer with a number; q leaves without running anything.\n")
    plan = _choose_plan(io, suite)
    scenarios = _choose_scenarios(io, suite, plan)
    repetitions = _choose_repetitions(io, plan)
    _preview(io, suite, plan, scenarios, repetitions)
    confirm = False
    if plan.paid:
        answer = io.prompt("This plan calls paid model services. Type 'yes' to confirm: ")
        if answer.lower() != "yes":
            raise SelectorCancelled("the paid run was not confirmed")
        confirm = True
    return PlanOptions(
        all=plan.name == suite.default_plan,
        eval_plan=None if plan.name == suite.default_plan else plan.name,
        scenario=scenarios,
        repetitions=None if repetitions is None else str(repetitions),
        confirm_paid=confirm,
    )


def _choose_plan(io: _Io, suite: Suite) -> Plan:
    plans = [p for p in suite.plans.values() if p.available]
    for number, plan in enumerate(plans, start=1):
        tags = [plan.kind.value, f"repetitions {plan.repetitions.describe()}"]
        if plan.paid:
            tags.append("paid")
        io.say(f"  {number}. {plan.name}  ({'; '.join(tags)})")
        if plan.description:
            io.say(f"     {plan.description}")
    index = _number(io, "Plan: ", 1, len(plans))
    return plans[index - 1]


def _choose_scenarios(io: _Io, suite: Suite, plan: Plan) -> str | None:
    if not plan.accepts_scenario or not suite.scenarios:
        return None
    ids = list(suite.scenarios)
    io.say("\nScenarios:")
    io.say("  0. all")
    for number, key in enumerate(ids, start=1):
        info = suite.scenarios[key]
        io.say(f"  {number}. {key}: {info.title}")
        if info.description:
            io.say(f"     {info.description}")
        io.say(f'     query: "{info.query}"')
    index = _number(io, "Scenario (0 for all): ", 0, len(ids))
    return "all" if index == 0 else ids[index - 1]


def _choose_repetitions(io: _Io, plan: Plan) -> int | None:
    rule = plan.repetitions
    if not rule.configurable or rule.is_fixed:
        return None
    low, high = rule.minimum, min(rule.maximum, SELECTOR_MAX_REPETITIONS)
    why = f" ({rule.reason})" if rule.reason else ""
    io.say(f"\nRepetitions: {low} to {high}, default {rule.default}{why}")
    answer = _number(io, f"Repetitions [{rule.default}]: ", low, high, default=rule.default)
    return answer


def _preview(
    io: _Io, suite: Suite, plan: Plan, scenarios: str | None, repetitions: int | None
) -> None:
    """The whole workload, before any question that would start it: a paid plan's
    confirmation is asked only once its scenarios x arms x repetitions and judge calls show."""
    reps = repetitions if repetitions is not None else plan.repetitions.default
    chosen: tuple[str, ...] = ()
    if plan.accepts_scenario:
        chosen = tuple(suite.scenarios) if scenarios in (None, "all") else (str(scenarios),)
    workload = getattr(plan, "workload", None)
    if workload is not None:
        io.say("")
        for line in workload(chosen, reps):
            io.say(line)
        io.say("The plan checks readiness before its first model call.")
        return
    count = "every" if scenarios in (None, "all") else "1"
    io.say(f"\nWorkload: plan {plan.name}, {count} scenario(s), {reps} repetition(s) per arm.")
    if plan.paid:
        io.say(
            "This plan declares no workload preview: it prints its paid workload and checks "
            "readiness before its first model call."
        )


def _number(io: _Io, question: str, low: int, high: int, *, default: int | None = None) -> int:
    for _ in range(_ATTEMPTS):
        answer = io.prompt(question)
        if not answer and default is not None:
            return default
        if answer.isdigit() and len(answer) < 4 and low <= int(answer) <= high:
            return int(answer)
        io.say(f"  please answer a number from {low} to {high}")
    raise SelectorCancelled(f"no valid answer after {_ATTEMPTS} tries")


def interactive_main(suite_spec: str | None) -> int:
    """Run the selector on the terminal, then the chosen plan; return the exit code.

    ``suite_spec`` None: the suite every command finds (the project's, else the installed one).
    """
    import sys

    from vitrine._cli import dispatch_plan, report_error
    from vitrine._plans.base import UsageError
    from vitrine._plans.validation import validate
    from vitrine._suite import SuiteLoadError, load_suite

    try:
        suite = load_suite(suite_spec)
    except SuiteLoadError as exc:
        report_error(str(exc))
        return int(exc.exit_code)
    try:
        options = choose(suite, input, sys.stdout)
        plan, request = validate(suite, options, console=True)
    except SelectorCancelled as exc:
        report_error(f"nothing was run: {exc}")
        return 2
    except UsageError as exc:
        report_error(str(exc))
        return 2
    return dispatch_plan(plan, request)

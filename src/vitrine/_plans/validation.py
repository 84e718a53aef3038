"""From raw options to a validated (plan, request) pair, or a refusal that says which rule.

Every rule here runs before any plan code, so a malformed request costs nothing and starts
nothing. Refusals are :class:`UsageError` (exit 2); each message names the rule and its reason.
The plan's availability is checked last, so an operator learns that their command is well
formed before learning that the plan is not built yet.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from vitrine._budget import Price, PriceTableError, SpendCeiling, load_price_table
from vitrine._plans.base import (
    PROVIDERS,
    Plan,
    PlanKind,
    PlanRequest,
    ProgressSink,
    ProviderName,
    UsageError,
)
from vitrine._suite import Suite
from vitrine._suite_flags import NO_MODE, canonical_modes

__all__ = ["PlanOptions", "validate"]

_REPORT_ONLY_OFFLINE = "it writes the offline suite's report; live plans write session receipts"


@dataclass(frozen=True, slots=True)
class PlanOptions:
    """The options as the operator gave them, before any rule is applied.

    ``repetitions`` keeps the raw text so that a non-integer can be refused with a message
    rather than a parser trace; an int is accepted for programmatic callers. ``modes`` are the
    names of the mode flags given (``("self-test",)`` for ``--self-test``), ``aliases`` the
    suite's shorthand flags given (``("--live-compare",)``).
    """

    all: bool = False
    eval_plan: str | None = None
    aliases: tuple[str, ...] = ()
    scenario: str | None = None
    repetitions: str | int | None = None
    confirm_paid: bool = False
    modes: tuple[str, ...] = ()
    provider: str | None = None
    local_model: Path | None = None
    model: str | None = None
    judge_provider: str | None = None
    judge_model: str | None = None
    json_report: Path | None = None
    html_report: Path | None = None
    output: Path | None = None
    max_calls: str | int | None = None
    max_tokens: str | int | None = None
    max_cost: str | float | None = None
    price_table: Path | None = None
    fdr: bool = False
    sequential: bool = False


def validate(
    suite: Suite,
    options: PlanOptions,
    *,
    progress: ProgressSink | None = None,
    console: bool = False,
) -> tuple[Plan, PlanRequest]:
    """Apply every rule; return the selected plan and its resolved request, or raise UsageError."""
    plan = _select_plan(suite, options)
    _check_kind(suite, plan, options)
    scenarios = _resolve_scenarios(suite, plan, options.scenario)
    repetitions = _resolve_repetitions(plan, options.repetitions)
    provider = _check_provider(options)
    _check_paid(plan, options, provider)
    _check_reports(options)
    spend, prices = _spend_ceiling(plan, options)
    _check_fdr(plan, options)
    _check_sequential(plan, options)
    if not plan.available:
        raise UsageError(f"{plan.name} is not available: {plan.unavailable_reason}")
    request = PlanRequest(
        plan=plan.name,
        scenarios=scenarios,
        repetitions=repetitions,
        confirm_paid=options.confirm_paid,
        mode=options.modes[0] if options.modes else NO_MODE,
        provider=provider,
        local_model=options.local_model,
        model=options.model,
        judge_provider=_check_judge_provider(options.judge_provider),
        judge_model=options.judge_model,
        json_report=options.json_report,
        html_report=options.html_report,
        output=options.output,
        progress=progress,
        console=console,
        spend=spend,
        prices=prices,
        fdr=options.fdr,
        sequential=options.sequential,
    )
    return plan, request


def _live_only(plan: Plan, used: bool, flag: str, what: str) -> None:
    """Refuse ``flag`` (which does ``what``) on any plan that is not live."""
    if used and plan.kind is not PlanKind.LIVE:
        kind = plan.kind.value
        article = "an" if kind[:1] in "aeiou" else "a"
        raise UsageError(
            f"{plan.name} does not accept {flag}: it {what}, and this is {article} {kind} plan"
        )


def _check_fdr(plan: Plan, options: PlanOptions) -> None:
    _live_only(
        plan,
        options.fdr,
        "--fdr",
        "asks a live plan's receipt for Benjamini-Hochberg p-values beside Holm's (an offline "
        "report.json holds both already, as holm_p and bh_p)",
    )


def _check_sequential(plan: Plan, options: PlanOptions) -> None:
    _live_only(
        plan,
        options.sequential,
        "--sequential",
        "runs a live plan's paired comparison case by case until its sequential test stops",
    )


def _select_plan(suite: Suite, options: PlanOptions) -> Plan:
    name = options.eval_plan
    alias = _alias(options)
    if alias is not None:
        aliased = suite.alias(alias)
        if name is not None and name != aliased:
            raise UsageError(
                f"{alias} is shorthand for --eval-plan {aliased}; it cannot be "
                f"combined with --eval-plan {name}"
            )
        name = aliased
    if options.all and name is not None:
        chosen = alias if alias is not None else f"--eval-plan {name}"
        raise UsageError(
            f"--all cannot be combined with {chosen}: --all selects the strict offline suite "
            "and the other selects a different plan; choose one"
        )
    modes = _ordered_modes(suite, options.modes)
    if len(modes) > 1:
        # The modes are separate proofs with separate expected exits; running two in one
        # process would leave the exit code meaning neither.
        reason = suite.conflict(modes[0], modes[1])
        raise UsageError(f"--{modes[0]} cannot be combined with --{modes[1]}: {reason}")
    declared = [suite.require_mode(mode) for mode in modes]
    if name is not None:
        return suite.plan(name)
    if declared and declared[0].plan is not None:
        if options.all and declared[0].plan != suite.default_plan:
            raise UsageError(
                f"--all cannot be combined with {declared[0].flag}: the mode runs plan "
                f"{declared[0].plan}, not the suite's offline plan; choose one"
            )
        return suite.plan(declared[0].plan)
    if options.all or modes:
        if suite.default_plan is None:
            chosen = "--all" if options.all else f"--{modes[0]}"
            raise UsageError(
                f"{chosen} runs the suite's offline plan, and suite {suite.name} declares none; "
                f"choose a plan with --eval-plan ({', '.join(suite.plans)})"
            )
        return suite.plans[suite.default_plan]
    raise UsageError(
        "nothing to run: choose --all (the offline suite) or --eval-plan NAME "
        f"({', '.join(suite.plans)}); nothing runs implicitly"
    )


def _alias(options: PlanOptions) -> str | None:
    """The one shorthand flag given, if any; two shorthands name two plans."""
    given = list(dict.fromkeys(options.aliases))
    if len(given) > 1:
        raise UsageError(
            f"{given[0]} cannot be combined with {given[1]}: each is shorthand for a plan of "
            "its own; choose one"
        )
    return given[0] if given else None


def _ordered_modes(suite: Suite, given: tuple[str, ...]) -> tuple[str, ...]:
    """The modes given, once each, in the order the command line lists their flags."""
    order = canonical_modes(mode.name for mode in suite.declared_modes)
    distinct = list(dict.fromkeys(given))
    return tuple(sorted(distinct, key=lambda m: order.index(m) if m in order else len(order)))


def _check_kind(suite: Suite, plan: Plan, options: PlanOptions) -> None:
    if plan.kind is PlanKind.OFFLINE:
        for flag, value in (
            ("--provider", options.provider),
            ("--local-model", options.local_model),
            ("--model", options.model),
        ):
            if value is not None:
                raise UsageError(
                    f"{plan.name} does not accept {flag}: it is an offline plan that uses only "
                    "local deterministic providers, so there is no model service to choose"
                )
        return
    offline_switches = [(f"--{mode}", suite.live_refusal(mode)) for mode in options.modes]
    if options.json_report is not None:
        offline_switches.append(("--json-report", _REPORT_ONLY_OFFLINE))
    if options.html_report is not None:
        offline_switches.append(("--html-report", _REPORT_ONLY_OFFLINE))
    if offline_switches:
        flag, reason = offline_switches[0]
        raise UsageError(
            f"{plan.name} is a {plan.kind.value} plan and does not accept {flag}: {reason}"
        )


def _resolve_scenarios(suite: Suite, plan: Plan, selection: str | None) -> tuple[str, ...]:
    if not plan.accepts_scenario:
        if selection is not None:
            why = plan.scenario_refusal.strip()
            raise UsageError(
                f"{plan.name} does not accept --scenario" + (f": {why}" if why else "")
            )
        return ()
    if selection is None or selection == "all":
        return suite.scenario_ids
    if selection not in suite.scenarios:
        known = ", ".join(suite.scenario_ids) or "none"
        raise UsageError(
            f"unknown scenario {selection!r}: suite {suite.name} knows {known} (or all)"
        )
    return (selection,)


def _resolve_repetitions(plan: Plan, raw: str | int | None) -> int:
    rule = plan.repetitions
    if raw is None:
        return rule.default
    reason = f": {rule.reason}" if rule.reason else ""
    if not rule.configurable:
        raise UsageError(f"{plan.name} does not accept --repetitions{reason}")
    count = _whole_number(raw)
    if rule.is_fixed and count != rule.default:
        noun = "repetition" if rule.default == 1 else "repetitions"
        raise UsageError(
            f"{plan.name} runs exactly {rule.default} {noun}, got --repetitions {count}{reason}"
        )
    if not rule.minimum <= count <= rule.maximum:
        raise UsageError(
            f"{plan.name} accepts --repetitions {rule.minimum} to {rule.maximum}, got "
            f"{count}{reason}"
        )
    return count


def _whole_number(raw: str | int) -> int:
    if isinstance(raw, bool):  # bool is an int subclass; True is not "one repetition"
        raise UsageError(f"--repetitions must be a whole number, got {_shown(raw)}")
    if isinstance(raw, int):
        return raw
    text = raw.strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit():
        raise UsageError(f"--repetitions must be a whole number, got {_shown(raw)}")
    if len(digits.lstrip("0")) > _MAX_DIGITS:
        # No plan runs more than a few hundred repetitions; a longer number is a typo or an
        # attack, and converting it would cost more than refusing it.
        raise UsageError(f"--repetitions is a {len(digits)}-digit number; no plan accepts that")
    return int(text)


_MAX_DIGITS = 9
_SHOWN_CHARS = 40


def _shown(raw: object) -> str:
    """An operator's value quoted back, bounded so a huge argument cannot flood the terminal."""
    text = repr(raw)
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}... ({len(text)} chars)"


def _check_provider(options: PlanOptions) -> ProviderName | None:
    provider = options.provider
    if provider is None:
        if options.local_model is not None:
            raise UsageError(
                "--local-model names a local model file, so it needs --provider local; the "
                "provider is never inferred, because inference could change the cost lane"
            )
        return None
    for known in PROVIDERS:
        if provider == known:
            if options.local_model is not None and known != "local":
                raise UsageError(
                    f"--local-model names a local model file, which --provider {known} would "
                    "ignore; use --provider local"
                )
            return known
    raise UsageError(f"unknown provider {provider!r}: choose one of {', '.join(PROVIDERS)}")


def _check_paid(plan: Plan, options: PlanOptions, provider: ProviderName | None) -> None:
    if not plan.paid or options.confirm_paid:
        return

    # Imported on use: the provider configuration pulls the HTTP transport (ssl, urllib,
    # orjson), which only a paid plan's confirmation check needs.
    from vitrine.providers._config import provider_is_free  # noqa: PLC0415

    judge = _check_judge_provider(options.judge_provider)
    if provider_is_free(provider) and (judge is None or provider_is_free(judge)):
        return
    alias = _alias(options)
    via = f" (selected by {alias})" if alias is not None else ""
    raise UsageError(
        f"{plan.name}{via} needs --confirm-paid: the plan calls paid model services, so the "
        "spend must be confirmed explicitly (--provider local, or an OpenAI-compatible server "
        "declared free with VITRINE_PROVIDER_COST=free, costs nothing and needs no "
        "confirmation)"
    )


_SPEND_FLAGS = (
    ("--max-calls", "max_calls"),
    ("--max-tokens", "max_tokens"),
    ("--max-cost", "max_cost"),
    ("--price-table", "price_table"),
)


def _spend_ceiling(
    plan: Plan, options: PlanOptions
) -> tuple[SpendCeiling | None, dict[str, Price] | None]:
    """The session's spend ceiling and declared prices, or a refusal that says which flag."""
    given = [flag for flag, attr in _SPEND_FLAGS if getattr(options, attr) is not None]
    if not given:
        return None, None
    if plan.kind is not PlanKind.LIVE:
        raise UsageError(
            f"{plan.name} does not accept {given[0]}: a spend ceiling bounds the model calls "
            f"of a live plan, and this is a {plan.kind.value} plan"
        )
    calls = _ceiling_count("--max-calls", options.max_calls)
    tokens = _ceiling_count("--max-tokens", options.max_tokens)
    cost = None if options.max_cost is None else _ceiling_cost(options.max_cost)
    prices = None
    if options.price_table is not None:
        try:
            prices = load_price_table(_expanded("--price-table", options.price_table))
        except PriceTableError as exc:
            raise UsageError(str(exc)) from None
    if cost is not None and prices is None:
        raise UsageError(
            "--max-cost needs --price-table FILE: a cost is computed only from the prices you "
            "declare per model, never guessed"
        )
    if calls is None and tokens is None and cost is None:
        raise UsageError("--price-table only serves --max-cost; give a ceiling to enforce")
    return SpendCeiling(calls, tokens, cost), prices


def _ceiling_count(flag: str, raw: str | int | None) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or (isinstance(raw, int) and raw < 1):
        raise UsageError(f"{flag} must be a whole number of at least 1, got {_shown(raw)}")
    if isinstance(raw, int):
        return raw
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or len(text.lstrip("0")) > _MAX_DIGITS + 3:
        raise UsageError(f"{flag} must be a whole number of at least 1, got {_shown(raw)}")
    if int(text) < 1:
        raise UsageError(f"{flag} must be at least 1, got {_shown(raw)}")
    return int(text)


def _ceiling_cost(raw: str | float) -> float:
    try:
        value = float(raw) if not isinstance(raw, bool) else math.nan
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"--max-cost must be a positive number of US dollars, got {_shown(raw)}")
    return value


def _check_judge_provider(provider: str | None) -> ProviderName | None:
    if provider is None:
        return None
    for known in PROVIDERS:
        if provider == known:
            return known
    raise UsageError(f"unknown judge provider {provider!r}: choose one of {', '.join(PROVIDERS)}")


def _check_reports(options: PlanOptions) -> None:
    json_report, html_report = options.json_report, options.html_report
    if json_report is not None and html_report is not None and json_report == html_report:
        raise UsageError(
            f"--json-report and --html-report both name {json_report}: one would overwrite "
            "the other"
        )
    # Refused before anything runs: finding out after the suite ran would waste the run and
    # leave an operator with no report.
    for flag, path in (("--json-report", json_report), ("--html-report", html_report)):
        if path is not None:
            _check_writable_file(flag, path)
    if options.output is not None:
        _check_directory(options.output)


def _check_writable_file(flag: str, path: Path) -> None:
    text = str(path)
    if not text.strip() or text == ".":
        raise UsageError(f"{flag} needs a file path, got an empty one")
    expanded = _expanded(flag, path)
    if expanded.is_dir():
        raise UsageError(f"{flag} {text} is a directory; name the file to write")
    parent = expanded.parent
    if parent.exists() and not parent.is_dir():
        raise UsageError(f"{flag} {text}: {parent} is not a directory")


def _check_directory(path: Path) -> None:
    text = str(path)
    if not text.strip():
        raise UsageError("--output needs a directory, got an empty path")
    expanded = _expanded("--output", path)
    if expanded.exists() and not expanded.is_dir():
        raise UsageError(f"--output {text} exists and is not a directory")


def _expanded(flag: str, path: Path) -> Path:
    text = str(path)
    if text.startswith("~"):
        # os.path, not Path.expanduser: the latter raises for an unknown user.
        expanded = Path(os.path.expanduser(text))  # noqa: PTH111
        if str(expanded).startswith("~"):
            # expanduser leaves an unknown user's home unexpanded: it names no real folder.
            raise UsageError(f"{flag} {text}: no such user's home directory")
        return expanded
    return path

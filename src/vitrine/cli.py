"""The ``vitrine`` command: parse, load the suite, validate, run one plan, exit with its class.

Only ``argparse`` is imported at module level. ``--help``, ``--version`` and parser errors must
answer without paying for scipy, pydantic, rich or the subject package; everything else is
imported on the path that needs it.

Exit codes: 0 pass, 1 measured failure, 2 invalid arguments, 3 not measured, 4 infrastructure
failure (including an interrupted run and an unexpected exception inside a plan).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

if TYPE_CHECKING:
    from vitrine.plans.base import Plan, PlanRequest
    from vitrine.plans.validation import PlanOptions
    from vitrine.suite import Suite

__all__ = ["build_parser", "main"]

PROG = "vitrine"
_INVALID_ARGUMENTS = 2
_INFRASTRUCTURE = 4
_DEFAULT_SUITE = "vitrine_shop.evals.suite:SUITE"  # duplicated from vitrine.suite: kept import-free
_HINT = (
    f"usage: {PROG} --all | --eval-plan NAME [options]\n"
    f"       {PROG} rag | redteam | serve ... (subcommands, each with its own --help)\n"
    f"       {PROG} --list-plans | --help | --version\n"
)
# Subcommands live in their own modules, imported only when named, each with a
# ``main(argv) -> int``; a subcommand whose module is absent is refused, not guessed at.
SUBCOMMANDS: dict[str, str] = {
    "rag": "vitrine.rag.command",
    "redteam": "vitrine.redteam.command",
    "serve": "vitrine.service.command",
}


class _ArgumentError(Exception):
    """Raised instead of argparse's print-and-exit, so ``main`` returns a code it can test."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _ArgumentError(message)


def build_parser() -> argparse.ArgumentParser:
    from vitrine import __version__

    parser = _Parser(
        prog=PROG,
        description=(
            "Evaluate LLM agents and workflows. Runs one plan of a suite and exits 0 pass, "
            "1 measured failure, 2 invalid arguments, 3 not measured, 4 infrastructure failure."
        ),
        epilog=(
            "Nothing runs without a selection: --all runs the credential-free offline suite; "
            "paid plans also need --confirm-paid. Subcommands: "
            + ", ".join(f"{PROG} {name}" for name in SUBCOMMANDS)
            + " (each with --help)."
        ),
        allow_abbrev=False,  # a truncated flag must not silently select a paid option
    )
    select = parser.add_argument_group("selection")
    select.add_argument(
        "--all", action="store_true", help="run the strict offline suite plan (credential-free)"
    )
    select.add_argument("--eval-plan", metavar="NAME", help="run the named plan (see --list-plans)")
    select.add_argument(
        "--live-subjects-and-judge",
        action="store_true",
        help="shorthand for --eval-plan eval03-compare (still requires --confirm-paid)",
    )
    select.add_argument(
        "--scenario", metavar="ID", help="one scenario id, or 'all' (the default for live plans)"
    )
    select.add_argument(
        "--repetitions", metavar="N", help="repetitions per arm, within the plan's rule"
    )
    select.add_argument(
        "--list-plans", action="store_true", help="list the suite's plans and scenarios"
    )
    select.add_argument(
        "--suite",
        metavar="MODULE:ATTR",
        default=None,
        help=f"the suite to load (default {_DEFAULT_SUITE})",
    )

    offline = parser.add_argument_group("offline modes and reports")
    offline.add_argument(
        "--self-test", action="store_true", help="prove every admitted check can pass and fail"
    )
    offline.add_argument(
        "--ablate-catalogue",
        action="store_true",
        help="remove one SKU from an isolated catalogue copy; exit 1 is the expected result",
    )
    offline.add_argument(
        "--controls-only", action="store_true", help="run only the registered controls"
    )
    offline.add_argument("--json-report", metavar="PATH", type=Path, help="write a JSON report")
    offline.add_argument("--html-report", metavar="PATH", type=Path, help="write an HTML report")

    live = parser.add_argument_group("live and safety plans")
    live.add_argument(
        "--confirm-paid",
        action="store_true",
        help="confirm that the plan may call paid model services",
    )
    live.add_argument(
        "--provider", choices=("openai", "azure", "local"), help="the model service to call"
    )
    live.add_argument(
        "--local-model", metavar="PATH", type=Path, help="a local GGUF model (--provider local)"
    )
    live.add_argument("--model", metavar="NAME", help="the model or deployment name")

    parser.add_argument(
        "--output",
        metavar="DIR",
        type=Path,
        help="run-store root (default: $VITRINE_HOME, else ./.vitrine)",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code instead of exiting."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        # Running something by default would make a typo in a script start real work.
        sys.stderr.write(_HINT)
        _error("nothing to run: choose --all (the offline suite) or --eval-plan NAME")
        return _INVALID_ARGUMENTS
    if args[0] in SUBCOMMANDS:
        return _subcommand(args[0], args[1:])
    parser = build_parser()
    try:
        namespace = parser.parse_args(args)
    except _ArgumentError as exc:
        sys.stderr.write(parser.format_usage())
        _error(str(exc))
        return _INVALID_ARGUMENTS
    except SystemExit as exc:  # --help and --version print and exit 0 through argparse
        return exc.code if isinstance(exc.code, int) else _INVALID_ARGUMENTS

    if namespace.list_plans:
        others = _given_options(namespace, ignore={"list_plans", "suite"})
        if others:
            _error(f"--list-plans runs nothing, so it takes only --suite; got {', '.join(others)}")
            return _INVALID_ARGUMENTS

    from vitrine.plans.base import UsageError
    from vitrine.plans.validation import validate
    from vitrine.suite import SuiteLoadError, load_suite

    try:
        suite = load_suite(namespace.suite or _DEFAULT_SUITE)
    except SuiteLoadError as exc:
        _error(str(exc))
        return int(exc.exit_code)
    if namespace.list_plans:
        _list_plans(suite, sys.stdout)
        return 0
    try:
        plan, request = validate(suite, _options(namespace), console=True)
    except UsageError as exc:
        _error(str(exc))
        return _INVALID_ARGUMENTS
    return _dispatch(plan, request)


def _subcommand(name: str, argv: list[str]) -> int:
    import importlib

    module_name = SUBCOMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            _error(f"the {name!r} subcommand is not part of this version of vitrine")
            return _INVALID_ARGUMENTS
        raise
    code = module.main(argv)
    return int(code)


def _options(namespace: argparse.Namespace) -> PlanOptions:
    from vitrine.plans.validation import PlanOptions

    return PlanOptions(
        all=namespace.all,
        eval_plan=namespace.eval_plan,
        live_alias=namespace.live_subjects_and_judge,
        scenario=namespace.scenario,
        repetitions=namespace.repetitions,
        confirm_paid=namespace.confirm_paid,
        self_test=namespace.self_test,
        ablate_catalogue=namespace.ablate_catalogue,
        controls_only=namespace.controls_only,
        provider=namespace.provider,
        local_model=namespace.local_model,
        model=namespace.model,
        json_report=namespace.json_report,
        html_report=namespace.html_report,
        output=namespace.output,
    )


def _dispatch(plan: Plan, request: PlanRequest) -> int:
    import asyncio

    from vitrine.plans.base import PlanOutcome, UsageError
    from vitrine.redact import describe_exception

    try:
        # Typed as object: a user plan may break its contract, and that must not crash here.
        outcome: object = asyncio.run(plan.run(request))
    except UsageError as exc:  # a plan may refuse what only it can check (e.g. a missing file)
        _error(str(exc))
        return _INVALID_ARGUMENTS
    except (KeyboardInterrupt, asyncio.CancelledError):
        # Runs already started are sealed by the runner; what is on disk is incomplete, which
        # is an infrastructure class, never a pass or a measured result.
        _error(f"{plan.name} interrupted: the session is incomplete and was not scored")
        return _INFRASTRUCTURE
    except Exception as exc:
        if os.environ.get("VITRINE_DEBUG") == "1":
            import traceback

            traceback.print_exc(file=sys.stderr)
        _error(f"{plan.name} failed unexpectedly: {describe_exception(exc)}")
        return _INFRASTRUCTURE
    if not isinstance(outcome, PlanOutcome):
        _error(f"{plan.name} returned {type(outcome).__name__}, not a PlanOutcome")
        return _INFRASTRUCTURE
    out = sys.stdout
    for line in outcome.summary:
        out.write(f"{line}\n")
    for artifact in outcome.artifacts:
        out.write(f"artifact: {artifact}\n")
    code = outcome.exit_code
    out.write(f"{PROG}: {plan.name} exit {int(code)} ({code.meaning})\n")
    out.flush()
    return int(code)


def _list_plans(suite: Suite, out: TextIO) -> None:
    out.write(f"suite {suite.name}" + (f": {suite.description}" if suite.description else ""))
    out.write("\nplans:\n")
    width = max(len(name) for name in suite.plans)
    for name, plan in suite.plans.items():
        tags = [plan.kind.value]
        if name == suite.default_plan:
            tags.append("default, --all")
        if plan.paid:
            tags.append("paid, needs --confirm-paid")
        tags.append(f"repetitions {plan.repetitions.describe()}")
        tags.append("--scenario" if plan.accepts_scenario else "no --scenario")
        out.write(f"  {name:<{width}}  {'; '.join(tags)}\n")
        if plan.description:
            out.write(f"  {'':<{width}}  {plan.description}\n")
        if not plan.available:
            out.write(f"  {'':<{width}}  unavailable: {plan.unavailable_reason}\n")
    if not suite.scenarios:
        return
    out.write("scenarios:\n")
    try:
        titles = {key: info.title for key, info in suite.scenarios.items()}
    except Exception as exc:
        # Listing must still work when the registry cannot be read; say so instead of hiding it.
        from vitrine.redact import describe_exception

        titles = {}
        out.write(f"  (details unavailable: {describe_exception(exc)})\n")
    id_width = max(len(key) for key in suite.scenarios)
    for key in suite.scenarios:
        title = titles.get(key, "")
        out.write(f"  {key:<{id_width}}  {title}".rstrip() + "\n")


def _given_options(namespace: argparse.Namespace, *, ignore: set[str]) -> list[str]:
    given = []
    for key, value in vars(namespace).items():
        if key in ignore or value is None or value is False:
            continue
        given.append("--" + key.replace("_", "-"))
    return given


def _error(message: str) -> None:
    sys.stderr.write(f"{PROG}: error: {message}\n")
    sys.stderr.flush()

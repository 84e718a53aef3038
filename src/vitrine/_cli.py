"""The ``vitrine`` command group: one entry point, one set of shared options, one exit enum.

``vitrine run`` parses the protocol's flags, loads the suite, validates, runs one plan and exits
with its class; ``vitrine self-test`` and ``vitrine controls`` are ``vitrine run`` with one mode
switched on. The protocol's flags keep working without the word ``run``: ``vitrine --all`` is
exactly ``vitrine run --all`` and ``vitrine --self-test`` is ``vitrine self-test``, through the
same parser and the same dispatch. Every other command (``mutants``, ``serve``, ``rag``,
``redteam``, ``board``, ``runs``, ``ci``) lives in a module of its own, imported only when named.

Only ``argparse`` and the standard-library vocabulary of :mod:`vitrine._commandline` are
imported at module level. ``--help``, ``--version`` and parser errors must answer without
paying for scipy, pydantic, rich or the subject package; everything else is imported on the
path that needs it.

Exit codes (:class:`vitrine.ExitCode`): 0 pass, 1 measured failure, 2 invalid
arguments, 3 not measured, 4 infrastructure failure (including an interrupted run and an
unexpected exception inside a plan).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from vitrine._commandline import (
    CommandRefusal,
    RefusingParser,
    add_store_option,
    add_suite_flag,
    add_suite_option,
    add_trace_options,
    asks_for_help,
    environment_problem,
    load_suite_or_refuse,
    named_suite,
    parse_with_suite,
    print_error,
    report,
    traced_session,
)
from vitrine._modes import CONTROLS_ONLY, PROTOCOL_MODES, SELF_TEST, canonical_modes
from vitrine._vocabulary import ExitCode

if TYPE_CHECKING:
    from vitrine._plans.base import Plan, PlanRequest
    from vitrine._plans.validation import PlanOptions
    from vitrine._suite import Suite

__all__ = [
    "ALIASES",
    "COMMANDS",
    "PLAN_COMMANDS",
    "SUBCOMMANDS",
    "build_parser",
    "dispatch_plan",
    "main",
    "report_error",
]

PROG = "vitrine"
# The plan commands: `vitrine run` with one of the protocol's modes switched on, or none. Each
# is exactly its protocol flag: `vitrine self-test` is `vitrine --self-test`.
PLAN_COMMANDS: dict[str, str | None] = {
    "run": None,
    "self-test": SELF_TEST,
    "controls": CONTROLS_ONLY,
}
# Every command of the group, in the order `vitrine --help` lists them, with its one line.
COMMANDS: dict[str, str] = {
    "run": "run one plan of a suite (the protocol's flags, below)",
    "self-test": "run the suite's self-test mode",
    "controls": "run only the suite's registered controls",
    "mutants": "run the suite's mutant catalogue and write the kill matrix",
    "serve": "serve the suite's assistant over HTTP",
    "rag": "ingest, evaluate and calibrate the retrieval-augmented layer",
    "redteam": "static and adaptive red-team runs, sign-off, exports",
    "board": "open the evaluation board over a run store, or export it",
    "runs": "list sealed runs; find and sweep what a killed process left",
    "ci": "write CI workflows for the suite's evaluation layers",
    "power": "what a paired comparison or a Wilson rule can detect, before a paid run",
}
# The protocol's flags, each the same request as a command: documented in `vitrine --help`.
ALIASES: dict[str, str] = {
    "--all": "run --all",
    "--eval-plan NAME": "run --eval-plan NAME",
    "--list-plans": "run --list-plans",
    "--self-test": "self-test",
    "--controls-only": "controls",
}
_GROUP_USAGE = (
    f"{PROG} --all | --eval-plan NAME [options]   (the same as {PROG} run ...)\n"
    f"       {PROG} COMMAND [options]   (each with --help)\n"
    f"       {PROG} --list-plans | --help | --version"
)
_HINT = f"usage: {_GROUP_USAGE}\n       COMMAND: {', '.join(COMMANDS)}\n"
_EXIT_CODES = "Exit codes: " + ", ".join(f"{int(code)} {code.meaning}" for code in ExitCode) + "."
_SELECTION_RULE = (
    "Nothing runs without a selection: --all runs the credential-free offline suite;\n"
    "paid plans also need --confirm-paid."
)
_SUITE_FLAGS_NOTE = (
    "A suite may add flags of its own (its offline modes and plan shorthands): they are\n"
    f"listed by {PROG} --suite MODULE:ATTR --help and by --list-plans. Without --suite the\n"
    "suite is the one [tool.vitrine] suite in pyproject.toml names, else the one installed."
)
# Where a mode's switch lives in the namespace: apart from vitrine's own options, whatever
# the suite calls its modes and shorthands.
_MODE_DEST = "mode:"
_ALIAS_DEST = "alias:"
# The other commands live in their own modules, imported only when named, each with a
# ``main(argv) -> int``; a command whose module is absent is refused, not guessed at.
SUBCOMMANDS: dict[str, str] = {
    "board": "vitrine._board.command",
    "ci": "vitrine._ci.command",
    "rag": "vitrine.rag._command",
    "redteam": "vitrine.redteam._command",
    "runs": "vitrine.store._command",
    "serve": "vitrine.service._command",
    "mutants": "vitrine.mutants._command",
    "power": "vitrine._power_command",
}


def _group_description() -> str:
    width = max(len(name) for name in COMMANDS)
    commands = "\n".join(f"  {name:<{width}}  {line}" for name, line in COMMANDS.items())
    flag_width = max(len(flag) for flag in ALIASES)
    aliases = "\n".join(
        f"  {PROG} {flag:<{flag_width}}  is  {PROG} {command}" for flag, command in ALIASES.items()
    )
    return (
        f"Evaluate LLM agents and workflows.\n{_EXIT_CODES}\n\n"
        f"commands ({PROG} COMMAND --help for each):\n{commands}\n\n"
        f"aliases (the protocol's flags, routed to the same code):\n{aliases}\n\n"
        f"The options below are those of {PROG} run, accepted here without the word run.\n"
        + _SELECTION_RULE
        + "\n"
        + _SUITE_FLAGS_NOTE
    )


def build_parser(command: str | None = None, suite: Suite | None = None) -> argparse.ArgumentParser:
    """The parser of a plan command (``run``, ``self-test``, ``controls``), or of the group.

    With no ``command`` it is the group's own parser: the same options (the protocol's flags),
    under a description that lists the commands and the aliases. With a ``suite`` it also
    offers the flags that suite declares (its own modes and shorthands).
    """
    from vitrine import __version__

    if command is None:
        prog, usage, description = PROG, _GROUP_USAGE, _group_description()
    else:
        prog, usage = f"{PROG} {command}", None
        description = (
            f"{COMMANDS[command][0].upper()}{COMMANDS[command][1:]}.\n{_EXIT_CODES}\n"
            + _SELECTION_RULE
            + "\n"
            + _SUITE_FLAGS_NOTE
        )
    parser = RefusingParser(
        prog=prog,
        usage=usage,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # a truncated flag must not silently select a paid option
    )
    mode = PLAN_COMMANDS.get(command or "run")
    if mode is not None:
        parser.set_defaults(**{_MODE_DEST + mode: True})
    select = parser.add_argument_group("selection")
    select.add_argument(
        "--all", action="store_true", help="run the strict offline suite plan (credential-free)"
    )
    select.add_argument("--eval-plan", metavar="NAME", help="run the named plan (see --list-plans)")
    if suite is not None:
        _add_aliases(select, suite)
    select.add_argument(
        "--scenario", metavar="ID", help="one scenario id, or 'all' (the default for live plans)"
    )
    select.add_argument(
        "--repetitions", metavar="N", help="repetitions per arm, within the plan's rule"
    )
    select.add_argument(
        "--list-plans", action="store_true", help="list the suite's plans and scenarios"
    )
    add_suite_option(select)

    offline = parser.add_argument_group("offline modes and reports")
    _add_modes(offline, suite)
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
    live.add_argument(
        "--max-calls", metavar="N", help="spend ceiling: at most N model calls in the session"
    )
    live.add_argument(
        "--max-tokens",
        metavar="N",
        help="spend ceiling: no new call once the provider-reported tokens reach N",
    )
    live.add_argument(
        "--max-cost",
        metavar="USD",
        help="spend ceiling: no new call once the cost reaches USD (needs --price-table)",
    )
    live.add_argument(
        "--price-table",
        metavar="FILE",
        type=Path,
        help='JSON {"model": {"input_per_million": USD, "output_per_million": USD}}',
    )

    live.add_argument(
        "--fdr",
        action="store_true",
        help="also adjust the comparisons' p-values by Benjamini-Hochberg (Holm's always shown)",
    )
    live.add_argument(
        "--sequential",
        action="store_true",
        help="run a comparing plan scenario by scenario and stop when its sequential sign test "
        "stops (the scenarios after it are not run: an incomplete session)",
    )

    traces = parser.add_argument_group("traces (OpenTelemetry; off unless a destination is set)")
    add_trace_options(traces)

    execution = parser.add_argument_group("where trials run")
    execution.add_argument(
        "--executor",
        choices=("local", "ray"),
        help="run trials in this process (local, the default) or on a Ray cluster (ray); "
        "either way this process alone writes the runs (see docs/ray.md)",
    )
    execution.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="the Ray cluster for --executor ray (default: start a local one)",
    )

    add_store_option(parser)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    return parser


def _add_aliases(group: argparse._ArgumentGroup, suite: Suite) -> None:
    for flag, target in suite.aliases.items():
        paid = "; still requires --confirm-paid" if suite.plans[target].paid else ""
        add_suite_flag(
            group,
            suite.name,
            flag,
            action="store_true",
            dest=_ALIAS_DEST + flag,
            help=f"shorthand for --eval-plan {target} (suite {suite.name}{paid})",
        )


def _add_modes(group: argparse._ArgumentGroup, suite: Suite | None) -> None:
    """The protocol's two mode flags, with the suite's own modes between them."""
    own = {mode.name: mode for mode in suite.own_modes()} if suite is not None else {}
    suite_name = suite.name if suite is not None else ""
    for name in canonical_modes(own):
        dest = _MODE_DEST + name
        if name in PROTOCOL_MODES:
            help_text = PROTOCOL_MODES[name].help
            group.add_argument(f"--{name}", action="store_true", dest=dest, help=help_text)
        else:
            help_text = f"{own[name].help} (suite {suite_name})"
            add_suite_flag(
                group, suite_name, f"--{name}", action="store_true", dest=dest, help=help_text
            )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code instead of exiting."""
    if argv is None:
        # Run as a program: `vitrine redteam status | head` must end quietly with the
        # command's own exit code when the reader closes the pipe, not with a traceback.
        from vitrine._pipes import console_safe_streams, pipe_safe_stdout

        console_safe_streams()
        pipe_safe_stdout()
        _tune_collector()
        code = _main(argv)
        # The command is done and its output flushed; what remains is the interpreter's exit,
        # whose final cycle collection over every module, class and validator took most of a
        # tenth of a second after an offline suite. Frozen objects are skipped by it; the
        # memory is still released as the process ends, and what had to reach the disk was
        # closed and synced by the command itself.
        gc.freeze()
        return code
    return _main(argv)


def _tune_collector() -> None:
    """Collect cycles less often in a command's own process.

    A command allocates mostly long-lived objects (modules, classes, validators, the
    catalogue) that reference counting never frees and the cyclic collector keeps re-scanning:
    at the default 700 allocations per young collection that was about a twentieth of an
    offline suite's wall time. Garbage without cycles is still freed at once; only the
    scans for cycles become rarer. A host program calling :func:`main` keeps its own settings.
    """
    young, middle, old = gc.get_threshold()
    if young:  # 0 means the host disabled automatic collection: leave it so
        gc.set_threshold(max(young, 10_000), middle, old)


def _main(argv: Sequence[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    unusable = environment_problem()  # checked once, before any command reads or calls anything
    if unusable is not None:
        _error(unusable)
        return ExitCode.INVALID_ARGUMENTS
    if not args and sys.stdin.isatty() and sys.stdout.isatty():
        # A person at a terminal gets the plan selector; it runs nothing without answers.
        from vitrine._selector import interactive_main

        return interactive_main(None)
    if not args:
        # Running something by default would make a typo in a script start real work.
        sys.stderr.write(_HINT)
        _error("nothing to run: choose --all (the offline suite) or --eval-plan NAME")
        return ExitCode.INVALID_ARGUMENTS
    head = args[0]
    if head in PLAN_COMMANDS:
        return _plan_command(head, args[1:])
    if head in SUBCOMMANDS:
        return _subcommand(head, args[1:])
    if not head.startswith("-"):
        sys.stderr.write(_HINT)
        _error(f"unknown command {head[:40]!r}: choose one of {', '.join(COMMANDS)}")
        return ExitCode.INVALID_ARGUMENTS
    # The protocol's flags without a command: `vitrine --all` is `vitrine run --all`.
    return _plan_command(None, args)


def _plan_command(command: str | None, args: list[str]) -> int:
    """``vitrine run | self-test | controls ARGS``, or the group's own flags (``command`` None)."""
    if command == "run" and not args:
        sys.stderr.write(_HINT)
        _error("nothing to run: choose --all (the offline suite) or --eval-plan NAME")
        return ExitCode.INVALID_ARGUMENTS
    # --help lists a suite's own flags only for a suite named by --suite: finding one through
    # the installed packages would cost more than the help itself.
    named = named_suite(args) if asks_for_help(args) else None
    try:
        parser = build_parser(command, None if named is None else load_suite_or_refuse(named))
    except CommandRefusal as exc:
        _error(str(exc))
        return int(exc.code)
    try:
        # vitrine's own options first: a malformed one is refused before a suite is looked for.
        first, extras = parser.parse_known_args(args)
    except CommandRefusal as exc:
        sys.stderr.write(parser.format_usage())
        _error(str(exc))
        return ExitCode.INVALID_ARGUMENTS
    except SystemExit as exc:  # --help and --version print and exit 0 through argparse
        return exc.code if isinstance(exc.code, int) else ExitCode.INVALID_ARGUMENTS

    if (
        not extras
        and not _given_options(parser, first, ignore={"suite"})
        and first.suite
        and sys.stdin.isatty()
        and sys.stdout.isatty()
    ):
        # `vitrine --suite X` alone at a terminal: the selector over that suite.
        from vitrine._selector import interactive_main

        return interactive_main(first.suite)
    try:
        # An empty --suite is a mistake to name, not a request for the project's suite.
        suite: Suite = load_suite_or_refuse(first.suite)
        parser = build_parser(command, suite)
    except CommandRefusal as exc:
        _error(str(exc))
        return int(exc.code)
    try:
        namespace = parse_with_suite(parser, args, suite.name, suite.own_flags())
    except CommandRefusal as exc:
        sys.stderr.write(parser.format_usage())
        _error(str(exc))
        return ExitCode.INVALID_ARGUMENTS
    if namespace.list_plans:
        others = _given_options(parser, namespace, ignore={"list_plans", "suite"})
        if others:
            _error(f"--list-plans runs nothing, so it takes only --suite; got {', '.join(others)}")
            return ExitCode.INVALID_ARGUMENTS
    from vitrine._bench.executors import executor_refusal

    refusal = executor_refusal(namespace.executor, namespace.ray_address)
    if refusal is not None:
        _error(refusal)
        return ExitCode.INVALID_ARGUMENTS

    from vitrine._plans.base import UsageError
    from vitrine._plans.validation import validate

    if namespace.list_plans:
        _list_plans(suite, sys.stdout)
        return ExitCode.PASS
    try:
        plan, request = validate(suite, _options(namespace, suite), console=True)
    except UsageError as exc:
        _error(str(exc))
        return ExitCode.INVALID_ARGUMENTS
    return _traced_dispatch(
        plan,
        request,
        trace_to=namespace.trace_to,
        trace_content=namespace.trace_content,
        executor=namespace.executor,
        ray_address=namespace.ray_address,
    )


def _traced_dispatch(
    plan: Plan,
    request: PlanRequest,
    *,
    trace_to: str | None = None,
    trace_content: bool = False,
    executor: str | None = None,
    ray_address: str | None = None,
) -> int:
    """Start tracing (a no-op unless a destination is set), run the plan, flush the spans."""
    try:
        session = traced_session(plan.name, trace_to=trace_to, trace_content=trace_content)
    except CommandRefusal as exc:
        return report(PROG, exc)
    with session:
        return _dispatch(plan, request, executor=executor, ray_address=ray_address)


def _subcommand(name: str, argv: list[str]) -> int:
    import importlib

    module_name = SUBCOMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            _error(f"the {name!r} subcommand is not part of this version of vitrine")
            return ExitCode.INVALID_ARGUMENTS
        _error(f"vitrine {name} {missing_extra_hint(exc)}")
        return ExitCode.INFRASTRUCTURE
    try:
        code = module.main(argv)
    except ModuleNotFoundError as exc:
        _error(f"vitrine {name} {missing_extra_hint(exc)}")
        return ExitCode.INFRASTRUCTURE
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
    "aiohttp": "live",
    "llama_cpp": "local",
}


def missing_extra_hint(exc: ModuleNotFoundError) -> str:
    """The refusal sentence for a missing module: the vitrine extra that installs it, or, for a
    module that is not vitrine's (a suite's own dependency), what the exception says."""
    top = (exc.name or "").partition(".")[0]
    extra = _EXTRA_FOR_MODULE.get(top)
    if extra is None:
        from vitrine._redact import describe_exception

        return f"cannot run: {describe_exception(exc)}"
    return (
        f"needs the {extra!r} extra ({top} is not installed): "
        f"pip install 'vitrine[{extra}]' (in a checkout: pip install -e '.[{extra}]')"
    )


def _options(namespace: argparse.Namespace, suite: Suite) -> PlanOptions:
    from vitrine._plans.validation import PlanOptions

    switched = vars(namespace)
    return PlanOptions(
        all=namespace.all,
        eval_plan=namespace.eval_plan,
        aliases=tuple(flag for flag in suite.aliases if switched[_ALIAS_DEST + flag]),
        scenario=namespace.scenario,
        repetitions=namespace.repetitions,
        confirm_paid=namespace.confirm_paid,
        modes=tuple(
            name
            for name in canonical_modes(m.name for m in suite.own_modes())
            if switched[_MODE_DEST + name]
        ),
        provider=namespace.provider,
        local_model=namespace.local_model,
        model=namespace.model,
        judge_provider=namespace.judge_provider,
        judge_model=namespace.judge_model,
        json_report=namespace.json_report,
        html_report=namespace.html_report,
        output=namespace.output,
        max_calls=namespace.max_calls,
        max_tokens=namespace.max_tokens,
        max_cost=namespace.max_cost,
        price_table=namespace.price_table,
        fdr=namespace.fdr,
        sequential=namespace.sequential,
    )


def _dispatch(
    plan: Plan, request: PlanRequest, *, executor: str | None = None, ray_address: str | None = None
) -> int:
    import asyncio

    from vitrine._bench.executors import ExecutorError, ExecutorUnavailableError, open_executor
    from vitrine._plans.base import PlanOutcome, UsageError
    from vitrine._usercode import describe_user_exception
    from vitrine.adapters._cache import paid_plan_scope

    try:
        # Every run the plan starts uses this executor; the runs are written here either way.
        with (
            _terminate_as_interrupt(),
            open_executor(executor or "local", ray_address=ray_address),
            # A model-call cache inside a paid plan answers only when it was told it may.
            paid_plan_scope(plan.name if plan.paid else None),
        ):
            # Typed as object: a user plan may break its contract, and that must not crash here.
            outcome: object = asyncio.run(plan.run(request))
    except ExecutorUnavailableError as exc:  # no cluster at the address, or hosts not started
        _error(str(exc))
        return ExitCode.INFRASTRUCTURE
    except ExecutorError as exc:  # e.g. a subject that cannot be pickled for Ray workers
        _error(str(exc))
        return ExitCode.INVALID_ARGUMENTS
    except UsageError as exc:  # a plan may refuse what only it can check (e.g. a missing file)
        _error(str(exc))
        return ExitCode.INVALID_ARGUMENTS
    except (KeyboardInterrupt, asyncio.CancelledError):
        # Runs already started are sealed by the runner; what is on disk is incomplete, which
        # is an infrastructure class, never a pass or a measured result.
        _error(f"{plan.name} interrupted: the session is incomplete and was not scored")
        return ExitCode.INFRASTRUCTURE
    except SystemExit as exc:
        # A plan that exits the process has not reported an outcome, whatever code it chose:
        # exit 0 from inside a plan would otherwise read as a pass nobody measured.
        _error(
            f"{plan.name} tried to exit the process (code {exc.code!r}) instead of returning "
            "an outcome: nothing it did was scored"
        )
        return ExitCode.INFRASTRUCTURE
    except Exception as exc:
        if isinstance(exc, ModuleNotFoundError):
            _error(f"{plan.name} {missing_extra_hint(exc)}")
            return ExitCode.INFRASTRUCTURE
        if os.environ.get("VITRINE_DEBUG") == "1":
            import traceback

            traceback.print_exc(file=sys.stderr)
        _error(f"{plan.name} failed unexpectedly: {describe_user_exception(exc)}")
        return ExitCode.INFRASTRUCTURE
    except BaseException as exc:  # GeneratorExit, or a plan's own BaseException
        _error(
            f"{plan.name} ended with {describe_user_exception(exc)} instead of returning an "
            "outcome: nothing it did was scored"
        )
        return ExitCode.INFRASTRUCTURE
    if not isinstance(outcome, PlanOutcome):
        _error(f"{plan.name} returned {type(outcome).__name__}, not a PlanOutcome")
        return ExitCode.INFRASTRUCTURE
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
        terminal = getattr(plan, "terminal", None)  # a Plan of the user's own may not say
        if terminal is not None and terminal.value != "absence-not-measured":
            tags.append(terminal.description)
        out.write(f"  {name:<{width}}  {'; '.join(tags)}\n")
        if plan.description:
            out.write(f"  {'':<{width}}  {plan.description}\n")
        if not plan.available:
            out.write(f"  {'':<{width}}  unavailable: {plan.unavailable_reason}\n")
    _list_flags(suite, out)
    if not suite.scenarios:
        return
    out.write("scenarios:\n")
    try:
        titles = {key: info.title for key, info in suite.scenarios.items()}
    except Exception as exc:
        # Listing must still work when the registry cannot be read; say so instead of hiding it.
        from vitrine._redact import describe_exception

        titles = {}
        out.write(f"  (details unavailable: {describe_exception(exc)})\n")
    id_width = max(len(key) for key in suite.scenarios)
    for key in suite.scenarios:
        title = titles.get(key, "")
        out.write(f"  {key:<{id_width}}  {title}".rstrip() + "\n")


def _list_flags(suite: Suite, out: TextIO) -> None:
    """The modes the suite declares and its shorthands, each with the flag that selects it."""
    rows = [(mode.flag, mode.help) for mode in suite.declared_modes]
    shorthands = [(flag, f"--eval-plan {plan}") for flag, plan in suite.aliases.items()]
    for title, listed in (("modes:", rows), ("shorthands:", shorthands)):
        if not listed:
            continue
        out.write(f"{title}\n")
        width = max(len(flag) for flag, _ in listed)
        for flag, line in listed:
            out.write(f"  {flag:<{width}}  {line}\n")


def _given_options(
    parser: argparse.ArgumentParser, namespace: argparse.Namespace, *, ignore: set[str]
) -> list[str]:
    """The flags whose values are set (neither None nor False), as the operator spells them."""
    given = []
    for action in parser._actions:
        if not action.option_strings or action.dest in ignore:
            continue
        value = getattr(namespace, action.dest, None)
        if value is not None and value is not False:
            given.append(action.option_strings[0])
    return given


def _error(message: str) -> None:
    print_error(PROG, message)


def dispatch_plan(plan: Plan, request: PlanRequest) -> int:
    """Run a validated plan request exactly as the flags would (traced when the environment
    names a destination), and return its exit code."""
    return _traced_dispatch(plan, request)


def report_error(message: str) -> None:
    """Print ``vitrine: error: message`` on stderr, as every refusal does."""
    _error(message)

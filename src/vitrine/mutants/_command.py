"""``vitrine mutants``: run the suite's mutant catalogue and write the kill matrix.

::

    vitrine mutants [--suite MODULE:ATTR] [--generate] [--only ID[,ID...]] [--jobs N]
                    [--timeout S] [--output DIR] [--json-report PATH] [--html-report PATH]
    vitrine mutants --list [--generate]

The healthy subject runs first and must pass; then each mutant runs the catalogue's plan in a
process of its own; ``--generate`` adds the mutants generated at the suite's declared seams.
Exit codes: 0 every must-kill mutant was killed and the score meets the
catalogue's minimum, 1 a must-kill mutant survived or the score is short, 2 invalid arguments
(including a suite without a "mutants" component), 3 a mutant could not be measured, 4
infrastructure (a red healthy baseline, an errored or timed-out mutant, a broken catalogue).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vitrine._commandline import (
    INFRASTRUCTURE,
    CommandRefusal,
    RefusingParser,
    add_store_option,
    add_suite_option,
    load_suite_or_refuse,
    report,
    run_command,
)
from vitrine._vocabulary import ExitCode

if TYPE_CHECKING:
    from vitrine.mutants._catalogue import SuiteMutants

__all__ = ["build_parser", "main"]

PROG = "vitrine mutants"


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _ids(text: str) -> list[str]:
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if not ids:
        raise argparse.ArgumentTypeError("expected one or more mutant ids separated by commas")
    return ids


def build_parser() -> argparse.ArgumentParser:
    parser = RefusingParser(
        prog=PROG,
        description="Run the suite's mutant catalogue: the healthy subject, then each mutant "
        "in a process of its own, and write the kill matrix.",
        epilog="Exit codes: 0 every must-kill mutant killed and the score meets the minimum, "
        "1 a must-kill mutant survived or the score is short, 2 invalid arguments, 3 a mutant "
        "not measured, 4 infrastructure (red healthy baseline, errored or timed-out mutant).",
        allow_abbrev=False,
    )
    add_suite_option(parser, component="mutants")
    parser.add_argument(
        "--generate",
        action="store_true",
        help="also generate mutants at the suite's declared seams (model, tools, prompt rules, "
        "conversation, thresholds) and report what each seam's checks see",
    )
    parser.add_argument(
        "--only",
        metavar="ID[,ID...]",
        type=_ids,
        help="run only these mutants (ids or patterns such as 'seam.tool.*')",
    )
    parser.add_argument("--jobs", metavar="N", type=_count, help="mutants run at once (default 2)")
    parser.add_argument(
        "--timeout",
        metavar="S",
        type=_seconds,
        help="seconds per mutant before it is recorded as errored (default 300)",
    )
    add_store_option(parser)
    parser.add_argument(
        "--json-report", metavar="PATH", type=Path, help="also write matrix.json here"
    )
    parser.add_argument(
        "--html-report", metavar="PATH", type=Path, help="also write matrix.html here"
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="print the mutants (with --generate, the generated ones too) and exit without running",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    """Run ``vitrine mutants``; return the exit code."""
    try:
        return run_command(PROG, build_parser(), argv, _run)
    except KeyboardInterrupt:
        return report(
            PROG,
            CommandRefusal(
                "interrupted: the mutants were not all run and no matrix was written",
                INFRASTRUCTURE,
            ),
        )


def _run(args: argparse.Namespace) -> int:
    from vitrine._plans.base import UsageError
    from vitrine._progress_bar import StepProgress
    from vitrine._suite import SuiteLoadError
    from vitrine.mutants._catalogue import CatalogueImportError, suite_mutants
    from vitrine.mutants._runner import DEFAULT_JOBS, DEFAULT_TIMEOUT_S, MutantRunError, run_mutants
    from vitrine.mutants._writer import refuse_directory
    from vitrine.store._naming import blocking_file

    spec = args.suite
    try:
        if args.list:
            given = _run_options(args)
            if given:
                raise UsageError(
                    f"--list runs nothing, so it takes only --suite and --generate; got "
                    f"{', '.join(given)}"
                )
            _print_mutants(suite_mutants(load_suite_or_refuse(spec), generate=args.generate))
            return ExitCode.PASS
        if args.json_report is not None and args.json_report == args.html_report:
            raise UsageError(
                f"--json-report and --html-report both name {args.json_report}: one would "
                "overwrite the other"
            )
        refuse_directory(args.json_report, "--json-report")
        refuse_directory(args.html_report, "--html-report")
        blocker = None if args.output is None else blocking_file(args.output)
        if blocker is not None:
            raise UsageError(f"--output {args.output} is not a directory ({blocker} is a file)")
        matrix = asyncio.run(
            run_mutants(
                spec,
                only=args.only,
                jobs=args.jobs or DEFAULT_JOBS,
                timeout_s=args.timeout or DEFAULT_TIMEOUT_S,
                output=args.output,
                json_report=args.json_report,
                html_report=args.html_report,
                progress=StepProgress.on(sys.stderr, "mutants"),
                generate=args.generate,
            )
        )
    except SuiteLoadError as exc:  # run_mutants loads the suite itself
        raise CommandRefusal(str(exc), exc.exit_code) from exc
    except UsageError as exc:
        raise CommandRefusal(str(exc)) from exc
    except (MutantRunError, CatalogueImportError) as exc:
        raise CommandRefusal(str(exc), INFRASTRUCTURE) from exc
    except OSError as exc:
        from vitrine._redact import describe_exception

        raise CommandRefusal(
            f"the store could not be written: {describe_exception(exc)}", INFRASTRUCTURE
        ) from exc
    from rich.console import Console

    from vitrine.mutants._console import render_matrix_console

    render_matrix_console(
        matrix, Console(file=sys.stdout, width=None if sys.stdout.isatty() else 120)
    )
    return matrix.exit_code


def _run_options(args: argparse.Namespace) -> list[str]:
    names = ("only", "jobs", "timeout", "output", "json_report", "html_report")
    return ["--" + name.replace("_", "-") for name in names if getattr(args, name) is not None]


def _print_mutants(declared: SuiteMutants) -> None:
    out = sys.stdout
    catalogue = declared.catalogue
    if catalogue is not None:
        plan = catalogue.plan or "the suite's default plan"
        out.write(
            f"{len(catalogue)} mutants, plan {plan}, minimum score "
            f"{100 * catalogue.minimum_score:g}%"
            + (f": {catalogue.description}" if catalogue.description else "")
            + "\n"
        )
    generated = [m for m in declared.mutants if m.generated]
    if declared.seams is not None:
        kinds = ", ".join(
            f"{kind} {sum(1 for m in generated if m.seam and m.seam.kind == kind)}"
            for kind in declared.seams.kinds
        )
        out.write(f"{len(generated)} generated mutants at the declared seams ({kinds})\n")
    width = max(len(mutant.id) for mutant in declared.mutants)
    for mutant in declared.mutants:
        flags = "" if mutant.must_kill else " (may survive)"
        out.write(f"  {mutant.id:<{width}}  {mutant.component}{flags}: {mutant.description}\n")
        if mutant.expected_killers:
            out.write(f"  {'':<{width}}  expected killers: {', '.join(mutant.expected_killers)}\n")
        if mutant.tests:
            out.write(f"  {'':<{width}}  tests: {' '.join(mutant.tests)}\n")
    out.flush()
